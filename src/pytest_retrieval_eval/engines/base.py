"""What an engine is to the plugin: a name and ``retrieve(query, k) -> [doc_id, ...]``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Protocol, Sequence, runtime_checkable

from .._defaults import DEPTH
from ..errors import RetrievalEvalError

#: How deep an engine is asked by default: enough for recall@100 and every table column.
DEFAULT_DEPTH = DEPTH


@runtime_checkable
class Engine(Protocol):
    """Anything with a ``name`` and a ``retrieve`` method is an engine.

    ``retrieve`` returns document ids, best first; the plugin keeps the first ``k`` and drops
    repeats. It may return passages instead (``types.Passage``: doc id and text, best first): they
    count as their documents, and are scored at the evidence level too. The optional parts an engine may add are declared below (``Prepares``,
    ``Describes``, ``Concurrent``, ``Staged``, ``ExactSearches``); ``AsyncEngine`` is the same contract with ``async def retrieve``.
    """

    name: str

    def retrieve(self, query: str, k: int) -> Sequence[str]: ...


@runtime_checkable
class AsyncEngine(Protocol):
    """An engine whose ``retrieve`` is a coroutine: the plugin asks it on one event loop,
    ``concurrency`` questions in flight."""

    name: str

    async def retrieve(self, query: str, k: int) -> Sequence[str]: ...


@runtime_checkable
class Converses(Protocol):
    """Optional: ``retrieve_conversation(turns, k)`` answers a turn of a conversation given the
    turns so far (``types.Turn``: role and text, the user's current turn last), as ``retrieve``
    answers a question; an engine without it is given the last turn's text alone, and the report
    says so. A method that also takes a ``turn`` keyword is told which turn it answers
    (``TurnContext``): a lookup by the turn's id needs no matching of its text."""

    def retrieve_conversation(self, turns: Sequence[Any], k: int) -> Sequence[str]: ...


@dataclass(frozen=True)
class TurnContext:
    """Which turn a conversation engine answers, handed to ``retrieve_conversation(turns, k,
    turn=...)`` (and to a ``rewritten`` rewriter) where it takes ``turn``: the turn's query id
    (``conversation#turn``), its conversation, its 1-based position among the user's turns, and
    the person's standalone rewrite the labels carry (None: none). ``rewrite`` is a label: the
    oracle (``oracle_rewrite``) searches it; a team's own rewriter reading it would be scored on
    the answer key. ``record_rewrite(text)`` says what the engine searched in place of the turn:
    the run keeps it with the turn's result (results.json) and scores it against the human
    rewrite where there is one."""

    query_id: str
    conversation: str
    turn: int
    rewrite: str | None = None
    #: where ``record_rewrite`` puts the text (the evaluation's, per call); None: nowhere
    recorder: Callable[[str], None] | None = field(default=None, compare=False, repr=False)

    def record_rewrite(self, text: str) -> None:
        """Say what the engine searched for this turn (its rewrite of it)."""
        if not isinstance(text, str):
            raise TypeError(f"record_rewrite() takes the text searched, got {type(text).__name__}")
        if self.recorder is not None:
            self.recorder(text)


def takes_turn(method: Any) -> bool:
    """Whether ``method`` takes a ``turn`` argument by keyword (it is then told which turn it answers)."""
    import inspect

    try:
        found = inspect.signature(method).parameters.get("turn")
    except (TypeError, ValueError):  # a builtin without a signature: it takes none
        return False
    return found is not None and found.kind in (found.POSITIONAL_OR_KEYWORD, found.KEYWORD_ONLY)


#: ``engine_info["conversation"]`` when the labeled set has conversations: what the engine was given
#: (the turns; the last turn, having no ``retrieve_conversation``; the last turn, by the
#: ``last_turn`` baseline, which takes the turns and rewrites nothing; the person's rewrite of the
#: turn, by ``oracle_rewrite``, the oracle the others' gap is measured to)
GIVEN_TURNS, GIVEN_LAST_TURN, GIVEN_LAST_TURN_BASELINE = "turns", "last turn", "last turn (last_turn)"
GIVEN_HUMAN_REWRITE = "human rewrite (oracle_rewrite)"


def converses(engine: Any) -> bool:
    """Whether ``engine`` takes the conversation (``Converses``)."""
    return callable(getattr(engine, "retrieve_conversation", None))


@runtime_checkable
class Prepares(Protocol):
    """Optional: ``prepare(questions)`` is called once with every question before the first
    ``retrieve`` (e.g. to embed them in one batch)."""

    def prepare(self, questions: Sequence[str]) -> None: ...


@runtime_checkable
class PreparesTurns(Protocol):
    """Optional, for a conversation engine: ``prepare_turns(asks)`` is called in place of
    ``prepare`` with what each call will be given: per question, the turns (a single question as
    one user turn) and its ``TurnContext`` (None for a single question), so that what it embeds
    in one batch is what it will search (the baselines' joined turns, the oracle's rewrites), not
    the last turns."""

    def prepare_turns(self, asks: Sequence[tuple[Sequence[Any], "TurnContext | None"]]) -> None: ...


@runtime_checkable
class Describes(Protocol):
    """Optional: ``describe()`` is the engine's configuration, as reports record it."""

    def describe(self) -> Mapping[str, Any]: ...


@runtime_checkable
class Concurrent(Protocol):
    """Optional: ``concurrency`` is how many questions the engine takes at a time (None: the
    session's setting); it wins over ``--retrieval-concurrency``."""

    concurrency: int | None


@runtime_checkable
class ExactSearches(Protocol):
    """Optional: ``exact_search(query, k)`` answers as ``retrieve`` does with every approximate
    index left unused (an exact scan over the same vectors and filters). With
    ``--retrieval-exact-check`` every question is asked again through it, and the report gives the
    approximate answer's recall@k against it and names the misses the index caused."""

    def exact_search(self, query: str, k: int) -> Sequence[str]: ...


def exact_search_of(engine: Any) -> Callable[[str, int], Any] | None:
    """The engine's ``exact_search`` (``ExactSearches``), None where it has none or is async."""
    found = getattr(engine, "exact_search", None)
    return found if callable(found) and not is_async(engine) else None


@dataclass(frozen=True)
class Stages:
    """What ``retrieve_stages`` returns: the answer (``ranked``, as ``retrieve`` would return
    it) and what each stage held on the way, best first: ``legs``, each retriever's candidates
    (asked side by side), then ``steps`` in order, each a cut of what came before (fusion, a
    rerank window, the rerank). Ids may be chunk ids (``doc:3``); they are folded as answers are.
    ``seconds``: the wall time of any stage the engine timed (stage name -> seconds), which the
    latency figures show per stage (``--retrieval-latency``)."""

    ranked: Sequence[Any]
    legs: Mapping[str, Sequence[Any]] = field(default_factory=dict)
    steps: Mapping[str, Sequence[Any]] = field(default_factory=dict)
    seconds: Mapping[str, float] = field(default_factory=dict)

    @classmethod
    def of(cls, value: Any) -> "Stages":
        """A ``Stages``, or the same as a mapping with ``ranked``, ``legs`` and ``steps``."""
        if isinstance(value, Mapping) and "ranked" in value:
            unknown = sorted(set(value) - {"ranked", "legs", "steps", "seconds"})
            if unknown:
                raise TypeError(f"retrieve_stages() returned unknown key(s) {', '.join(map(repr, unknown))}; "
                                "expected 'ranked', 'legs', 'steps' and 'seconds'")
            value = cls(value["ranked"], value.get("legs") or {}, value.get("steps") or {}, value.get("seconds") or {})
        if not isinstance(value, Stages):
            raise TypeError(f"retrieve_stages() returned {type(value).__name__}; expected Stages(ranked, legs, steps) "
                            "or a mapping with 'ranked', 'legs' and 'steps'")
        for part in ("legs", "steps", "seconds"):
            if not isinstance(getattr(value, part), Mapping):
                what = "its seconds" if part == "seconds" else "its doc ids"
                raise TypeError(f"retrieve_stages(): {part} must map each stage's name to {what}, got "
                                f"{type(getattr(value, part)).__name__}")
        bad = next((n for n, s in value.seconds.items() if isinstance(s, bool) or not isinstance(s, (int, float))
                    or not s >= 0), None)
        if bad is not None:
            raise TypeError(f"retrieve_stages(): seconds of stage {bad!r} must be a number >= 0, "
                            f"got {value.seconds[bad]!r:.40}")
        return value


@runtime_checkable
class Staged(Protocol):
    """Optional: ``retrieve_stages(query, k)`` answers as ``retrieve`` does and says what each
    stage held (``Stages``); the plugin calls it instead of ``retrieve``, so a miss is
    attributed to the stage that lost the answer ("cut by fusion", "never a candidate")."""

    def retrieve_stages(self, query: str, k: int) -> Stages: ...


def answer_of(engine: Engine) -> Callable[[str, int], Any]:
    """What the evaluation calls: ``retrieve_stages`` where the engine tells its stages, else
    ``retrieve_passages`` where it keeps the passages an adapter's retriever returned (``Passage``:
    read at the evidence level), else ``retrieve``."""
    if is_staged(engine):
        return engine.retrieve_stages  # type: ignore[attr-defined]
    return getattr(engine, "retrieve_passages", None) or engine.retrieve


def is_staged(engine: Engine) -> bool:
    return callable(getattr(engine, "retrieve_stages", None)) and not is_async(engine)


def is_async(engine: Engine) -> bool:
    """Whether ``engine`` is an ``AsyncEngine`` (its ``retrieve`` is a coroutine function)."""
    import inspect

    return inspect.iscoroutinefunction(getattr(engine, "retrieve", None))


def concurrency_of(engine: Engine, default: int) -> int:
    """Questions asked at a time: the engine's own ``concurrency`` where it declares one."""
    own = engine.concurrency if isinstance(engine, Concurrent) else None
    return max(1, int(own or default))


#: Builds an engine on first use; receives the session's fixture request so it can ask for
#: fixtures (``request.getfixturevalue("retrieval_corpus")``).
EngineFactory = Callable[[Any], Engine]


def describe(engine: Engine) -> Mapping[str, Any]:
    """The engine's configuration as reports and result files record it: credentials masked."""
    from .._secrets import redact_values

    if isinstance(engine, Describes):
        return redact_values(dict(engine.describe()))
    return {"class": type(engine).__qualname__}


def nearest(wanted: Sequence[str], names: Sequence[str]) -> str:
    """``; did you mean NAME?`` for the registered names nearest those ``wanted`` (case aside), or ''."""
    import difflib

    lowered = {n.lower(): n for n in names}
    found = [lowered[m] for w in wanted for m in difflib.get_close_matches(w.lower(), list(lowered), n=2, cutoff=0.6)]
    return f"; did you mean {' or '.join(dict.fromkeys(found))}?" if found else ""


class EngineRegistry:
    """Engine names to factories, filled through the ``pytest_retrieval_engines`` hook."""

    def __init__(self) -> None:
        self._factories: dict[str, EngineFactory] = {}
        self._unavailable: dict[str, str] = {}
        self._builtin: set[str] = set()

    def unavailable(self, name: str, reason: str, *, builtin: bool = False) -> None:
        """Declare an engine that cannot run here (a missing extra), and why: it is left out of
        the parametrization, and asking for it by name says why instead of 'unknown engine'."""
        self._unavailable[name] = reason
        if builtin:
            self._builtin.add(name)

    def register(self, name: str, factory: EngineFactory, *, builtin: bool = False) -> None:
        """``builtin``: one of the plugin's own engines, which run only when named or when the
        project registers no engine of its own."""
        if not isinstance(name, str) or not name or any(c.isspace() or c in ":,[]" for c in name):
            raise RetrievalEvalError(f"engine name {name!r} must be non-empty, without spaces, ':', ',' or brackets")
        if not callable(factory):
            raise RetrievalEvalError(f"engine '{name}': factory must be callable")
        if name in self._factories and self._factories[name] is not factory:
            raise RetrievalEvalError(f"engine '{name}' is registered twice")
        self._factories[name] = factory
        if builtin:
            self._builtin.add(name)

    def names(self) -> list[str]:
        return list(self._factories)

    def own_names(self) -> list[str]:
        """The engines the project registered (not the plugin's built-ins)."""
        return [n for n in self._factories if n not in self._builtin]

    def select(self, wanted: Sequence[str] = ()) -> list[str]:
        """The engines to evaluate: those named (``--retrieval-engine`` / ``retrieval_engines``);
        else the project's own; else, when it registered none, the built-ins (the demo)."""
        names = self.names()
        if not wanted:
            return self.own_names() or names
        for name in wanted:
            if name in self._unavailable:
                raise RetrievalEvalError(f"engine '{name}' is not available: {self._unavailable[name]}")
        unknown = [n for n in wanted if n not in names]
        if unknown:
            split = [part for n in wanted for part in n.split(",") if part]
            hint = (f" (names are separated by spaces, not commas: retrieval_engines = {' '.join(split)})"
                    if any("," in n for n in unknown) and all(part in names for part in split) else "")
            raise RetrievalEvalError(
                f"--retrieval-engine / retrieval_engines names unknown engine(s) {', '.join(unknown)}; "
                f"registered: {', '.join(names) or 'none'}{hint or nearest(unknown, names)}"
            )
        return list(dict.fromkeys(wanted))

    def known(self) -> list[str]:
        """Every name a rule or a selection may use: registered, or declared unavailable here."""
        return [*self._factories, *(n for n in self._unavailable if n not in self._factories)]

    def why_unavailable(self, name: str) -> str | None:
        """Why a declared engine cannot run here (a test aimed at it says so); None for any other name."""
        return self._unavailable.get(name)

    def unavailable_selected(self, wanted: Sequence[str] = ()) -> dict[str, str]:
        """Engines that cannot run here, worth a line in the report: the project's own always,
        the built-ins only when they are what runs."""
        builtins_run = not wanted and not self.own_names()
        return {n: why for n, why in self._unavailable.items() if n not in self._builtin or builtins_run}

    def build(self, name: str, request: Any) -> Engine:
        try:
            factory = self._factories[name]
        except KeyError:
            raise RetrievalEvalError(
                f"unknown engine '{name}'; registered engines: {', '.join(self._factories) or 'none'}"
            ) from None
        engine = factory(request)
        if isinstance(engine, Engine) and engine.name != name:
            try:
                engine.name = name  # the registered name is the engine's identity in tables and ids
            except AttributeError:
                raise RetrievalEvalError(f"engine '{name}': its factory returned an engine named "
                                         f"'{engine.name}' whose name cannot be set") from None
        if not isinstance(engine, Engine):
            raise RetrievalEvalError(
                f"engine '{name}': factory returned {type(engine).__name__}, which has no "
                "'name' attribute and 'retrieve(query, k)' method"
            )
        return engine

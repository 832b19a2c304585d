"""Measure names: parsing, validation and the canonical spelling that is a measure's identity.

Like ir_measures, a measure is a small value object; ``Measure.parse("nDCG@10")`` and
``Measure.parse("ndcg_cut_10")`` are the same measure, spelled ``ndcg@10``. trec_eval's names
(``P_5``, ``Rprec``, ``set_F``), ir_measures' (``P(rel=2)@5``, ``RBP(p=0.8)``, ``Judged@10``, or
their measure objects) and ranx's (``hit_rate@5``, ``r-precision``, ``precision@5-l2``,
``ndcg_burges@10``) parse to the same objects; docs/measure-names.md maps them all. A name ending
in ``+judged`` (``ndcg@10+judged``) is the same measure computed on the human labels plus the
LLM judgments of the documents they left unjudged (``data/judgments.py``); one ending in ``~ppi``
(``ndcg@10~ppi``) is its prediction-powered estimate: the judged measure over every question,
corrected by the questions people judged completely (``ir/ppi.py``). One ending in ``+evidence``
(``hit@5+evidence``) is its evidence-level twin: ranks are the retrieved passages, and one counts
when it carries the label's evidence (``data/evidence.py``). A name that
means something else in another tool (ranx's ``hits@k`` and ``rbp.95``, a bare ``rbp``) is
refused with the spellings that say what is meant, never read one way silently.
"""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass, replace

from .._defaults import GAIN_WEIGHTS, TABLE_MEASURES
from ..errors import RetrievalEvalError

#: what the measures mean, in words: bump it when a measure's definition changes, and baselines
#: from another definition are refused (``evaluation/results.METRICS_FINGERPRINT``)
METRICS_DEFINITION = "trec_eval -c semantics; ties by doc id descending; linear-gain ndcg; v1"

#: the suffix of a measure computed on human labels plus judgments: ``ndcg@10+judged``
JUDGED = "judged"
#: the suffix of a measure's prediction-powered estimate: ``ndcg@10~ppi``
PPI = "ppi"
#: how each kind of labels is spelled after the measure's name
_SUFFIX = {JUDGED: "+", PPI: "~"}
#: the suffix of a measure's evidence-level twin: ``hit@5+evidence`` counts a retrieved passage
#: relevant when it carries the label's evidence (``data/evidence.py``), ranks being passages
EVIDENCE = "evidence"


def judge_dependent(name: str) -> bool:
    """Does the quantity ``name`` read an LLM judge's grades: a measure on the judged labels
    (``ndcg@10+judged``, ``shadow.hit@5+judged``) or estimated with them (``ndcg@10~ppi``)? Such a
    rule gates only with a judge that passed ``judge --validate`` (``gate/verdict.py``)."""
    return f"+{JUDGED}" in name or name.endswith(f"~{PPI}")


@dataclass(frozen=True)
class _Family:
    cutoff: str  # "required", "optional" or "none"
    params: tuple[str, ...] = ()  # the parameters it takes: rel, p, gain, beta
    count: bool = False  # a count per query, summed over queries as trec_eval does


#: family -> what it takes. Semantics in ir/metrics.py; names of other tools in docs/measure-names.md.
FAMILIES: dict[str, _Family] = {
    "hit": _Family("required", ("rel",)),
    "mrr": _Family("optional", ("rel",)),
    "recall": _Family("required", ("rel",)),
    "precision": _Family("required", ("rel",)),
    "ndcg": _Family("optional", ("gain",)),
    "map": _Family("optional", ("rel",)),
    "rprec": _Family("none", ("rel",)),
    "bpref": _Family("none", ("rel",)),
    "judged": _Family("optional"),
    "num_ret": _Family("optional", count=True),
    "num_rel": _Family("none", ("rel",), count=True),
    "num_rel_ret": _Family("optional", ("rel",), count=True),
    "set_precision": _Family("none", ("rel",)),
    "set_recall": _Family("none", ("rel",)),
    "set_f": _Family("none", ("rel", "beta")),
    "err": _Family("optional"),
    "rbp": _Family("optional", ("p", "rel")),
    # from the corpus's document versions, not from qrels (see data/freshness.py)
    "freshness.stale_free": _Family("required"),
    "freshness.conflict_free": _Family("required"),
}

#: lower-cased spelling -> (family, parameters the spelling implies)
_ALIASES: dict[str, tuple[str, dict]] = {
    **{a: ("hit", {}) for a in ("hit", "success", "hit_rate")},
    **{a: ("mrr", {}) for a in ("mrr", "rr", "recip_rank")},
    **{a: ("recall", {}) for a in ("recall", "r")},
    **{a: ("precision", {}) for a in ("precision", "p")},
    **{a: ("ndcg", {}) for a in ("ndcg", "ndcg_cut")},
    "ndcg_burges": ("ndcg", {"gain": "exp"}),
    **{a: ("map", {}) for a in ("map", "ap", "map_cut")},
    **{a: ("rprec", {}) for a in ("rprec", "r-precision", "r_precision")},
    "bpref": ("bpref", {}),
    "judged": ("judged", {}),
    **{a: ("num_ret", {}) for a in ("num_ret", "numret")},
    **{a: ("num_rel", {}) for a in ("num_rel", "numrel")},
    **{a: ("num_rel_ret", {}) for a in ("num_rel_ret", "numrelret")},
    **{a: ("set_precision", {}) for a in ("set_precision", "set_p", "setp")},
    **{a: ("set_recall", {}) for a in ("set_recall", "set_r", "setr")},
    **{a: ("set_f", {}) for a in ("set_f", "setf")},
    "err": ("err", {}),
    "rbp": ("rbp", {}),
}

#: Spellings refused because another tool reads them otherwise: name -> why, and what to write.
_REFUSED = {
    "hits": "'{text}' is ambiguous: ranx's hits@k counts the relevant documents in the top k (write "
            "num_rel_ret@{k}: per query the same count, summed over queries as trec_eval does), the plugin's "
            "hit@k is 1 if any is there (write hit@{k})",
}

_PATTERN = re.compile(
    r"^(?P<name>[a-z][a-z_-]*?)(?:\((?P<params>[^()]*)\))?(?:[@_.](?P<k>[+-]?\d+))?(?:-l(?P<level>\d+))?$"
)
_RANX_RBP = re.compile(r"^rbp\.(?P<p>\d+)(?:-l(?P<level>\d+))?$")  # ranx: rbp.95 is p=0.95, raw grades
_FRESHNESS = re.compile(r"^\s*freshness\.(stale_free|conflict_free)(?:@([+-]?\d+))?\s*$")
_GAINS = {"exp": "exp", "linear": None, "exp-log2": "exp", "log2": None}

KNOWN = ("hit@k", "mrr", "mrr@k", "recall@k", "precision@k", "ndcg", "ndcg@k", "ndcg(gain=exp)@k", "map", "map@k",
         "rprec", "bpref", "judged@k", "num_ret", "num_rel", "num_rel_ret", "set_precision", "set_recall", "set_f",
         "err@k", "rbp(p=0.9)", "P(rel=2)@k", "freshness.stale_free@k", "freshness.conflict_free@k",
         "ndcg@k+judged (any of them on human labels plus judgments)",
         "ndcg@k~ppi (any with a cutoff, prediction-powered from human-judged questions)",
         "hit@k+evidence (any on relevance labels, scored on passages against the labels' evidence)")


def _number(value: float) -> str:
    text = repr(float(value))
    return text[:-2] if text.endswith(".0") else text


@dataclass(frozen=True, order=True)
class Measure:
    """A retrieval measure; ``k`` is the rank cutoff, ``None`` for the whole ranking.

    ``rel``: the grade from which a document counts as relevant (trec_eval ``-l``, ir_measures
    ``rel=``), None for the default 1 (for ``rbp``: None is graded gain, a level makes it binary);
    ``p``: RBP's persistence; ``gain``: ``"exp"`` for nDCG with ``2**grade - 1`` (None: the grade,
    as trec_eval); ``beta``: set_F's weight of recall (None: 1); ``labels``: ``"judged"`` for the
    human labels with the judged holes filled (name suffix ``+judged``), ``"ppi"`` for the
    prediction-powered estimate from them and the human-judged questions (``~ppi``), None for the
    human labels."""

    family: str
    k: int | None = None
    rel: int | None = None
    p: float | None = None
    gain: str | None = None
    beta: float | None = None
    labels: str | None = None
    #: ``"evidence"``: scored on the retrieved passages against the labels' evidence (``+evidence``);
    #: None: on the retrieved documents
    unit: str | None = None

    def __post_init__(self) -> None:
        spec = FAMILIES.get(self.family)
        if spec is None:
            raise RetrievalEvalError(
                f"unknown measure family '{self.family}'; known: {', '.join(FAMILIES)}"
            )
        if spec.cutoff == "required" and self.k is None:
            raise RetrievalEvalError(f"measure '{self.family}' needs a cutoff, e.g. {self.family}@10")
        if spec.cutoff == "none" and self.k is not None:
            raise RetrievalEvalError(f"measure '{self.family}' takes no cutoff (it reads the whole ranking); "
                                     f"write {self.family}")
        if self.k is not None and (not isinstance(self.k, int) or isinstance(self.k, bool) or self.k < 1):
            raise RetrievalEvalError(
                f"measure cutoff must be a whole number >= 1, got {self.family}@{self.k}"
            )
        given = [n for n in ("rel", "p", "gain", "beta") if getattr(self, n) is not None]
        wrong = [n for n in given if n not in spec.params]
        if wrong:
            takes = ", ".join(spec.params) or "none"
            raise RetrievalEvalError(f"measure '{self.family}' takes no parameter {wrong[0]!r} (its parameters: {takes})")
        self._check_values()
        if self.labels is not None and self.labels not in _SUFFIX:
            raise RetrievalEvalError(f"measure labels must be '{JUDGED}', '{PPI}' or left out, got {self.labels!r}")
        if self.labels is not None and self.freshness:
            raise RetrievalEvalError(f"{self.family}: freshness is judged on document versions, not on labels; "
                                     f"'{_SUFFIX[self.labels]}{self.labels}' does not apply")
        if self.unit is not None and self.unit != EVIDENCE:
            raise RetrievalEvalError(f"measure unit must be '{EVIDENCE}' or left out, got {self.unit!r}")
        if self.unit is not None and (self.labels is not None or self.freshness or spec.count
                                      or self.family == "judged"):
            raise RetrievalEvalError(
                f"measure '{self.family}': '+{EVIDENCE}' scores passages against the labels' evidence, so it applies "
                "once, to a measure of the human labels' relevance (not a count, judged@k, freshness, +judged or ~ppi)")
        if self.labels == PPI and (spec.count or self.k is None):
            raise RetrievalEvalError(
                f"measure '{self.family}{'' if self.k is None else f'@{self.k}'}~ppi': a prediction-powered estimate "
                + ("is of a mean, not of a count summed over questions" if spec.count else
                   f"needs a cutoff people judged to, e.g. {self.family}@10~ppi"))
        # one identity per meaning: the defaults are not spelled out
        if self.rel == 1 and self.family != "rbp":
            object.__setattr__(self, "rel", None)
        if self.beta is not None and float(self.beta) == 1.0:
            object.__setattr__(self, "beta", None)

    def _check_values(self) -> None:
        if self.rel is not None and (not isinstance(self.rel, int) or isinstance(self.rel, bool) or self.rel < 1):
            raise RetrievalEvalError(f"measure '{self.family}': rel must be a whole number >= 1 (the lowest "
                                     f"relevant grade), got {self.rel!r}")
        if self.family == "rbp":
            if self.p is None:
                raise RetrievalEvalError(
                    "rbp needs its persistence, and the tools differ on the default: write rbp(p=0.9) for "
                    "trec_eval's rbp or RBP(p=0.8) for ir_measures' RBP")
            if not isinstance(self.p, (int, float)) or isinstance(self.p, bool) or not 0 < self.p < 1:
                raise RetrievalEvalError(f"rbp: the persistence p must be a number between 0 and 1, got {self.p!r}")
            object.__setattr__(self, "p", float(self.p))
        if self.gain is not None and self.gain not in ("exp",):
            raise RetrievalEvalError(f"ndcg: gain must be 'exp' (2**grade - 1) or left out (the grade, as "
                                     f"trec_eval), got {self.gain!r}")
        if self.beta is not None:
            if not isinstance(self.beta, (int, float)) or isinstance(self.beta, bool) or not self.beta > 0:
                raise RetrievalEvalError(f"set_f: beta must be a number > 0, got {self.beta!r}")
            object.__setattr__(self, "beta", float(self.beta))

    @property
    def freshness(self) -> bool:
        """Judged on the corpus's document versions rather than on relevance labels."""
        return self.family.startswith("freshness.")

    @property
    def count(self) -> bool:
        """A count per query (num_ret, num_rel, num_rel_ret): summed over queries, not averaged."""
        return FAMILIES[self.family].count

    @property
    def bounds(self) -> tuple[float, float]:
        """The values one query can take: [0, 1], or [0, inf) for a count."""
        return (0.0, math.inf) if self.count else (0.0, 1.0)

    def aggregate(self, values) -> float:
        """trec_eval's summary over queries: the sum for a count, the mean otherwise; NaN over no
        query (0 of 0 is not a pass)."""
        n = len(values)
        if not n:
            return math.nan
        if hasattr(values, "mean"):  # numpy: the same mean as before counts existed, to the last bit
            return float(values.sum() if self.count else values.mean())
        total = float(sum(values))
        return total if self.count else total / n

    @property
    def name(self) -> str:
        params = [f"{n}={_number(v) if isinstance(v, float) else v}" for n in ("beta", "gain", "p", "rel")
                  if (v := getattr(self, n)) is not None]
        head = f"{self.family}({','.join(params)})" if params else self.family
        name = head if self.k is None else f"{head}@{self.k}"
        if self.unit is not None:
            name = f"{name}+{self.unit}"
        return name if self.labels is None else f"{name}{_SUFFIX[self.labels]}{self.labels}"

    @property
    def evidence(self) -> bool:
        """The evidence-level twin (``+evidence``): passages scored against the labels' evidence."""
        return self.unit == EVIDENCE

    def with_evidence(self) -> "Measure":
        """The same measure at the evidence level (``hit@5`` -> ``hit@5+evidence``)."""
        return replace(self, unit=EVIDENCE)

    @property
    def on_documents(self) -> "Measure":
        """The same measure on the retrieved documents."""
        return self if self.unit is None else replace(self, unit=None)

    @property
    def judged(self) -> bool:
        """Computed on the human labels plus the judgments (``+judged``)."""
        return self.labels == JUDGED

    @property
    def ppi(self) -> bool:
        """The prediction-powered estimate (``~ppi``): no per-question value, an estimate and its interval."""
        return self.labels == PPI

    @property
    def judge_dependent(self) -> bool:
        """Moves with the LLM judge's grades (``+judged`` or ``~ppi``)."""
        return self.labels is not None

    def with_ppi(self) -> "Measure":
        """The same measure's prediction-powered estimate (``ndcg@10`` -> ``ndcg@10~ppi``)."""
        return replace(self, labels=PPI)

    @property
    def on_human_labels(self) -> "Measure":
        """The same measure on the human labels alone."""
        return self if self.labels is None else replace(self, labels=None)

    def with_judgments(self) -> "Measure":
        """The same measure with the judged holes filled (``ndcg@10`` -> ``ndcg@10+judged``)."""
        return replace(self, labels=JUDGED)

    def __str__(self) -> str:
        return self.name

    @classmethod
    def parse(cls, text: "str | Measure | object") -> "Measure":
        """Parse ``hit@5``, ``MRR``, ``nDCG@10``, ``P@10``, ``success_5``, ``recall.100``,
        ``P(rel=2)@5``, ``RBP(p=0.8)``, ``nDCG(dcg=exp-log2)@10`` ... or an ir_measures object.
        A name is parsed once per process (a measure is immutable): the analysis of a run and a
        saved run's reading look the same few names up hundreds of thousands of times."""
        if isinstance(text, Measure):
            return text
        if isinstance(text, str):
            return _parsed(text)
        return cls._parse(text)

    @classmethod
    def _parse(cls, text: "str | object") -> "Measure":
        if isinstance(text, str) and text.rstrip().lower().endswith(f"+{EVIDENCE}"):
            base = cls.parse(text.rstrip()[: -len(EVIDENCE) - 1])
            if base.unit is not None:
                raise RetrievalEvalError(f"measure '{text}': '+{EVIDENCE}' applies once")
            try:
                return replace(base, unit=EVIDENCE)
            except RetrievalEvalError as exc:
                raise RetrievalEvalError(f"measure '{text}': {exc.detail}") from None
        if isinstance(text, str) and text.rstrip().lower().endswith(f"+{JUDGED}"):
            base = cls.parse(text.rstrip()[: -len(JUDGED) - 1])
            if base.unit is not None:
                raise RetrievalEvalError(f"measure '{text}': the judge grades documents, not passages: "
                                         f"'+{JUDGED}' and '+{EVIDENCE}' do not combine")
            if base.labels is not None or base.freshness:
                raise RetrievalEvalError(f"measure '{text}': '+{JUDGED}' applies once, to a measure on relevance "
                                         "labels (not to freshness)")
            return replace(base, labels=JUDGED)
        if isinstance(text, str) and text.rstrip().lower().endswith(f"~{PPI}"):
            base = cls.parse(text.rstrip()[: -len(PPI) - 1])
            if base.labels is not None or base.freshness or base.unit is not None:
                raise RetrievalEvalError(f"measure '{text}': '~{PPI}' applies once, to a measure on relevance "
                                         "labels (not to freshness or a +judged one)")
            return replace(base, labels=PPI)
        if not isinstance(text, str):
            if hasattr(text, "NAME") and hasattr(text, "params"):
                return _from_ir_measures(text)
            raise RetrievalEvalError(f"a measure name must be a string, got {text!r}")
        fresh = _FRESHNESS.match(text.lower())
        if fresh is not None:
            k = int(fresh.group(2)) if fresh.group(2) is not None else None
            _check_cutoff(text, k)
            return cls(f"freshness.{fresh.group(1)}", k)
        lowered = re.sub(r"\s+", "", text.lower())
        ranx_rbp = _RANX_RBP.match(lowered)
        if ranx_rbp is not None:
            p = f"0.{ranx_rbp['p']}"
            raise RetrievalEvalError(
                f"'{text}' is ranx's RBP, which weighs each relevant document by its raw grade; write "
                f"rbp(p={p}) for trec_eval's (grades scaled by the query's top grade) or rbp(p={p},rel=1) for "
                "binary relevance (ir_measures' RBP(rel=1); the same as ranx's when grades are 0 and 1)")
        m = _PATTERN.match(lowered)
        if m is None or (m["name"] not in _ALIASES and m["name"] not in _REFUSED):
            raise RetrievalEvalError(f"unknown measure '{text}'; known measures: {', '.join(KNOWN)} "
                                     "(and their trec_eval, ir_measures and ranx spellings)")
        k = int(m["k"]) if m["k"] is not None else None
        _check_cutoff(text, k)
        if m["name"] in _REFUSED:
            raise RetrievalEvalError(_REFUSED[m["name"]].format(text=text, k=k if k is not None else "k"))
        family, implied = _ALIASES[m["name"]]
        params = {**implied, **_params(text, m["params"] or "")}
        if m["level"] is not None:
            params["rel"] = int(m["level"])
        if family == "num_ret" and "rel" in params:  # ir_measures: NumRelRet is NumRet(rel=1)
            family = "num_rel_ret"
        return cls(family, k, **params)


@functools.lru_cache(maxsize=4096)
def _parsed(text: str) -> Measure:
    """``Measure._parse`` of a name, kept (a name that does not parse raises every time)."""
    return Measure._parse(text)


def _check_cutoff(text: str, k: int | None) -> None:
    if k is not None and k < 1:
        raise RetrievalEvalError(f"measure '{text}': the cutoff must be a whole number >= 1 (got {k})")


def _params(text: str, raw: str) -> dict:
    """``rel=2,p=0.8`` -> {"rel": 2, "p": 0.8}; ir_measures' ``dcg=exp-log2`` is ``gain=exp``."""
    out: dict = {}
    for item in filter(None, raw.split(",")):
        key, sep, value = item.partition("=")
        try:
            if not sep:
                raise ValueError
            if key == "rel":
                out["rel"] = int(value)
            elif key in ("p", "beta"):
                out[key] = float(value)
            elif key in ("gain", "dcg") and value in _GAINS:
                if _GAINS[value] is not None:
                    out["gain"] = _GAINS[value]
            elif key == "cutoff":
                raise RetrievalEvalError(f"measure '{text}': write the cutoff after the name, e.g. P(rel=2)@5")
            else:
                raise RetrievalEvalError(f"measure '{text}': unknown parameter {item!r}; known: rel=N, p=0.8, "
                                         "gain=exp (or dcg=exp-log2), beta=0.5")
        except ValueError:
            raise RetrievalEvalError(f"measure '{text}': parameter {item!r} must be key=number, e.g. rel=2") from None
    return out


#: ir_measures' NAME -> (family, its defaults where they differ from ours)
_IR_MEASURES = {
    "Success": ("hit", {}), "RR": ("mrr", {}), "R": ("recall", {}), "P": ("precision", {}),
    "nDCG": ("ndcg", {}), "AP": ("map", {}), "Rprec": ("rprec", {}), "Bpref": ("bpref", {}),
    "Judged": ("judged", {}), "NumRet": ("num_ret", {}), "NumRel": ("num_rel", {}),
    "SetP": ("set_precision", {}), "SetR": ("set_recall", {}), "SetF": ("set_f", {}),
    "ERR": ("err", {}), "RBP": ("rbp", {"p": 0.8}),
}


def _from_ir_measures(obj) -> Measure:
    """An ir_measures measure object, with ir_measures' defaults (RBP's p is 0.8 there)."""
    name = getattr(obj, "NAME", None)
    if name not in _IR_MEASURES:
        raise RetrievalEvalError(f"ir_measures measure {obj} has no counterpart here; see docs/measure-names.md")
    family, defaults = _IR_MEASURES[name]
    params = dict(getattr(obj, "params", {}) or {})
    k = params.pop("cutoff", None)
    for flag in ("judged_only", "relative", "residual"):
        if params.pop(flag, False):
            raise RetrievalEvalError(f"ir_measures measure {obj}: {flag}=True is not supported here")
    if "dcg" in params:
        params["gain"] = _GAINS.get(params.pop("dcg"), "?")
        if params["gain"] is None:
            del params["gain"]
    if "gains" in params:
        raise RetrievalEvalError(f"ir_measures measure {obj}: custom gains are not supported; gain=exp is")
    params = {**defaults, **{key: v for key, v in params.items() if v is not None}}
    if family == "num_ret" and "rel" in params:
        family = "num_rel_ret"
    try:
        return Measure(family, k, **params)
    except (RetrievalEvalError, TypeError) as exc:
        raise RetrievalEvalError(f"ir_measures measure {obj}: {exc}") from None


def parse_measures(items) -> list[Measure]:
    """Parse and de-duplicate, keeping the caller's order."""
    out: list[Measure] = []
    for item in items:
        m = Measure.parse(item)
        if m not in out:
            out.append(m)
    return out


def split_measures(text: str) -> list[str]:
    """A comma-separated list of measure names, where commas inside parentheses belong to the
    name (``rbp(p=0.9,rel=1),hit@5`` is two measures)."""
    return [part.strip() for part in re.split(r",(?![^()]*\))", text or "") if part.strip()]


#: The measures a summary table shows unless configured otherwise.
DEFAULT_TABLE_MEASURES = tuple(Measure.parse(n) for n in TABLE_MEASURES)

#: The weights of a shadow comparison's knowledge gain unless configured (``analysis/shadow.py``):
#: finding the gold documents counts twice as much as ordering them.
DEFAULT_GAIN_WEIGHTS = GAIN_WEIGHTS

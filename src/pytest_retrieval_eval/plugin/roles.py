"""Who reports under pytest-xdist: each process's part is a plugin object of its own (as
pytest-xdist's controller and worker, or pytest-cov's engines), registered once at session start
(``register``), when xdist has configured and the role is knowable.

- ``Local``: no xdist; this process evaluates, then reports and gates what it recorded;
- ``Worker``: evaluates and ships its results document to the controller through ``workeroutput``;
- ``Controller``: runs no test; puts the documents every worker shipped together, then reports and
  gates. A worker that goes down without shipping makes the gate fail, never pass.

What a process ships is a results document, results.json's form by results.json's writer
(``archive/results_json.run_document``: per-query rankings, not means, and an xdist share's
evaluation with its ``share``), so the reporting process merges the workers' documents with the
``combine`` that merges CI jobs' slices, and its numbers are exactly those of a run without
xdist. This module imports nothing heavy: the controller tracks workers even while the plugin sleeps.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

import pytest

from .wake import active, session_of, worker_said

if TYPE_CHECKING:
    from .session import RetrievalSession

#: ``workeroutput`` keys: a worker's results document (as results.json's text), and what it said beside it
WORKEROUTPUT_KEY = "pytest_retrieval_eval"
SAID_KEY = "pytest_retrieval_eval.said"
ROLE_NAME = "retrieval_eval.role"


@dataclass
class Shipped:
    """What one process recorded, as a results document (``archive/results_json.run_document``:
    evaluations, an xdist share's with its ``share``: {"of": the whole labeled set's fingerprint,
    "k", "n", "positions": where each of its questions sits in the whole}; corpus lint; snippets of
    the retrieved documents for the drill-down page), and what it said beside it for the run."""

    document: dict[str, Any] = field(default_factory=dict)
    #: the store's lines (ingested, restored from a snapshot), as this process said them
    store: list[str] = field(default_factory=list)
    #: the ingestion YAML this process was given and never ran nor restored (None: used, or none)
    unused_ingestion: str | None = None
    #: the document of each chunk the engines read (the session's ingestion): what coverage counts
    chunk_docs: list[str] = field(default_factory=list)
    #: the HTTP calls no engine's question claims (``_usage.OUTSIDE``): model -> [calls, input, output tokens]
    usage: dict[str, list[int]] = field(default_factory=dict)
    #: what this process warns of for the whole run (an embedder that drifted: ``hybrid/canaries.py``)
    warnings: list[str] = field(default_factory=list)

    def output(self) -> dict[str, str]:
        """As a worker hands it to the controller (``workeroutput``): the document as results.json's
        text, what it said beside it as JSON."""
        from ..archive.results_json import document_text

        said = {"store": self.store, "unused_ingestion": self.unused_ingestion, "chunk_docs": self.chunk_docs,
                "usage": self.usage, "warnings": self.warnings}
        return {WORKEROUTPUT_KEY: document_text(self.document), SAID_KEY: json.dumps(said)}

    @classmethod
    def received(cls, output: dict[str, Any]) -> "Shipped | None":
        """What a worker handed over (``output``), or None when it shipped nothing."""
        if WORKEROUTPUT_KEY not in output:
            return None
        return cls(json.loads(output[WORKEROUTPUT_KEY]), **json.loads(output.get(SAID_KEY, "{}")))


@dataclass
class Gathered:
    """Everything the reporting process knows at the end of the run, in worker order: each
    process's documents (``combine`` puts them together) and what the processes said beside them."""

    shipped: list[tuple[str, Shipped]]
    missing_workers: list[str] = field(default_factory=list)

    @property
    def documents(self) -> list[dict[str, Any]]:
        return [s.document for _, s in self.shipped]

    @property
    def names(self) -> list[str | None]:
        """How a refusal names each document: a worker by its id, this process's own by none."""
        return [None if origin == "local" else origin for origin, _ in self.shipped]

    @property
    def lost(self) -> list[str]:
        """The workers whose results never arrived, as the gate's failures."""
        return [f"xdist worker {w}; its retrieval results are missing" for w in self.missing_workers]

    @property
    def workers_said(self) -> list[str]:
        """The workers' store lines, each prefixed with its worker: the controller prints them."""
        return [f"{origin}: {line}" for origin, s in self.shipped if origin != "local" for line in s.store]

    @property
    def store(self) -> list[str]:
        """Every process's store lines, a worker's prefixed with its id."""
        return self.workers_said + [line for origin, s in self.shipped if origin == "local" for line in s.store]

    def warnings(self, evaluated: bool) -> list[str]:
        """What the processes warned of for the run, each once, after an ingestion YAML that none
        ran (when anything was ``evaluated``)."""
        unused = {s.unused_ingestion for _, s in self.shipped}
        out = ([f"retrieval_ingest_pipeline {next(iter(unused))} did not run: no engine reads what it ingests "
                "(name a query pipeline that does, retrieval_query_pipelines = NAME=PATH, or leave it out)"]
               if evaluated and len(unused) == 1 and None not in unused else [])
        return out + list(dict.fromkeys(w for _, s in self.shipped for w in s.warnings))  # each once, whoever said it

    @property
    def chunk_docs(self) -> list[str] | None:
        """The document of each ingested chunk, when some process ingested something."""
        return next((s.chunk_docs for _, s in self.shipped if s.chunk_docs), None)

    @property
    def usage(self) -> dict[str, list[int]]:
        """Every process's calls outside the engines' questions, summed."""
        from .._usage import summed

        return summed(*(s.usage for _, s in self.shipped))


def _report(session: pytest.Session, rs: RetrievalSession, gather: Callable[[], Gathered]) -> None:
    """The reporting process's end of the run: what was ``gather``-ed judged and written
    (``RetrievalSession.finish``); a failed gate fails the session."""
    try:
        outcome = rs.finish(gather())
    finally:
        rs.close()
    if outcome.failed:
        session.testsfailed += 1
    junit_properties(session.config, outcome.verdict)


def junit_properties(config: pytest.Config, verdict: Any) -> None:
    """The gate's verdict as properties of the JUnit report's test suite (``--junitxml``):
    ``retrieval.gate`` (pass, fail or inconclusive), ``retrieval.gate.failed`` (whether the run
    fails for it: true or false), and each failure as ``retrieval.gate.fail`` or
    ``retrieval.gate.inconclusive`` with its line."""
    junitxml = config.pluginmanager.getplugin("junitxml")
    xml = config.stash.get(junitxml.xml_key, None) if junitxml is not None else None
    if xml is None:
        return
    xml.add_global_property("retrieval.gate", verdict.state)
    xml.add_global_property("retrieval.gate.failed", "true" if verdict.failed else "false")
    for f in verdict.failures:
        xml.add_global_property(f"retrieval.gate.{f.state}", " ".join(str(f).splitlines()))


class Local:
    """No xdist: this process evaluates, then reports and gates what it recorded."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config

    @pytest.hookimpl(wrapper=True)
    def pytest_runtestloop(self, session: pytest.Session):
        """The gate, after every test has finished."""
        result = yield
        rs = active(self.config)
        if rs is not None:
            _report(session, rs, lambda: Gathered([("local", rs.shipped())]))
        return result


class Worker:
    """An xdist worker: ships its results document to the controller and reports nothing itself."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config

    @pytest.hookimpl(wrapper=True)
    def pytest_runtestloop(self, session: pytest.Session):
        result = yield
        rs = active(self.config)
        if rs is not None:
            try:
                self.config.workeroutput.update(rs.shipped().output())  # type: ignore[attr-defined]
            finally:
                rs.close()
        return result


class Controller:
    """The xdist controller: gathers every worker's document as the worker goes down; runs no
    evaluation of its own, and reports and gates once every worker has finished."""

    def __init__(self, config: pytest.Config | None = None) -> None:
        self.config = config
        self.shipped: dict[str, Shipped] = {}
        self.missing: dict[str, str] = {}
        #: (engine, whole labeled set) -> (worker, the first evaluation or share of it that arrived)
        self._first: dict[tuple[str, str], tuple[str, dict]] = {}

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        worker_said(node)  # a worker's usage error, raised as the run's
        self.node_down(node, error)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtestloop(self, session: pytest.Session):
        """The gate, after every worker has finished: the session woken when a worker shipped
        retrieval results (the controller collected nothing that would have woken it)."""
        result = yield
        rs = active(session.config)
        if rs is None and self.shipped:
            rs = session_of(session.config)
        if rs is not None:
            _report(session, rs, self.gather)
        return result

    def node_down(self, node: Any, error: Any) -> None:
        wid = getattr(getattr(node, "gateway", None), "id", None) or str(node)
        shipped = Shipped.received(getattr(node, "workeroutput", None) or {}) if error is None else None
        if shipped is not None:
            misfit = self._misfit(wid, shipped)
            if misfit is None:
                self.shipped[wid] = shipped
            else:  # never merged under another worker's corpus or settings: a failure naming the field
                self.missing[wid] = misfit
        else:
            reason = f"crashed: {str(error).strip().splitlines()[-1]}" if error else "sent no retrieval results"
            self.missing[wid] = reason

    def _misfit(self, wid: str, shipped: Shipped) -> str | None:
        """Why ``shipped`` holds an evaluation (or share) that was not evaluated as another
        worker's of the same engine and labeled set was (``archive.combine.misfit``), or None."""
        parts = shipped.document.get("evaluations") or []
        if not parts:
            return None
        from ..archive.combine import misfit, whole_of

        for d in parts:
            other, first = self._first.get((d["engine"], whole_of(d)), (None, None))
            found = misfit(first, d, other) if first is not None else None
            if found:
                return (f"its {d['engine']} on {d['labeled']['name']} does not fit {other}'s: "
                        f"field '{found[0]}': {found[1]}")
        for d in parts:
            self._first.setdefault((d["engine"], whole_of(d)), (wid, d))
        return None

    def gather(self) -> Gathered:
        return Gathered(sorted(self.shipped.items()),
                        [f"{wid} ({why})" for wid, why in sorted(self.missing.items())])


def register(config: pytest.Config) -> None:
    """This process's role, registered as a plugin once xdist has configured (at session start)."""
    if config.pluginmanager.get_plugin(ROLE_NAME) is not None:
        return
    if hasattr(config, "workerinput"):
        role: Local | Worker | Controller = Worker(config)
    elif config.pluginmanager.hasplugin("dsession"):
        role = Controller(config)
    else:
        role = Local(config)
    config.pluginmanager.register(role, ROLE_NAME)

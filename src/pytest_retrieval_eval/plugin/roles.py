"""Who reports under pytest-xdist: each process plays a role, and the role is a type (as in
pytest-cov's ``engine.py``), chosen once at session start.

- ``Standalone``: no xdist; it evaluates, reports and gates;
- ``Worker``: evaluates and ships its per-query rows to the controller through ``workeroutput``;
- ``Controller``: runs no test; merges the rows every worker shipped, then reports and gates.
  A worker that goes down without shipping makes the gate fail, never pass.

Per-query rankings, not means, cross the process boundary, so the controller's numbers are
exactly those of a run without xdist. This module imports nothing heavy: the controller tracks
workers even while the plugin sleeps.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from typing import Any

WORKEROUTPUT_KEY = "pytest_retrieval_eval"


@dataclass
class Shipped:
    """What one process recorded: evaluations (``Evaluation.to_dict``), lint reports, and
    snippets of the retrieved documents (doc id -> text) for the drill-down page."""

    evaluations: list[dict] = field(default_factory=list)
    lint: list[dict] = field(default_factory=list)
    snippets: dict[str, str] = field(default_factory=dict)
    #: shares of an engine's evaluation (``--retrieval-shard``): the evaluation, plus "share":
    #: {"of": full labeled fingerprint, "k", "n", "positions": index of each query in the full set}
    shares: list[dict] = field(default_factory=list)
    #: the store's lines (ingested, restored from a snapshot), as this process said them
    store: list[str] = field(default_factory=list)
    #: the ingestion YAML this process was given and never ran nor restored (None: used, or none)
    unused_ingestion: str | None = None
    #: the document of each chunk the engines read (the session's ingestion): what coverage counts
    chunk_docs: list[str] = field(default_factory=list)
    #: the HTTP calls no engine's question claims (``_usage.OUTSIDE``): model -> [calls, input, output tokens]
    usage: dict = field(default_factory=dict)
    #: what this process warns of for the whole run (an embedder that drifted: ``hybrid/canaries.py``)
    warnings: list[str] = field(default_factory=list)


@dataclass
class Gathered:
    """Everything the reporting process knows at the end of the run, in worker order."""

    shipped: list[tuple[str, Shipped]]
    missing_workers: list[str] = field(default_factory=list)


class Standalone:
    """No xdist: this process evaluates, reports and gates."""

    reports = True

    def ship(self, config: Any, records: Shipped) -> None:
        pass

    def gather(self, records: Shipped) -> Gathered:
        return Gathered([("local", records)])

    @property
    def heard_from_workers(self) -> bool:
        return False


class Worker(Standalone):
    """An xdist worker: hands its rows to the controller and reports nothing itself."""

    reports = False

    def ship(self, config: Any, records: Shipped) -> None:
        config.workeroutput[WORKEROUTPUT_KEY] = json.dumps(dataclasses.asdict(records))


class Controller(Standalone):
    """The xdist controller: gathers every worker's rows; runs no evaluation of its own."""

    def __init__(self) -> None:
        self.shipped: dict[str, Shipped] = {}
        self.missing: dict[str, str] = {}
        #: (engine, whole labeled set) -> (worker, the first evaluation or share of it that arrived)
        self._first: dict[tuple[str, str], tuple[str, dict]] = {}

    def node_down(self, node: Any, error: Any) -> None:
        wid = getattr(getattr(node, "gateway", None), "id", None) or str(node)
        output = getattr(node, "workeroutput", None) or {}
        if error is None and WORKEROUTPUT_KEY in output:
            shipped = Shipped(**json.loads(output[WORKEROUTPUT_KEY]))
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
        worker's of the same engine and labeled set was (``evaluation.combine.misfit``), or None."""
        parts = [*shipped.evaluations, *shipped.shares]
        if not parts:
            return None
        from ..evaluation.combine import misfit, whole_of

        for d in parts:
            other, first = self._first.get((d["engine"], whole_of(d)), (None, None))
            found = misfit(first, d, other) if first is not None else None
            if found:
                return (f"its {d['engine']} on {d['labeled']['name']} does not fit {other}'s: "
                        f"field '{found[0]}': {found[1]}")
        for d in parts:
            self._first.setdefault((d["engine"], whole_of(d)), (wid, d))
        return None

    @property
    def heard_from_workers(self) -> bool:
        """A worker shipped retrieval results: the controller must report and gate them."""
        return bool(self.shipped)

    def gather(self, records: Shipped) -> Gathered:
        return Gathered(sorted(self.shipped.items()),
                        [f"{wid} ({why})" for wid, why in sorted(self.missing.items())])


def role_for(config: Any) -> Standalone:
    if hasattr(config, "workerinput"):
        return Worker()
    if config.pluginmanager.hasplugin("dsession"):
        return Controller()
    return Standalone()

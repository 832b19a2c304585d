"""Every process's records as one run: what the workers (or this process alone) shipped,
gathered by the reporting process's role (``plugin/roles.py``) and merged before the gate."""

from __future__ import annotations

from dataclasses import dataclass, field

from .roles import Gathered


@dataclass
class Merged:
    """Every process's records as one run."""

    evaluations: list
    lint: list
    snippets: dict[str, str]
    notes: list[str]  # what merging noticed (workers that ranked differently)
    missing: list[str]  # shares that never arrived: gate failures
    store: list[str]  # every process's store lines, a worker's prefixed with its id
    workers_said: list[str]  # the workers' store lines: the controller prints them
    warnings: list[str]
    chunk_docs: list[str] | None = None  # the document of each ingested chunk, when something was ingested
    usage: dict = field(default_factory=dict)  # every process's calls outside the engines' questions, summed


def merge(gathered: Gathered) -> Merged:
    """Records from several processes as one run (``evaluation/combine.combine``): one evaluation per
    (engine, labeled set), the first worker's where several evaluated it (a disagreement noted,
    never averaged away); shares of an evaluation (``--retrieval-shard``) put back together
    query for query, a share that never arrived a failure."""
    from .._usage import summed
    from ..evaluation.combine import combine

    shipped = [s for _, s in gathered.shipped]
    combined = combine([{"evaluations": [*s.evaluations, *s.shares], "lint": s.lint, "snippets": s.snippets}
                        for s in shipped], names=[None if o == "local" else o for o, _ in gathered.shipped])
    run = combined.run
    said = [f"{origin}: {line}" for origin, s in gathered.shipped if origin != "local" for line in s.store]
    store = said + [line for origin, s in gathered.shipped if origin == "local" for line in s.store]
    unused = {s.unused_ingestion for s in shipped}
    warnings = ([f"retrieval_ingest_pipeline {next(iter(unused))} did not run: no engine reads what it ingests "
                 "(name a query pipeline that does, retrieval_query_pipelines = NAME=PATH, or leave it out)"]
                if run.evaluations and len(unused) == 1 and None not in unused else [])
    warnings += dict.fromkeys(w for s in shipped for w in s.warnings)  # each once, whoever said it
    chunk_docs = next((s.chunk_docs for s in shipped if s.chunk_docs), None)
    return Merged(run.evaluations, run.lint, run.snippets, combined.notes, combined.missing, store, said, warnings,
                  chunk_docs, summed(*(s.usage for s in shipped)))

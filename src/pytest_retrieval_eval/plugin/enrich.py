"""The one step between the run as recorded (every process's evaluations, combined) and its
analysis: ``enrich`` returns a new run with what the reporting process adds to it, the
judgments file's grades (the LLM judge's first, ``--retrieval-judge``), corpus coverage, the
content fingerprints, and the candidate documents' novelty. The recorded run is never written
into. Each part asks the session for its inputs (the corpus, the labeled set, the ingested
chunks, the embedder) and says what went wrong as a gate failure."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from ..errors import RetrievalEvalError

if TYPE_CHECKING:
    from ..evaluation.results import RunResults
    from .session import RetrievalSession


@dataclass(frozen=True)
class Enriched:
    """The run with what ``enrich`` added, and what it could not add (gate failures)."""

    run: RunResults
    failures: list[str] = field(default_factory=list)


def enrich(run: RunResults, session: RetrievalSession, chunk_docs: list[str] | None) -> Enriched:
    """``run`` with its coverage (of the corpus, and of ``chunk_docs``: the document of each
    ingested chunk), the judgments file's grades (``--retrieval-judgments``, the judge asked first
    with ``--retrieval-judge``), the candidates' novelty (``--retrieval-candidates``) and the
    content fingerprints, as a new run; ``run`` itself when it evaluated nothing."""
    if not run.evaluations:
        return Enriched(run)
    j = session.config.judging
    run = replace(run, coverage=coverage(session, run, chunk_docs))
    failures: list[str] = []
    if j.judgments is not None:
        run, said = judgments(session, run)
        failures += said
    if j.candidates is not None:
        run, said = candidates(session, run)
        failures += said
    return Enriched(replace(run, fingerprints=fingerprints(session, run)), failures)


def judgments(session: RetrievalSession, run: RunResults) -> tuple[RunResults, list[str]]:
    """Grade the holes first (``--retrieval-judge``), then the file's judgments on every
    evaluation of a new run; what went wrong is a gate failure, never a silent pass on human labels."""
    from ..evaluation.judging import with_judgments_file
    from .inputs import shown

    path = session.config.judging.judgments
    try:
        judge = judge_holes(session, run) if session.config.judging.judge else None
        try:
            corpus = session.corpus()
        except RetrievalEvalError:  # engines of a team's own data: staleness unchecked, and said
            corpus = None
        report_dir = session.config.report.report_dir
        judged, found = with_judgments_file(
            run, path, shown_path=shown(path), corpus=corpus, judge=judge,
            results=shown(report_dir / "results.json") if report_dir is not None else None,
            panel=session.config.judging.panel,
            corpus_path=shown(session.config.data.corpus) if session.config.data.corpus else None)
    except RetrievalEvalError as exc:
        return run, [f"judgments {shown(path)}: {exc}"]
    if found is None:
        return run, [f"judgments {shown(path)}: the file holds no judgment by an LLM judge (a worksheet's human "
                     "grades fill no hole); grade the holes with --retrieval-judge "
                     "(or see python -m pytest_retrieval_eval judge --help)"]
    return judged, []


def coverage(session: RetrievalSession, run: RunResults, chunk_docs: list[str] | None) -> dict:
    """How much of the corpus the run's questions judge; empty when it has no corpus of ours."""
    from ..analysis.coverage import coverage_record

    try:
        corpus = session.corpus()
    except RetrievalEvalError:  # engines over a team's own data, no corpus configured
        return {}
    whole = session.whole  # a slice's coverage is the whole set's: every job says the same
    sets = {e.labeled.fingerprint: e.labeled for e in run.evaluations}
    if whole is not None and session.config.run.slice is not None:
        sets = {k: whole if l.name == whole.name else l for k, l in sets.items()}
    record = coverage_record(corpus.docs, sets.values(), chunk_docs)
    from ..data.set_checks import check_set

    checks = [f for labeled in sets.values() for f in check_set(labeled, corpus.docs)]
    if checks:  # the labeled set's own findings, read by the analysis (analysis/analyse.set_findings)
        record["checks"] = [[f.kind, list(f.query_ids), f.detail] for f in checks]
    return record


def fingerprints(session: RetrievalSession, run: RunResults) -> dict:
    """What the run measured, by content (``evaluation/fingerprints.py``): a later comparison
    across another corpus or judgments file names what changed."""
    from ..evaluation.fingerprints import record

    try:
        corpus = session.corpus()
    except RetrievalEvalError:  # engines over a team's own data, no corpus configured
        corpus = None
    judgments = session.config.judging.judgments
    return record(run, corpus, judgments=judgments if run.judgments and judgments is not None else None)


def candidates(session: RetrievalSession, run: RunResults) -> tuple[RunResults, list[str]]:
    """Each candidate's novelty against the corpus (semantic too, with the run's embedder),
    and the questions the judge says it answers, recorded on a new run."""
    from ..data.judgments import Judgments
    from ..evaluation.judging import candidates_record, used
    from .inputs import shown

    j = session.config.judging
    try:
        found = used(run)
        judgments = Judgments.load(j.judgments) if j.judgments is not None and found is not None else None
        ingested = session.ingested(session.config.hybrid.ingest)  # chunked already: not split again
        record = candidates_record(session.candidate_docs(), session.corpus(), session.config.hybrid.ingest,
                                   shown_path=shown(j.candidates), weight=j.novelty_weight,
                                   embed=session.embedder().embed, judgments=judgments,
                                   judge=found.judge if found is not None else None,
                                   chunks=ingested.chunks if ingested is not None else None, run=run)
    except RetrievalEvalError as exc:
        return run, [f"candidates {shown(j.candidates)}: {exc}"]
    return replace(run, candidates=record), []


def judge_holes(session: RetrievalSession, run: RunResults) -> str | None:
    """``--retrieval-judge``: grade the pooled holes into the judgments file; the judge's
    fingerprint (None with a panel, ``--retrieval-judges``: each member grades what it lacks)."""
    from ..data.judge import JudgeConfig, judge_pairs, judge_panel
    from ..evaluation.judging import pairs, pool
    from .inputs import shown

    j = session.config.judging
    config = JudgeConfig(model=j.model, votes=j.votes, concurrency=j.concurrency, rate=j.rate, max_tokens=j.max_tokens)
    todo, missing = pairs(pool(run, j.depth, j.engines), session.corpus())
    if j.candidates is not None:  # and what each candidate document would answer
        from ..evaluation.judging import candidate_pairs

        todo += candidate_pairs(session.candidate_docs(), run)
    if j.panel:
        _, reports = judge_panel(todo, j.judgments, j.panel, config, progress=session.progress)
    else:
        reports = [judge_pairs(todo, j.judgments, config, progress=session.progress)]
    for report in reports:
        session.progress(f"{shown(j.judgments)}: {report.summary()}"
                         + (f"; {len(missing)} pooled document(s) not in the corpus" if missing else ""))
        if report.failed and not report.asked and not report.reused:  # say the cause, not what it leaves behind
            first = next(iter(report.failed.values()))
            raise RetrievalEvalError(f"the judge graded nothing: all {len(report.failed)} call(s) failed, the first "
                                     f"with {first}")
    return None if j.panel else reports[0].judge.fingerprint  # the model the server says answered

"""``check``: is the questions cache stale against the corpus; with ``--labels`` (``--training``,
``--results``), is the labeled set any good.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import RetrievalEvalError
from .corpus import judge_corpus, open_named, project_ini, shown_path


def _check_files(args) -> Any:
    """``check``'s corpus (loaded) and questions, each from the command line, else the project's
    ini file (its paths relative to the file, as the plugin reads them), else, for the corpus, the
    one the ``--results`` run searched, else ``corpus`` and ``questions.cache.json``; a corpus
    not found says how to name it. Sets ``args.corpus`` and ``args.questions`` as messages show them."""
    from ..data.corpus import open_corpus

    found = project_ini()
    ini = found[1] if found else {}
    for key, default in (("corpus", "corpus"), ("questions", "questions.cache.json")):
        if getattr(args, key) is None:
            value = ini.get(f"retrieval_{key}", "").strip()
            setattr(args, key, shown_path((found[0].parent / value).resolve()) if value else None)
    if args.corpus is not None:
        return open_named(open_corpus, args.corpus, f"--corpus={args.corpus}" if found is None or
                           "retrieval_corpus" not in ini else f"retrieval_corpus in {shown_path(found[0])}")
    args.questions = args.questions or "questions.cache.json"
    searched = ""
    if args.results:
        from ..archive.saved import load_saved

        try:
            corpus, args.corpus = judge_corpus(load_saved(args.results).run, args)
            return corpus
        except RetrievalEvalError as exc:
            searched = f"; {exc}"
    args.corpus = "corpus"
    return open_named(open_corpus, "corpus", "the default", searched)


def main(args) -> int:
    from ..data.staleness import check, chunk_fingerprints, drop_command, regenerate_command, stamp_command
    from ..data.label_files import load_labels

    corpus = _check_files(args)
    labeled = load_labels(Path(args.questions))
    stale = check(labeled, corpus, chunk_fingerprints(corpus, labeled))
    stamp = stamp_command(args.corpus, args.questions)
    if stale.corpus_changed:
        old, new = stale.corpus_changed
        print(f"note: the corpus changed since {args.questions} was written (fingerprint {old[:12]} -> {new[:12]})")
    if stale.unchecked:
        print(stale.unchecked_message(args.questions, len(labeled), stamp))
    checked = len(labeled) - len(stale.unchecked)
    if stale:
        print(stale.describe(args.questions, args.corpus, regenerate_command(args.corpus, args.questions), stamp,
                             drop_command(args.corpus, args.questions)))
        status = 1
    elif not checked:  # nothing compared: never "up to date"
        print(f"{args.questions}: none of {len(labeled)} questions checked against {args.corpus}")
        status = 1
    else:
        print(f"{args.questions}: {checked} of {len(labeled)} questions checked, up to date with {args.corpus}")
        status = 0
    if args.labels or args.training or args.results or args.accept:
        status = max(status, _check_set(args, labeled, corpus))
    return status


def _check_set(args, labeled, corpus) -> int:
    """``check --labels``: the set's own findings, each naming its questions; 1 when one is neither
    accepted (``--accept``, ``data/accepted_findings.py``) nor fixed, or an accepted one is gone."""
    from ..data import accepted_findings
    from ..data.set_checks import KINDS, check_set, read_training
    from ..analysis import set_signal as signal
    from ..analysis.set_signal import lines

    training = read_training(args.training) if args.training else []
    findings = check_set(labeled, corpus.docs, training)
    against = f" and {len(training)} training questions in {args.training}" if args.training else ""
    if args.results:
        from ..analysis.analyse import analyse
        from ..archive.saved import load_saved

        saved = load_saved(args.results)
        recorded = saved.analysis or analyse(saved.run, saved.settings)  # a file without one: made now
        measure = f"hit@{recorded.miss_k}"
        findings += [f for f in recorded.labeled_set if f.kind in signal.KINDS]  # the rankings' own findings
        against += f" and the rankings in {args.results} ({measure})"
    default = accepted_findings.default_file(args.questions)
    file = args.accept or (str(default) if default.is_file() else None)
    entries = accepted_findings.read_accepted(file, (*KINDS, *signal.KINDS)) if file else []
    checked = {*(k for k in KINDS if k != "training_copy" or args.training), *(signal.KINDS if args.results else ())}
    found = accepted_findings.sort_findings(findings, entries, checked)
    also = (f", {len(found.accepted)} accepted in {file}" if found.accepted else "") + (
        f", {len(found.stale)} stale entr{'y' if len(found.stale) == 1 else 'ies'} in {file}" if found.stale else "")
    print(f"labeled set {args.questions}: {len(labeled)} questions checked against {args.corpus}{against}: "
          + (f"{len(findings)} finding(s)" if findings else "no findings") + also)
    into = file or str(default)
    for f, line in zip(found.failing, lines(found.failing)):
        print(f"  {line}")
        print(f"    to accept it, add this line to {into} and write why in reason: {accepted_findings.entry(f)}")
    for f, e in found.accepted:
        print(f"  accepted: {f.kind}: {', '.join(f.query_ids)} ({file}:{e.line}: {e.reason})")
    for e in found.stale:
        print(f"  {file}:{e.line}: {accepted_findings.stale_line(e, found.failing)}")
    if found.unchecked:
        needs = sorted({"--results" if e.kind in signal.KINDS else "--training" for e in found.unchecked})
        print(f"  {file}: {len(found.unchecked)} entr{'y' if len(found.unchecked) == 1 else 'ies'} of kinds this "
              f"check did not look for (they need {' or '.join(needs)}): neither matched nor stale")
    return 1 if found.failed() else 0


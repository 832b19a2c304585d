"""``judge``: an LLM grades the unjudged documents of a saved run's top K (``--calibrate``,
``--validate``: its agreement with the humans; ``--recheck``: with its own stored grades).
"""

from __future__ import annotations

import os
from pathlib import Path

from ..data.grades import RELEVANT_FROM
from ..data.judge_agreement import KAPPA_FLOOR
from ..errors import RetrievalEvalError
from .corpus import judge_corpus
from .worksheet import import_worksheet, write_worksheet
from ..analysis.scores import Scores


def main(args) -> int:
    """Pool the holes of a saved run, grade what the file lacks, and say what the judgments change."""
    import shlex

    from ..data.corpus import open_corpus
    from ..data.judge import JudgeConfig
    from ..archive.saved import load_run
    from ..evaluation.judging import candidate_pairs, candidates_record, pairs, pool, with_judgments

    run = load_run(args.results)
    if args.import_worksheet is not None:
        return import_worksheet(run, args)
    corpus, corpus_arg = judge_corpus(run, args)
    if args.worksheet is not None:
        return write_worksheet(run, corpus, corpus_arg, args)
    model = args.judge_model or os.environ.get("RETRIEVAL_EVAL_JUDGE_MODEL") or None
    config = JudgeConfig(model=model, url=args.base_url, temperature=args.temperature,
                         votes=args.judge_votes, concurrency=args.judge_concurrency, rate=args.judge_rate,
                         max_tokens=args.judge_max_tokens)
    path = Path(args.judgments)
    if args.recheck is not None:
        return _recheck(run, corpus, corpus_arg, args, config, path)
    if args.calibrate or args.validate:
        return _agreement(run, corpus, corpus_arg, args, config, path)
    engines = tuple(args.judge_engine or ())
    holes = pool(run, args.judge_depth, engines)
    todo, missing = pairs(holes, corpus)
    if holes and not todo:  # no text to grade: never "judged 0" and a pass
        raise RetrievalEvalError(f"none of the {len(holes)} pooled document(s) is in the corpus {corpus_arg} (the run "
                                 f"searched {run.evaluations[0].corpus or 'another'}): give the corpus the run "
                                 "searched with --corpus=PATH", path=args.results)
    candidates = open_corpus(args.candidates).load() if args.candidates else None
    if candidates is not None:  # each candidate against the labeled questions nearest to it
        todo += candidate_pairs(candidates, run)
    ks = sorted({args.judge_depth, 10})
    before = {e.key: {**{k: Scores.of(e).mean(f"judged@{k}") for k in ks}, "ndcg@10": Scores.of(e).mean("ndcg@10")}
              for e in run.evaluations}
    print(f"{path}: pooled {len(holes)} unjudged document(s) of the top {args.judge_depth} of "
          f"{', '.join(engines) or 'every engine'}"
          + (f"; {len(missing)} not in the corpus ({', '.join(missing[:3])})" if missing else ""), flush=True)
    judge, judgments, failed = _grade(todo, path, config, args)
    if any(j.judge.fingerprint == judge.fingerprint for j in judgments):  # none when humans judged every one
        from ..data.validation import load as load_validations, validation_path

        run, found = with_judgments(run, judgments, shown_path=str(path), judge=judge.fingerprint,
                                    fingerprints={d.doc_id: d.fingerprint for d in corpus.docs},
                                    validations=load_validations(validation_path(path)), results=str(args.results),
                                    corpus=str(args.corpus) if args.corpus else None)
        if args.judges:
            print(f"the panel's members: {judgments.agreement(judge, ('hole',)).describe()}")
        for e in run.evaluations:
            was = before[e.key]
            judged = ", ".join(f"judged@{k} {was[k]:.3f} -> {Scores.of(e).mean(f'judged@{k}+judged'):.3f}" for k in ks)
            print(f"{e.engine}: {judged}; ndcg@10 {was['ndcg@10']:.4f}, ndcg@10+judged {Scores.of(e).mean('ndcg@10+judged'):.4f}")
        for warning in found.warnings():
            print(f"warning: {warning}")
        print(f"the numbers on both: python -m pytest_retrieval_eval report {shlex.quote(str(args.results))} "
              f"--judgments {shlex.quote(str(path))} --corpus {corpus_arg}")
    if candidates is not None:
        from ..data.chunking import Chunking
        from ..data.novelty import Novelty

        split = Chunking(split_length=args.split_length, split_overlap=args.split_overlap)
        record = candidates_record(candidates, corpus, split, shown_path=str(args.candidates), weight=0.0,
                                   judgments=judgments, judge=judge, run=run)
        print(f"candidates ({len(record['items'])} from {args.candidates}), lexical novelty against {corpus_arg}:")
        for item in record["items"]:
            print(f"  {Novelty.from_dict(item).describe()}")
    return 1 if failed else 0


def _agreement(run, corpus, corpus_arg: str, args, config, path: Path) -> int:
    """``judge --calibrate`` and ``--validate``: the judge grades documents the humans judged, and
    its agreement with them is printed; ``--validate`` hides every human label (relevant and not,
    a worksheet's too), draws uniformly, stores the result per judge and fails below the floor."""
    from ..data.judgments import Judgments
    from ..data.validation import store, validation_path
    from ..evaluation.judging import calibration_pairs, engine_order, question_hashes
    from ..evaluation.validation import draw, hidden_labels, measured, passes, record

    hidden = hidden_labels(run, corpus, Judgments.load(path)) if args.validate else []
    drawn = draw(hidden, args.sample) if args.validate else []
    todo = [h.pair for h in drawn] if args.validate else calibration_pairs(run, corpus, args.sample)
    if not todo:
        raise RetrievalEvalError(f"none of the documents the labels judge is in the corpus {corpus_arg}: give the "
                                 "corpus the run searched with --corpus=PATH", path=args.results)
    judge, judgments, failed = _grade(todo, path, config, args)
    agreement = None
    if args.validate:
        calibration, order, missing = measured(run, drawn, judgments, judge)
        print(f"validation of {judge.describe()} on {calibration.n} of the {len(hidden)} human label(s) "
              f"hidden from it (a seeded uniform draw of --sample={args.sample})"
              + (f"; {missing} not graded (failed)" if missing else "") + ":")
        if args.judges:  # the members' agreement on the drawn pairs they all graded
            from ..data.judge_agreement import Agreement

            rows = [j.votes for h in drawn if (j := judgments.get(h.pair.query_id, h.pair.doc_id, judge, h.pair.kind))]
            agreement = Agreement.of(judge.members, rows)
    else:
        calibration = judgments.calibration(judge, question_hashes(run))
        order = engine_order(run, judgments.of_kind("calibration", judge, question_hashes(run)))
        print(f"calibration of {judge.describe()} on {calibration.n} pairs the humans judged:")
        if args.judges:
            agreement = judgments.agreement(judge, ("calibration",))
    if agreement is not None:
        print(f"the panel's members: {agreement.describe()}")
    print(f"{calibration.describe()} (relevant: human grade >= 1, a worksheet's and the judge's >= {RELEVANT_FROM}; "
          f"below kappa {KAPPA_FLOOR} every run using this judge warns)")
    if calibration.n:
        print(f"base rate: {calibration.base_rate:.0%} of the {calibration.n} human labels relevant "
              "(kappa is read against it: near 0% or 100% it swings on a few pairs)")
    print("\n".join(calibration.confusion_lines()))
    print("\n".join(order.lines()))
    if not args.validate:
        return 1 if failed else 0
    if failed:
        print("not stored: some pairs failed; run it again to ask for them")
        return 1
    where = validation_path(path)
    stored = record(run, calibration, order, len(hidden))
    if agreement is not None:
        stored["members_agreement"] = agreement.to_dict()
    store(where, judge.fingerprint, stored)
    ok = passes(calibration)
    print(f"judge {judge.fingerprint} {'meets' if ok else 'FAILS'} the floor (Cohen's kappa >= {KAPPA_FLOOR} on "
          f"human labels of both kinds); stored in {where}")
    return 0 if ok else 1


def _grade(todo, path: Path, config, args):
    """(the judge, the file's judgments as it reads them, whether some pair failed) after the
    judge grades ``todo``: the one judge of ``config``, or each member of the panel ``--judges``
    names (then read as one, by majority)."""
    from ..data.judge import judge_pairs, judge_panel
    from ..data.judgments import Judgments

    progress = lambda m: print(m, flush=True)  # noqa: E731
    if not args.judges:
        report = judge_pairs(todo, path, config, progress=progress)
        print(f"{path}: {report.summary()}")
        return report.judge, Judgments.load(path), bool(report.failed)
    if args.judge_model:
        raise RetrievalEvalError("--judges names the panel's judges, each with its own model: leave out --model")
    panel, reports = judge_panel(todo, path, _panel_of(args), config, progress=progress)
    for report in reports:
        print(f"{path}: {report.summary()}")
    judgments, panel = Judgments.load(path).with_panel([m.fingerprint for m in panel.members])
    return panel, judgments, any(r.failed for r in reports)


def _panel_of(args) -> tuple[str, ...]:
    from ..plugin.config import panel_of

    return panel_of(args.judges)


def _recheck(run, corpus, corpus_arg: str, args, config, path: Path) -> int:
    """``judge --recheck=N``: N of the judge's stored grades asked again with the same settings
    (into a file of their own, thrown away), compared with the stored ones, kept per judge; exit 1
    when the judge drifted (or a pair failed: nothing is stored then)."""
    import shlex
    import tempfile
    import time

    from ..data.judge import judge_pairs
    from ..data.judgments import Judgments
    from ..data.recheck import KEPT_FLOOR, RECHECK_FLOOR, Recheck, draw, recheck_path, store, stored_pairs
    from ..evaluation.judging import doc_text

    judgments = Judgments.load(path)
    judge = config.known_judge(judgments)
    if judge is None:
        raise RetrievalEvalError(f"no grade in the file by the judge these settings ask for ({config.judge.describe()}): "
                                 "give the judge's own --model=NAME, --temperature and --votes", path=path)
    questions = {q.query_id: q.asked for e in run.evaluations for q in e.labeled.queries}
    found = stored_pairs(judgments, judge, questions, corpus, doc_text)
    if not found:
        raise RetrievalEvalError(f"judge {judge.fingerprint} stored no grade of a question of this run and a document of "
                                 f"{corpus_arg} that still read as they did: nothing to ask again", path=path)
    drawn = draw(found, args.recheck)
    with tempfile.TemporaryDirectory(prefix="retrieval-recheck-") as folder:
        report = judge_pairs([p for p, _ in drawn], Path(folder) / "recheck.jsonl", config,
                             progress=lambda m: print(m, flush=True))
        now = {(j.kind, j.query_id, j.doc_id): j.grade for j in Judgments.load(Path(folder) / "recheck.jsonl")}
    if report.failed:
        print(f"recheck: {report.summary()}")
        print("not stored: some pairs failed; run it again to ask for them")
        return 1
    other = report.judge if report.judge.fingerprint != judge.fingerprint else None
    result = Recheck(judge, [(j.grade, now[(p.kind, p.query_id, p.doc_id)]) for p, j in drawn], len(found), other)
    print(f"recheck of {judge.describe()} on {result.n} of its {len(found)} stored grade(s) (a seeded draw of "
          f"--recheck={args.recheck}); the judgments file is not changed:")
    print(result.describe())
    if other is not None:
        print(f"note: the server now names another model as answering ({other.model}, fingerprint {other.fingerprint})")
    where = recheck_path(path)
    store(where, judge.fingerprint, result.record(time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())))
    floor = (f"the same relevance on at least {RECHECK_FLOOR:.0%} of the pairs, and on at least {KEPT_FLOOR:.0%} "
             "of those stored as relevant and of those stored as not")
    if not result.drifted:
        print(f"judge {judge.fingerprint} gives the grades it stored ({floor}); stored in {where}")
        return 0
    again = path.with_name(f"{path.stem}.rejudged{path.suffix}")
    command = (f"python -m pytest_retrieval_eval judge {shlex.quote(str(args.results))} "
               f"--judgments={shlex.quote(str(again))} --corpus={corpus_arg}"
               + (f" --model={shlex.quote(config.model)}" if config.model else "")
               + (f" --base-url={shlex.quote(args.base_url)}" if args.base_url else "")
               + (f" --temperature={config.temperature:g}" if config.temperature else "")
               + (f" --votes={config.votes}" if config.votes != 1 else ""))
    print(f"judge {judge.fingerprint} DRIFTED: graded again on {result.n} of its stored pairs, {result.why_drifted}: "
          f"the model changed under the same name; stored in "
          f"{where}: every run using its grades warns until a recheck meets the floor. To grade again into a new "
          f"file: {command}")
    return 1


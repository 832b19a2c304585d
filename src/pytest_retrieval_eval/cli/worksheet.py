"""``judge --worksheet`` and ``--import-worksheet``: a CSV for a person to grade, and its grades
recorded.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import RetrievalEvalError
from .corpus import judge_corpus


def write_worksheet(run, corpus, corpus_arg: str, args) -> int:
    """``judge --worksheet=N``: N questions not yet human-judged, every pooled document of their
    top K, as a CSV for a person, with its README (the scale) beside it."""
    import shlex

    from .._atomic import write_text_atomic
    from ..data.judgments import Judgments
    from ..data.worksheet import readme, worksheet_csv
    from ..evaluation.judging import question_hashes
    from ..evaluation.worksheet import choose, sheet_rows

    if args.judge_engine:
        raise RetrievalEvalError("a worksheet pools every engine, so its questions are completely judged: leave out "
                                 "--engine")
    path = Path(args.worksheet_file)
    command = (f"python -m pytest_retrieval_eval judge {shlex.quote(str(args.results))} "
               f"--import-worksheet={shlex.quote(str(path))} --judgments={shlex.quote(str(args.judgments))}"
               + (f" --corpus={corpus_arg}" if args.corpus is not None else ""))
    _keep_filled_sheet(path, args, command)
    done = Judgments.load(args.judgments).human_judged(question_hashes(run))
    rows, lacking = sheet_rows(run, corpus, args.judge_depth)
    eligible = [qid for qid in rows if qid not in done]
    picked = choose(run, eligible, args.worksheet)
    if not picked:
        raise RetrievalEvalError(f"no question left to put on a worksheet ({len(done)} already human-judged in "
                                 f"{args.judgments}, {len(lacking)} with a pooled document not in the corpus "
                                 f"{corpus_arg})", path=args.results)
    sheet = [r for qid in picked for r in rows[qid]]
    write_text_atomic(path, worksheet_csv(sheet, args.judge_depth))
    write_text_atomic(path.with_suffix(".README.md"), readme(path.name, len(picked), len(sheet), args.judge_depth,
                                                             command))
    print(f"{path}: {len(picked)} question(s), {len(sheet)} document(s) to grade 0-3 (every engine's top "
          f"{args.judge_depth} and the labeled documents); the scale: {path.with_suffix('.README.md')}")
    short = [f"{len(eligible)} question(s) to pick from"] if len(picked) < args.worksheet else []
    short += [f"{len(done)} already human-judged"] if done else []
    short += [f"{len(lacking)} left out, a pooled document not in the corpus ({', '.join(sorted(lacking)[:3])})"
              ] if lacking else []
    if short:
        print(f"note: {'; '.join(short)}")
    print(f"when filled: {command}")
    return 0


def _keep_filled_sheet(path: Path, args, import_command: str) -> None:
    """Refuse to write a new sheet over one that holds grades (a person's work): in one line, the
    command that records them when some are not in the judgments file, else where to write."""
    import shlex

    from ..data.judgments import Judgments
    from ..data.worksheet import filled_in

    held = filled_in(path)
    if not held:
        return
    recorded = {(j.query_id, j.doc_id): j.grade for j in Judgments.load(args.judgments) if j.kind == "human"}
    new = sum(g is None or recorded.get((q, d)) != g for q, d, g in held)
    free = next(p for n in range(2, 10_000) if not (p := path.with_name(f"{path.stem}-{n}{path.suffix}")).exists())
    elsewhere = (f"python -m pytest_retrieval_eval judge {shlex.quote(str(args.results))} --worksheet={args.worksheet} "
                 f"--judge-depth={args.judge_depth} --worksheet-file={shlex.quote(str(free))} "
                 f"--judgments={shlex.quote(str(args.judgments))}"
                 + (f" --corpus={shlex.quote(str(args.corpus))}" if args.corpus is not None else ""))
    if new:
        raise RetrievalEvalError(f"holds {len(held)} grade(s), {new} of them not recorded in {args.judgments}: a new "
                                 f"sheet is not written over them; record them with `{import_command}`, or write the "
                                 f"new sheet beside it with `{elsewhere}`", path=path)
    raise RetrievalEvalError(f"holds {len(held)} grade(s), recorded in {args.judgments}: a new sheet is not written "
                             f"over a filled one; write it beside it with `{elsewhere}`", path=path)


def import_worksheet(run, args) -> int:
    """``judge --import-worksheet=FILE``: the filled sheet's grades into the judgments file, in one
    atomic write; any row refused (a document changed since the sheet was written among them:
    checked against the corpus, ``--corpus`` or the one the run searched), nothing written."""
    from .._atomic import locked
    from ..data.judgments import Judgments, rewrite
    from ..data.worksheet import read_worksheet
    from ..evaluation.worksheet import checked, unchanged_documents

    sheet = read_worksheet(args.import_worksheet)
    judgments = checked(sheet, run)
    unchanged_documents(sheet, judge_corpus(run, args)[0])  # each grade of the text the person read
    path = Path(args.judgments)
    with locked(path):
        rewrite(path, Judgments([*Judgments.load(path), *judgments], path))
    questions = len({j.query_id for j in judgments})
    print(f"{path}: recorded {len(judgments)} human grade(s) of {questions} question(s) from {args.import_worksheet}, "
          f"each question human-judged to depth {sheet.depth}")
    return 0


"""``label import|list|remove|stamp``: bring your own labels into the questions cache.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import RetrievalEvalError


def main(args) -> int:
    from ..data.corpus import open_corpus
    from ..data.label_files import is_team_file, read_labels
    from ..data.label_tables import Columns
    from ..data.label_import import import_labels
    from ..data.label_lifecycle import remove_labels, stamp_cache
    from ..data.staleness import remove_command, stamp_command

    if args.verb in ("remove", "stamp") and is_team_file(args.questions):  # the team's file: never rewritten
        raise RetrievalEvalError(
            f"{Path(args.questions).name} is the team's own file, never rewritten: "
            + (f"it has no place for fingerprints; import it into a questions cache, which records them: "
               f"{stamp_command(args.corpus, args.questions)}" if args.verb == "stamp" else
               f"delete the line of {', '.join(map(repr, args.ids))} from it"), path=args.questions)
    if args.verb == "remove":
        removed = remove_labels(args.questions, args.ids)
        print(f"{args.questions}: removed {len(removed)}: {', '.join(removed)}")
        return 0
    corpus = open_corpus(args.corpus).load()
    if args.verb == "list":
        return _label_list(args, corpus)
    if args.verb == "stamp":
        before, done = stamp_cache(args.questions, corpus, drop_deleted=args.drop_deleted,
                                   command=stamp_command(args.corpus, args.questions))
        for line in done.lines():
            print(line)
        gone = (f"; {len(done.removed)} question{'s' * (len(done.removed) != 1)} removed ({', '.join(done.removed)})"
                if done.removed else "")
        changed = done.restamped
        restamped = (f", {len(changed)} re-stamped as changed: {', '.join(changed[:5])}"
                     + (f" and {len(changed) - 5} more" if len(changed) > 5 else "") if changed else "")
        print(f"{args.questions}: fingerprints recorded ({before} question(s) were unchecked{restamped}){gone}")
        return 0
    columns = Columns(args.question_column, args.doc_column, args.grade_column, args.id_column)
    entries = read_labels(args.file, fmt=args.format, columns=columns, split=args.split, qrels=args.qrels,
                          rewrites=args.rewrites)
    report = import_labels(entries, corpus, args.questions, origin=args.file, sync=args.sync)
    for note in [*getattr(entries, "notes", ()), *report.notes]:
        print(f"note: {note}")
    left = getattr(entries, "left_out", [])
    said = (f"; {len(left)} conversation{'s' * (len(left) != 1)} had no labeled turn (left out"
            + (f": {', '.join(left[:5])}{' ...' if len(left) > 5 else ''})" if left else ")")) if left else ""
    print(f"{args.questions}: imported {_counted(entries)} from {args.file}: {report.summary()}{said}")
    if report.removed:
        print(f"removed (gone from {args.file}): {', '.join(report.removed)}")
    if report.unproven:
        name = str(entries[0].source.get("by", "")).split(":", 1)[-1]
        print(f"note: kept {len(report.unproven)} question(s) gone from {args.file} that an older version recorded "
              f"only as imported from a file named {name}, which may be another folder's: "
              f"{', '.join(report.unproven)}; if they came from this file, remove them with: "
              f"{remove_command(args.questions, report.unproven)}")
    return 0


def _counted(entries) -> str:
    """``3 conversations, 15 turns`` (and ``2 questions,`` beside them): what an import read, a
    conversation's turns counted as its turns, not as questions of their own."""
    turns = [e for e in entries if e.conversation is not None]
    conversations, single = len({e.conversation for e in turns}), len(entries) - len(turns)
    if not turns:
        return str(single)
    unanswerable = sum(1 for e in turns if not e.answerable)
    return ", ".join([*([f"{single} question{'s' if single != 1 else ''}"] if single else []),
                      f"{conversations} conversation{'s' if conversations != 1 else ''}",
                      f"{len(turns)} turn{'s' if len(turns) != 1 else ''}"]) + (
        f" ({unanswerable} unanswerable)" if unanswerable else "")


def _label_list(args, corpus) -> int:
    """One line per question: id, state, gold documents, question; what changed for a stale one."""
    from ..data.label_files import load_labels
    from ..data.staleness import check, chunk_fingerprints, state

    labeled = load_labels(Path(args.questions))
    stale = check(labeled, corpus, chunk_fingerprints(corpus, labeled))
    why = stale.why()
    for q in labeled:
        gold = ";".join(d for d, g in sorted(q.relevant.items()) if g >= 1)
        extra = f" ({', '.join(why[q.query_id])})" if q.query_id in why else ""
        print(f"{q.query_id}\t{state(q.query_id, stale)}{extra}\t{gold}\t{q.question}")
    for q in labeled.unanswerable:  # no relevant document exists: nothing to be fresh or stale
        print(f"{q.query_id}\tunanswerable\t\t{q.question}")
    counts = {s: sum(state(q.query_id, stale) == s for q in labeled) for s in ("fresh", "stale", "unchecked")}
    lost = len(labeled.unanswerable)
    print(f"{args.questions}: {len(labeled)} questions: " + ", ".join(f"{n} {s}" for s, n in counts.items())
          + (f"; {lost} unanswerable turn{'s' * (lost != 1)}" if lost else ""))
    return 0


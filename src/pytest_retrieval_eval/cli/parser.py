"""The command line's one parser: every verb and its options, those shared with the pytest plugin
declared once (``plugin/options.py``).
"""

from __future__ import annotations

import argparse

from ..plugin.options import add_to_argparse
from . import __doc__ as described  # the package's: the commands it runs


def make_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m pytest_retrieval_eval",  # --help is plain text, not reST
                                     description=described.split("\n\n")[0].replace("``", ""))
    sub = parser.add_subparsers(dest="command", required=True)
    files = {"corpus": "corpus", "questions": "questions.cache.json"}

    gen = sub.add_parser("generate", help="generate missing or stale questions with an LLM")
    add_to_argparse(gen, "generate", **files)
    mode = gen.add_mutually_exclusive_group()
    mode.add_argument("--only-missing", action="store_true", help="only chunks without a fresh question (default)")
    mode.add_argument("--regenerate", action="store_true",
                      help="a new question for every chunk (imported and hand-written questions are kept)")
    gen.add_argument("--base-url", default=None, help="OpenAI-compatible base URL (default: RETRIEVAL_EVAL_BASE_URL or OpenRouter)")
    gen.add_argument("--concurrency", type=_whole, default=None, metavar="N",
                     help="calls in flight at once (default: 1 at a local or private server, which answers one "
                          "request at a time; 4 at a hosted endpoint)")
    gen.add_argument("--max-tokens", type=_whole, default=None, metavar="N",
                     help="the longest answer the model may give, in tokens (default 128; twice that for a "
                          "conversation): an answer the cap cuts is counted")
    gen.add_argument("--follow-ups", type=int, default=0, metavar="N",
                     help="also write a two-turn conversation (a question, then a follow-up that needs it) for up "
                          "to N chunks (docs/conversations.md)")
    check = sub.add_parser("check", help="is the questions cache stale against the corpus? with --labels, "
                           "--training or --results: is the labeled set any good?")
    # not given: the project's ini file (as pytest finds it), then the corpus a --results run searched
    add_to_argparse(check, "check", corpus=None, questions=None)
    check.add_argument("--labels", action="store_true",
                       help="also check the set itself: near-duplicate questions, questions leaking their "
                            "document's title or copying its passage (exit 1 on a finding not accepted, see --accept)")
    check.add_argument("--training", default=None, metavar="FILE",
                       help="training or tuning questions (.txt one a line, or .jsonl with 'question'): name the "
                            "set's near-copies of them (implies --labels)")
    check.add_argument("--results", default=None, metavar="RESULTS",
                       help="a saved run's results.json: name the questions every engine answers at rank 1 and "
                            "warn when the metadata-only keyword engine is as good as the best (implies --labels)")
    check.add_argument("--accept", default=None, metavar="FILE",
                       help="findings accepted, one JSON object a line with its kind, questions and reason "
                            "(default, when present: the questions file's name ending .accepted.jsonl, "
                            "labels.json -> labels.accepted.jsonl; implies --labels)")
    sub_ = sub.add_parser("subset", help="write the N questions of a saved run that best separate its engines "
                          "(or runs) as a subset a run selects with --retrieval-subset=NAME")
    sub_.add_argument("results", nargs="+", metavar="RESULTS",
                      help="one results.json (its engines are compared) or several of past runs, history records "
                           "too (every engine of every run)")
    sub_.add_argument("--size", type=_whole, default=20, metavar="N", help="questions in the subset (default 20)")
    sub_.add_argument("--name", default="pr", help="the subset's name (default pr)")
    sub_.add_argument("--measure", default=None,
                      help="the per-question measure compared (default: the first max-drop rule's, else hit@K at the "
                           "run's miss cutoff)")
    sub_.add_argument("--dir", default="subsets", metavar="DIR",
                      help="where NAME.json is written (default subsets, where --retrieval-subset=NAME looks)")
    label = sub.add_parser("label", help="bring your own labels: import, list, remove, or stamp fingerprints")
    verbs = label.add_subparsers(dest="verb", required=True)
    imp = verbs.add_parser("import", help="merge labeled questions from a CSV/TSV, JSONL, qrels.jsonl, BEIR folder, "
                                          "MTRAG's files or a CAsT / iKAT topic file")
    imp.add_argument("file", help="the labels: .csv, .tsv, .jsonl (incl. rig-style qrels.jsonl), a BEIR folder, MTRAG's "
                                  "retrieval tasks or conversation file, or a CAsT / iKAT topic file (with --qrels)")
    add_to_argparse(imp, "check", **files)
    imp.add_argument("--format", default="auto", choices=["auto", "csv", "tsv", "jsonl", "qrels-jsonl", "beir", "mtrag",
                                                          "mtrag-conversations", "topics"])
    imp.add_argument("--qrels", default=None, metavar="FILE",
                     help="the TREC qrels of a CAsT / iKAT topic file (query ids topic_turn)")
    imp.add_argument("--rewrites", default=None, metavar="PATH",
                     help="MTRAG's human rewrites (a *_rewrite.jsonl, or a folder of retrieval tasks) for the turns of "
                          "an MTRAG conversation file")
    imp.add_argument("--question-column", default=None, help="CSV/TSV header of the question (default: question or query)")
    imp.add_argument("--doc-column", default=None,
                     help="CSV/TSV header of the judged doc id(s) (default: doc_id(s), docid, document_id, gold, relevant)")
    imp.add_argument("--grade-column", default=None,
                     help="CSV/TSV header of the relevance grade (default: grade or relevance; without one, 1)")
    imp.add_argument("--id-column", default=None,
                     help="CSV/TSV header of the query id (default: query_id, qid or id; else from the question's text)")
    imp.add_argument("--split", default="test", help="BEIR qrels split (default: test)")
    imp.add_argument("--sync", action="store_true",
                     help="the file is the source of truth for the questions it brought: those gone from it are removed")
    stamp = verbs.add_parser("stamp", help="record the judged documents' fingerprints in a hand-edited cache")
    add_to_argparse(stamp, "check", **files)
    stamp.add_argument("--drop-deleted", action="store_true",
                       help="drop judgments of documents deleted from the corpus (a question left with none goes too)")
    rm = verbs.add_parser("remove", help="remove questions from the cache by id")
    rm.add_argument("ids", nargs="+", metavar="ID", help="question ids, as 'label list' shows them")
    add_to_argparse(rm, "check", **files)
    ls = verbs.add_parser("list", help="every question: id, question, gold documents, state (fresh, stale, unchecked)")
    add_to_argparse(ls, "check", **files)
    corp = sub.add_parser("corpus", help="build a corpus from a benchmark's files")
    cverbs = corp.add_subparsers(dest="verb", required=True)
    mtrag = cverbs.add_parser("from-mtrag", help="a corpus of every passage MTRAG's conversation files quote (a subset "
                                                 "of the benchmark's corpus, not the corpus itself)")
    mtrag.add_argument("files", nargs="+", metavar="FILE", help="MTRAG conversation files (reference*.jsonl, .json)")
    mtrag.add_argument("--out", required=True, metavar="DIR", help="the corpus folder to write (passages.jsonl)")
    rep = sub.add_parser("report", help="judge a saved results.json again; rebuild its artefacts with --out; "
                                        "'report merge A.json B.json ...' combines the slices of CI jobs; "
                                        "'report comment RESULTS' prints a pull-request comment")
    rep.add_argument("results", nargs="+", metavar="RESULTS",
                     help="a results.json written by --retrieval-report-dir or --retrieval-save-baseline; or merge "
                          "followed by every slice's results.json (--retrieval-slice I/N jobs)")
    add_to_argparse(rep, "report", alpha=None, measures=None, noise_aware=None, baseline_force=None,
                    correction=None, confidence=None, corpus=None, allow_failed_judge=None, inconclusive=None)
    rep.add_argument("--out", default=None, metavar="DIR",
                     help="write the report folder (results.md, results.json, per_query.jsonl, runs/, qrels, plot)")
    rep.add_argument("--html", default=None, metavar="PATH", help="write the drill-down page")
    rep.add_argument("--markdown", action="store_true", help="print the Markdown report instead of the table")
    rep.add_argument("-v", "--verbose", action="count", default=0,
                     help="the run's detail too (differences, configurations, judged@k ...), as pytest -v shows it")
    cal = sub.add_parser("calibrate", help="rerun a saved run against itself: how often each rule fails the "
                                          "unchanged engines (false-fail rate) and catches an injected drop (power)")
    cal.add_argument("results", metavar="RESULTS",
                     help="a results.json (or a baseline file) with its settings; engines with repeated trials "
                          "(--retrieval-trials) are rerun from them, the others on resampled questions")
    add_to_argparse(cal, "calibrate", alpha=None, noise_aware=None, correction=None, confidence=None)
    cal.add_argument("--reruns", type=_whole, default=200, metavar="N",
                     help="reruns unchanged, and as many per drop injected (default 200)")
    cal.add_argument("--drop-sizes", type=_drop_sizes, default=(), metavar="D,D,...",
                     help="drops injected besides the one the run states it can detect, in each rule's measure "
                          "(e.g. 0.02,0.05)")
    cal.add_argument("--seed", type=int, default=None, metavar="N", help="the reruns' seed (default: a fixed one)")
    cal.add_argument("--out", default=None, metavar="PATH",
                     help="write the calibration here instead of into RESULTS (its 'calibration' key)")
    hist = sub.add_parser("history", help="the runs --retrieval-history kept: list them, or chart a measure "
                                          "across commits (history trend --measure hit@5)")
    hist.add_argument("action", nargs="?", default="list", choices=["list", "trend"])
    add_to_argparse(hist, "history", history="retrieval-history")
    hist.add_argument("--measure", default="hit@5",
                      help="the measure listed (where recorded) and charted by trend (default hit@5)")
    hist.add_argument("--engine", default=None, help="trend: one engine only (default: every engine)")
    hist.add_argument("--out", default="trend.svg", metavar="PATH", help="trend: the SVG written (default trend.svg)")
    jdg = sub.add_parser("judge", help="grade the unjudged documents of a saved run's top K with an LLM "
                                       "into a judgments file (--calibrate, --validate: agreement with the humans)")
    jdg.add_argument("results", help="a results.json written by --retrieval-report-dir or --retrieval-save-baseline")
    # no default corpus: the one the run recorded, else refused; no default model: see JudgeConfig.model
    add_to_argparse(jdg, "judge", corpus=None, judgments="judgments.jsonl", judge_model=None)
    jdg.add_argument("--base-url", default=None, help="OpenAI-compatible base URL (default: RETRIEVAL_EVAL_BASE_URL or OpenRouter)")
    jdg.add_argument("--temperature", type=float, default=0.0, help="the judge's sampling temperature (default 0)")
    what = jdg.add_mutually_exclusive_group()
    what.add_argument("--calibrate", action="store_true",
                      help="grade a sample of the documents the humans judged and report the agreement instead")
    what.add_argument("--worksheet", type=_whole, default=None, metavar="N",
                      help="write a CSV for a person to grade N questions' top K (every engine) 0-3 instead; "
                           "no LLM is asked")
    what.add_argument("--import-worksheet", default=None, metavar="FILE",
                      help="record a filled worksheet's grades in the judgments file (questions human-judged to K)")
    jdg.add_argument("--worksheet-file", default="worksheet.csv", metavar="PATH",
                     help="--worksheet: the CSV written, a README beside it (default worksheet.csv)")
    what.add_argument("--validate", action="store_true",
                      help="hide every human label (relevant and not, a worksheet's too), grade them again and report "
                           "kappa with the base rate, the confusion table and Kendall's tau; stored per judge; exit 1 "
                           "below the floor")
    what.add_argument("--recheck", type=_whole, default=None, metavar="N",
                      help="grade N of the judge's stored grades again (a seeded draw; the file is not changed) and "
                           "report agreement with them; stored per judge in the judgments file's .recheck.json; "
                           "below the floor every run using its grades warns, and this exits 1")
    jdg.add_argument("--sample", type=int, default=100, help="--calibrate, --validate: pairs graded (default 100)")
    return parser


def _whole(text: str) -> int:
    """A whole number >= 1 (argparse's type: a bad one is a one-line usage error)."""
    if not text.strip().isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"a whole number >= 1, got {text!r}")
    return int(text)


def _drop_sizes(text: str) -> tuple[float, ...]:
    from .calibrate import drop_sizes

    return drop_sizes(text)

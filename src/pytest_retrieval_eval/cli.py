"""``python -m pytest_retrieval_eval`` (also the ``pytest-retrieval-eval`` command).

- ``generate``: fill the questions cache with one LLM-written question per chunk that lacks a
  fresh one (``--only-missing``, the default), or replace every question (``--regenerate``);
- ``check``: say whether the questions cache is stale against the corpus (exit 1 if so); with
  ``--labels`` (``--training``, ``--results``) whether the labeled set is any good; the corpus
  and questions not given are the project's ini file's (as pytest finds it), else the corpus the
  ``--results`` run searched;
- ``subset``: write the questions of a saved run that best separate its engines, a subset a run
  selects with ``--retrieval-subset=NAME``;
- ``report``: judge a saved ``results.json`` again (against a baseline, with thresholds and
  max-drop rules; by default those it was judged with), with the pytest gate's exit codes: 1
  when it fails; ``--out DIR`` (and ``--html PATH``) rebuild the run's artefacts.

Options shared with the pytest plugin are declared once (``plugin/options.py``) and appear here
without their ``retrieval-`` prefix.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from .data.judgments import KAPPA_FLOOR, RELEVANT_FROM
from .errors import RetrievalEvalError
from .plugin.options import add_to_argparse


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m pytest_retrieval_eval",  # --help is plain text, not reST
                                     description=__doc__.split("\n\n")[0].replace("``", ""))
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
    imp = verbs.add_parser("import", help="merge labeled questions from a CSV/TSV, JSONL, qrels.jsonl or BEIR folder")
    imp.add_argument("file", help="the labels: .csv, .tsv, .jsonl (incl. rig-style qrels.jsonl) or a BEIR folder")
    add_to_argparse(imp, "check", **files)
    imp.add_argument("--format", default="auto", choices=["auto", "csv", "tsv", "jsonl", "qrels-jsonl", "beir"])
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
    rep = sub.add_parser("report", help="judge a saved results.json again; rebuild its artefacts with --out; "
                                        "'report merge A.json B.json ...' combines the slices of CI jobs; "
                                        "'report comment RESULTS' prints a pull-request comment")
    rep.add_argument("results", nargs="+", metavar="RESULTS",
                     help="a results.json written by --retrieval-report-dir or --retrieval-save-baseline; or merge "
                          "followed by every slice's results.json (--retrieval-slice I/N jobs)")
    add_to_argparse(rep, "report", alpha=None, measures=None, noise_aware=None, baseline_force=None,
                    correction=None, confidence=None, corpus=None, allow_failed_judge=None)
    rep.add_argument("--out", default=None, metavar="DIR",
                     help="write the report folder (results.md, results.json, per_query.jsonl, runs/, qrels, plot)")
    rep.add_argument("--html", default=None, metavar="PATH", help="write the drill-down page")
    rep.add_argument("--markdown", action="store_true", help="print the Markdown report instead of the table")
    rep.add_argument("-v", "--verbose", action="count", default=0,
                     help="the run's detail too (differences, configurations, judged@k ...), as pytest -v shows it")
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


#: the exit status of a command whose reader went away (``label list | head -1``): 128 + SIGPIPE,
#: as a shell reports any tool the pipe ended; never 0, as the command did not say all it had to
BROKEN_PIPE = 141


def main(argv: list[str] | None = None) -> int:
    """Run a command; one whose output pipe closes ends quietly (the Python docs' recipe)."""
    try:
        try:
            return _main(argv)
        finally:  # a closed pipe shows here, not in the interpreter's own flush at exit
            if sys.stdout is not None:
                sys.stdout.flush()
    except BrokenPipeError:
        try:  # what is still buffered goes nowhere, so the interpreter's flush at exit raises nothing
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (AttributeError, OSError, ValueError):
            pass  # not a real file (a test's capture): nothing flushes it at exit
        return BROKEN_PIPE


def _main(argv: list[str] | None) -> int:
    from ._secrets import install_log_redaction

    args = _parser().parse_args(argv)
    os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")
    uninstall = install_log_redaction()  # API keys never reach a log line
    try:
        return {"generate": _generate, "check": _check, "subset": _subset, "report": _report, "label": _label,
                "judge": _judge, "history": _history}[args.command](args)
    except RetrievalEvalError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
        if args.command not in ("report", "judge", "subset"):
            raise
        # exit 1 means "the gate failed" and nothing else: a file that cannot be judged is 2
        print(f"error: {args.results}: malformed results file ({type(exc).__name__}: {exc})", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        kept = "judgments file" if args.command == "judge" else "questions cache"
        print(f"interrupted: the {kept} holds every {'judgment' if args.command == 'judge' else 'question'} "
              "written so far", file=sys.stderr)
        return 130
    finally:
        uninstall()


def _generate(args) -> int:
    from .data.chunking import Chunking, chunk_corpus
    from .data.corpus import open_corpus
    from .data.generate import GeneratorConfig, generate_questions, require_api_key

    if args.follow_ups < 0:
        raise RetrievalEvalError(f"--follow-ups: a number of chunks, 0 or more; got {args.follow_ups}")
    require_api_key(args.base_url)  # before any work, so the message is the first thing said
    split = Chunking(split_length=args.split_length, split_overlap=args.split_overlap)
    corpus = open_corpus(args.corpus).load()
    chunks = chunk_corpus(corpus, split)
    config = GeneratorConfig(model=args.generator_model, url=args.base_url, concurrency=args.concurrency,
                             **({"max_tokens": args.max_tokens} if args.max_tokens else {}))
    report = generate_questions(corpus, chunks, Path(args.questions), config=config, split=split,
                                regenerate=args.regenerate, progress=lambda m: print(m, flush=True),
                                follow_ups=args.follow_ups)
    print(f"{args.questions}: {report.summary()}")
    if report.untouched_stale:
        from .data.staleness import check_command

        print(f"note: generate never changes imported or hand-written questions; {len(report.untouched_stale)} of them "
              f"are stale against the corpus, named by: {check_command(args.corpus, args.questions)}")
    return 1 if report.failed else 0


#: the ini files pytest reads its settings from, in the order it looks in each folder
INI_FILES = ("pytest.ini", ".pytest.ini", "pyproject.toml", "tox.ini", "setup.cfg")
INI_NAMED = "retrieval_corpus in the project's ini file (pyproject.toml, pytest.ini, tox.ini or setup.cfg)"


def project_ini(start: Path | None = None) -> tuple[Path, dict[str, str]] | None:
    """The ini file pytest would read, found as pytest finds it (from ``start``, the working
    directory, up), and its settings; None where there is none."""
    import configparser

    for folder in (here := (start or Path.cwd()).resolve(), *here.parents):
        for name in INI_FILES:
            path = folder / name
            if not path.is_file():
                continue
            if name == "pyproject.toml":
                try:
                    import tomllib
                except ImportError:  # Python 3.10: no TOML reader; the other ini files still count
                    continue
                try:
                    tool = tomllib.loads(path.read_text(encoding="utf-8")).get("tool", {})
                except (OSError, ValueError):
                    continue
                table = tool.get("pytest")
                if not isinstance(table, dict):
                    continue
                table = table.get("ini_options", table)
                return path, {k: v if isinstance(v, str) else " ".join(map(str, v)) if isinstance(v, list) else str(v)
                              for k, v in table.items()}
            parser = configparser.ConfigParser(interpolation=None, strict=False)
            try:
                parser.read(path, encoding="utf-8")
            except (configparser.Error, UnicodeDecodeError):
                continue
            section = {"pytest.ini": "pytest", ".pytest.ini": "pytest", "tox.ini": "pytest"}.get(name, "tool:pytest")
            if parser.has_section(section):
                return path, dict(parser.items(section))
            if name in ("pytest.ini", ".pytest.ini"):  # pytest.ini is the ini file even without a section
                return path, {}
    return None


def _shown_path(path: Path) -> str:
    """``path`` as typed from the working directory: relative where it is under it."""
    try:
        return str(path.relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def _check_files(args) -> Any:
    """``check``'s corpus (loaded) and questions, each from the command line, else the project's
    ini file (its paths relative to the file, as the plugin reads them), else, for the corpus, the
    one the ``--results`` run searched, else ``corpus`` and ``questions.cache.json``; a corpus
    not found says how to name it. Sets ``args.corpus`` and ``args.questions`` as messages show them."""
    from .data.corpus import open_corpus

    found = project_ini()
    ini = found[1] if found else {}
    for key, default in (("corpus", "corpus"), ("questions", "questions.cache.json")):
        if getattr(args, key) is None:
            value = ini.get(f"retrieval_{key}", "").strip()
            setattr(args, key, _shown_path((found[0].parent / value).resolve()) if value else None)
    if args.corpus is not None:
        return _open_named(open_corpus, args.corpus, f"--corpus={args.corpus}" if found is None or
                           "retrieval_corpus" not in ini else f"retrieval_corpus in {_shown_path(found[0])}")
    args.questions = args.questions or "questions.cache.json"
    searched = ""
    if args.results:
        from .gate.saved import load_saved

        try:
            corpus, args.corpus = _judge_corpus(load_saved(args.results).run, args)
            return corpus
        except RetrievalEvalError as exc:
            searched = f"; {exc}"
    args.corpus = "corpus"
    return _open_named(open_corpus, "corpus", "the default", searched)


def _open_named(open_corpus, path: str, source: str, searched: str = "") -> Any:
    try:
        return open_corpus(path).load()
    except RetrievalEvalError as exc:
        if not Path(path).exists():
            raise RetrievalEvalError(f"corpus folder not found ({source}){searched}: name the corpus with "
                                     f"--corpus=PATH, or set {INI_NAMED}", path=path) from None
        raise exc


def _check(args) -> int:
    from .data.staleness import check, chunk_fingerprints, drop_command, regenerate_command, stamp_command
    from .data.label_files import load_labels

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
    from .data import accepted_findings
    from .data.set_checks import KINDS, check_set, read_training
    from .evaluation import set_signal as signal
    from .evaluation.set_signal import lines, set_signal

    training = read_training(args.training) if args.training else []
    findings = check_set(labeled, corpus.docs, training)
    against = f" and {len(training)} training questions in {args.training}" if args.training else ""
    if args.results:
        from .gate.saved import load_saved

        saved = load_saved(args.results)
        measure = f"hit@{saved.settings.miss_k or saved.settings.miss_cutoff(saved.settings.columns(saved.run))}"
        findings += set_signal(saved.run, measure)
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


def _subset(args) -> int:
    """``subset RESULTS... --size=N --name=NAME``: write the sharpest questions (``evaluation/subset.py``)."""
    from .evaluation.subset import choose, drops, spreads, write_subset
    from .gate.saved import load_saved

    saved = [load_saved(p) for p in args.results]
    args.results = " ".join(args.results)  # how a malformed-file message names them
    run, settings = saved[0].run, saved[0].settings
    measure = args.measure or (settings.max_drops[0].measure if settings.max_drops else
                               f"hit@{settings.miss_k or settings.miss_cutoff(settings.columns(run))}")
    runs = [s.run for s in saved]
    ids, spread = choose(runs, measure, args.size)
    by_engine = drops(runs, measure, ids, settings.alpha)
    labeled = run.evaluations[0].labeled
    path = Path(args.dir) / f"{args.name}.json"
    write_subset(path, name=args.name, ids=ids, measure=measure, labeled=labeled, sources=args.results.split(),
                 spread=spread, alpha=settings.alpha, by_engine=by_engine)
    print(f"{path}: {len(ids)} of {len(labeled)} questions of {labeled.name}, by the spread of {measure} across "
          f"{sum(len(r.evaluations) for r in runs)} evaluations ({spread} of them separate some)")
    shared = len(spreads(runs, measure)[0])
    if shared < len(labeled):  # never silently: a question one run lacks, or read otherwise, separates nothing
        print(f"note: {len(labeled) - shared} question(s) of {labeled.name} not chosen from: missing from a run given, "
              "or read, labeled or quoted otherwise in one")
    print(f"smallest drop of {measure} detectable (80% power, alpha {settings.alpha:g}), subset against the full set:")
    for engine, d in by_engine.items():
        print(f"  {engine}: {d['subset']:.3f} with {len(ids)} questions, {d['full']:.3f} with {len(labeled)}")
    print(f"select it in a run with --retrieval-subset={args.name}")
    return 0


def _label(args) -> int:
    from .data.corpus import open_corpus
    from .data.label_files import Columns, is_team_file, read_labels
    from .data.label_import import import_labels
    from .data.label_lifecycle import remove_labels, stamp_cache
    from .data.staleness import remove_command, stamp_command

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
    entries = read_labels(args.file, fmt=args.format, columns=columns, split=args.split)
    report = import_labels(entries, corpus, args.questions, origin=args.file, sync=args.sync)
    for note in report.notes:
        print(f"note: {note}")
    print(f"{args.questions}: imported {_counted(entries)} from {args.file}: {report.summary()}")
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
    return ", ".join([*([f"{single} question{'s' if single != 1 else ''}"] if single else []),
                      f"{conversations} conversation{'s' if conversations != 1 else ''}",
                      f"{len(turns)} turn{'s' if len(turns) != 1 else ''}"])


def _label_list(args, corpus) -> int:
    """One line per question: id, state, gold documents, question; what changed for a stale one."""
    from .data.label_files import load_labels
    from .data.staleness import check, chunk_fingerprints, state

    labeled = load_labels(Path(args.questions))
    stale = check(labeled, corpus, chunk_fingerprints(corpus, labeled))
    why = stale.why()
    for q in labeled:
        gold = ";".join(d for d, g in sorted(q.relevant.items()) if g >= 1)
        extra = f" ({', '.join(why[q.query_id])})" if q.query_id in why else ""
        print(f"{q.query_id}\t{state(q.query_id, stale)}{extra}\t{gold}\t{q.question}")
    counts = {s: sum(state(q.query_id, stale) == s for q in labeled) for s in ("fresh", "stale", "unchecked")}
    print(f"{args.questions}: {len(labeled)} questions: " + ", ".join(f"{n} {s}" for s, n in counts.items()))
    return 0


def _report(args) -> int:
    from dataclasses import replace

    from .gate.verdict import conclude, for_run
    from .ir.measures import DEFAULT_TABLE_MEASURES, parse_measures, split_measures
    from .plugin.session import load_baseline
    from .report.files import markdown
    from .report.outputs import metadata, write_outputs

    saved = _results_of(args)
    run, settings = saved.run, saved.settings
    if args.judges is not None and args.judgments is None:
        raise RetrievalEvalError("--judges reads a panel of the judges of a judgments file: give --judgments=PATH too")
    if args.judgments is not None:
        _attach(run, args.judgments, args.corpus, results=None if getattr(args, "merged", None) else args.results,
                panel=args.judges)
    baseline_path = args.baseline if args.baseline is not None else settings.baseline
    if args.max_drop and baseline_path is None:
        raise RetrievalEvalError("--max-drop compares with a baseline: give --baseline PATH")
    # judged anew with what the command line changes, everything else (shadows too) as recorded
    given = {key: value for key in ("alpha", "noise_aware", "baseline_force", "correction", "confidence",
                                    "allow_failed_judge")
             if (value := getattr(args, key)) is not None}
    given.update({key: [(text, f"--{key.replace('_', '-')}") for text in value]
                  for key in ("threshold", "max_drop", "by", "prices") if (value := getattr(args, key)) is not None})
    if given or args.measures is not None or args.baseline is not None or args.judgments is not None:
        columns = split_measures(args.measures) if args.measures else list(settings.table_measures)
        if args.judgments is not None and not args.measures:  # the judged twins are laid out again
            columns = [c for c in columns if not parse_measures([c])[0].judge_dependent]
        settings = for_run(run, replace(settings.with_options(given), baseline=baseline_path),
                           configured=tuple(parse_measures(columns)) if columns else DEFAULT_TABLE_MEASURES)
    baseline, problems = load_baseline(Path(baseline_path)) if baseline_path else (None, [])
    verdict = conclude(run, settings, baseline, problems=problems, recorded=saved.analysis, notes=saved.notes,
                       run_warnings=saved.run_warnings, run_usage=saved.run_usage)
    if args.out or args.html:
        write_outputs(verdict, report_dir=Path(args.out) if args.out else None,
                      html=Path(args.html) if args.html else None, baseline=baseline)
    if getattr(args, "comment", False):
        from .report.comment import comment

        print(comment(verdict, full_report=_full_report(args)), end="")
    elif args.markdown:
        print(markdown(verdict, metadata(verdict)), end="")
    else:  # the run's own summary, by the run's own writer (detail with -v, as in the run)
        from .plugin.session import Outcome
        from .report.terminal import LineWriter, write_summary

        write_summary(LineWriter(sys.stdout), Outcome(verdict),
                      report=True, thresholds=len(verdict.settings.thresholds), unavailable={},
                      verbosity=args.verbose)
    if args.markdown and not getattr(args, "comment", False):  # results.md holds no gate lines of its own
        for failure in verdict.failures:
            print(f"FAIL retrieval gate: {failure}")
    return 1 if verdict.failed else 0


def _full_report(args) -> str:
    """Where a cut comment points for the whole report: the results.md written now (--out) or
    beside the results.json, else the command that prints it."""
    import shlex

    folder = " (the report folder; in CI, the workflow's artefact)"
    if args.out:
        return str(Path(args.out) / "results.md") + folder
    merged = getattr(args, "merged", None)
    beside = Path(args.results).with_name("results.md") if not merged else None
    if beside is not None and beside.is_file():
        return str(beside) + folder
    files = " ".join(map(shlex.quote, merged or [args.results]))
    return f"python -m pytest_retrieval_eval report {'merge ' if merged else ''}{files} --markdown"


def _history(args) -> int:
    """``history``: a line per record, each number named by its measure, and under it what it
    measured otherwise than the job's record before (corpus, labeled sets, judgments file);
    ``history trend``: the measure across commits, as SVG. A file of the folder that is not a
    record is skipped, said."""
    from ._atomic import write_text_atomic
    from .gate.history import History, changes_since
    from .ir.measures import Measure
    from .report.trend import points, trend_svg

    history = History(args.history)
    records = history.records()
    try:
        if not records:
            raise RetrievalEvalError(f"{args.history}: no history record; keep one per run with "
                                     f"pytest --retrieval-history={args.history}")
        measure = Measure.parse(args.measure).name
        if args.action == "list":
            last: dict = {}  # each job's record before, what a record is said to have changed from
            for r in records:
                git = r.git
                where = (f"{(r.commit or 'no commit')[:10]}{' (dirty)' if git.get('dirty') else ''}"
                         f"{' on ' + git['branch'] if git.get('branch') else ''}")
                engines = ", ".join(f"{e['engine']} {m} {_mean_text(e, m)}" for e in r.results["evaluations"]
                                    for m in [_shown_measure(e, measure)] if m)
                print(f"{r.time}  {where}  {engines}  ({r.path.name})")
                before = last.get(r.job.get("name"))
                for said in changes_since(before, r) if before is not None else []:
                    print(f"  changed since the record before: {said}")
                last[r.job.get("name")] = r
            return 0
        found = points(records, measure, args.engine, history.warnings)
        if not found:
            raise RetrievalEvalError(f"no record holds engine {args.engine!r}" if args.engine
                                     else "no record holds an evaluation")
        write_text_atomic(args.out, trend_svg(records, measure, args.engine))
        series = len({p["series"] for p in found})
        print(f"{args.out}: {measure} over {len(records)} record(s), {len(found)} point(s) in {series} series")
        return 0
    finally:  # each file of the folder that is not a record (or cannot be read), named once
        for warning in history.warnings:
            print(f"warning: {warning}", file=sys.stderr)


def _mean_text(evaluation: dict, measure: str) -> str:
    mean = (evaluation["summary"][measure] or {}).get("mean")
    return f"{mean:.3f}" if isinstance(mean, (int, float)) else "n/a"


def _shown_measure(evaluation: dict, measure: str) -> str | None:
    """The measure a history line shows: ``measure`` (--measure) where recorded, else the first
    one recorded (the line names it either way)."""
    summary = evaluation.get("summary") or {}
    return measure if measure in summary else next(iter(summary), None)


def _results_of(args):
    """``report RESULTS``: the saved run; ``report merge A B ...``: the run its slices make up;
    ``report comment ...``: either, printed as a pull-request comment (``args.comment``)."""
    from .gate.saved import Saved, load_saved
    from .rules.settings import GateSettings

    if args.results[0] == "comment":
        args.comment = True
        args.results = args.results[1:]
        if not args.results:
            raise RetrievalEvalError("report comment reads the run's results.json: report comment results.json")
        if args.results[0] == "merge":  # report comment merge a.json b.json
            return _results_of(args)
    if args.results[0] != "merge":
        if len(args.results) > 1:
            raise RetrievalEvalError(f"report reads one results.json (got {len(args.results)}); to combine the "
                                     f"slices of CI jobs: python -m pytest_retrieval_eval report merge "
                                     f"{' '.join(args.results)}")
        args.results = args.results[0]
        return load_saved(args.results)
    from .evaluation.combine import combine

    paths = args.results[1:]
    if not paths:
        raise RetrievalEvalError("report merge needs the results.json of every slice: report merge a.json b.json ...")
    args.results, args.merged = " ".join(paths), paths  # how a message names them; the files
    run = combine(paths).run
    try:
        settings = GateSettings.from_dict(run.settings) if run.settings else GateSettings()
    except RetrievalEvalError as exc:
        raise RetrievalEvalError(exc.detail, path=paths[0], field=exc.field or "settings") from None
    return Saved(run, settings)


def _attach(run, judgments: str, corpus: str | None, *, results: str | None = None, panel: str | None = None):
    """The file's judgments on every evaluation of ``run`` (staleness checked with a corpus), by
    the newest judge or the ``panel`` (``--judges``)."""
    from .data.corpus import open_corpus
    from .evaluation.judging import attach_file
    from .plugin.config import panel_of

    found = attach_file(run, Path(judgments), shown_path=str(judgments),
                        corpus=open_corpus(corpus).load() if corpus else None,
                        results=results, panel=panel_of(panel), corpus_path=corpus)
    if found is None:
        raise RetrievalEvalError(f"{judgments}: no judgment by an LLM judge in the file (a worksheet's human "
                                 "grades fill no hole; python -m pytest_retrieval_eval judge --help)")
    from .evaluation.fingerprints import file_digest

    run.fingerprints = {**run.fingerprints, "judgments": {"sha256": file_digest(judgments)}}  # the file now used
    return found


def _judge_corpus(run, args):
    """(the corpus to read the pooled documents from, how a command names it): ``--corpus``, else
    the one the run recorded (name and fingerprint), found in the working directory or beside
    results.json; refused, naming ``--corpus``, when there is none to find."""
    import shlex

    from .data.corpus import open_corpus

    if args.corpus is not None:
        return open_corpus(args.corpus).load(), shlex.quote(str(args.corpus))
    recorded = sorted({(e.corpus, e.corpus_fingerprint or "") for e in run.evaluations if e.corpus})
    if len(recorded) != 1:
        what = ("records no corpus" if not recorded else
                f"searched {len(recorded)} corpora ({', '.join(n for n, _ in recorded)})")
        raise RetrievalEvalError(f"the run {what}: give the corpus to read the documents from with --corpus=PATH",
                                 path=args.results)
    name, fingerprint = recorded[0]
    folder, _, split = name.partition("/")  # a BEIR corpus is named folder/split
    results = Path(args.results).resolve().parent
    found = []  # the same documents first; else the folder of that name, edited since the run
    for base in dict.fromkeys((Path.cwd(), results, results.parent)):
        if (base / folder).exists():
            corpus = open_corpus(base / folder, split=split or "test").load()
            found.append((bool(fingerprint) and corpus.fingerprint != fingerprint, base / folder, corpus))
            if not found[-1][0]:
                break
    if found:
        changed, where, corpus = min(found, key=lambda f: f[0])
        print(f"corpus: {where}, the one the run searched ({name})"
              + (", its documents changed since the run" if changed else ""), flush=True)
        return corpus, shlex.quote(str(where))
    raise RetrievalEvalError(f"the run searched corpus {name!r} (fingerprint {fingerprint[:12] or '?'}), not found in "
                             f"{Path.cwd()} or beside the results file: give its folder with --corpus=PATH",
                             path=args.results)


def _judge(args) -> int:
    """Pool the holes of a saved run, grade what the file lacks, and say what the judgments change."""
    import shlex

    from .data.corpus import open_corpus
    from .data.judge import JudgeConfig
    from .gate.saved import load_run
    from .evaluation.judging import attach, candidate_pairs, candidates_record, pairs, pool

    run = load_run(args.results)
    if args.import_worksheet is not None:
        return _import_worksheet(run, args)
    corpus, corpus_arg = _judge_corpus(run, args)
    if args.worksheet is not None:
        return _write_worksheet(run, corpus, corpus_arg, args)
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
    before = {e.key: {**{k: e.mean(f"judged@{k}") for k in ks}, "ndcg@10": e.mean("ndcg@10")}
              for e in run.evaluations}
    print(f"{path}: pooled {len(holes)} unjudged document(s) of the top {args.judge_depth} of "
          f"{', '.join(engines) or 'every engine'}"
          + (f"; {len(missing)} not in the corpus ({', '.join(missing[:3])})" if missing else ""), flush=True)
    judge, judgments, failed = _grade(todo, path, config, args)
    if any(j.judge.fingerprint == judge.fingerprint for j in judgments):  # none when humans judged every one
        from .data.validation import load as load_validations, validation_path

        found = attach(run, judgments, shown_path=str(path), judge=judge.fingerprint,
                       fingerprints={d.doc_id: d.fingerprint for d in corpus.docs},
                       validations=load_validations(validation_path(path)), results=str(args.results),
                       corpus=str(args.corpus) if args.corpus else None)
        if args.judges:
            print(f"the panel's members: {judgments.agreement(judge, ('hole',)).describe()}")
        for e in run.evaluations:
            was = before[e.key]
            judged = ", ".join(f"judged@{k} {was[k]:.3f} -> {e.mean(f'judged@{k}+judged'):.3f}" for k in ks)
            print(f"{e.engine}: {judged}; ndcg@10 {was['ndcg@10']:.4f}, ndcg@10+judged {e.mean('ndcg@10+judged'):.4f}")
        for warning in found.warnings():
            print(f"warning: {warning}")
        print(f"the numbers on both: python -m pytest_retrieval_eval report {shlex.quote(str(args.results))} "
              f"--judgments {shlex.quote(str(path))} --corpus {corpus_arg}")
    if candidates is not None:
        from .data.chunking import Chunking
        from .data.novelty import Novelty

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
    from .data.judgments import Judgments
    from .data.validation import store, validation_path
    from .evaluation.judging import calibration_pairs, engine_order, question_hashes
    from .evaluation.validation import draw, hidden_labels, measured, passes, record

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
            from .data.judgments import Agreement

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
    from .data.judge import judge_pairs, judge_panel
    from .data.judgments import Judgments

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
    from .plugin.config import panel_of

    return panel_of(args.judges)


def _recheck(run, corpus, corpus_arg: str, args, config, path: Path) -> int:
    """``judge --recheck=N``: N of the judge's stored grades asked again with the same settings
    (into a file of their own, thrown away), compared with the stored ones, kept per judge; exit 1
    when the judge drifted (or a pair failed: nothing is stored then)."""
    import shlex
    import tempfile
    import time

    from .data.judge import judge_pairs
    from .data.judgments import Judgments
    from .data.recheck import KEPT_FLOOR, RECHECK_FLOOR, Recheck, draw, recheck_path, store, stored_pairs
    from .evaluation.judging import doc_text

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


def _write_worksheet(run, corpus, corpus_arg: str, args) -> int:
    """``judge --worksheet=N``: N questions not yet human-judged, every pooled document of their
    top K, as a CSV for a person, with its README (the scale) beside it."""
    import shlex

    from ._atomic import write_text_atomic
    from .data.judgments import Judgments
    from .data.worksheet import readme, worksheet_csv
    from .evaluation.judging import question_hashes
    from .evaluation.worksheet import choose, sheet_rows

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

    from .data.judgments import Judgments
    from .data.worksheet import filled_in

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


def _import_worksheet(run, args) -> int:
    """``judge --import-worksheet=FILE``: the filled sheet's grades into the judgments file, in one
    atomic write; any row refused (a document changed since the sheet was written among them:
    checked against the corpus, ``--corpus`` or the one the run searched), nothing written."""
    from ._atomic import locked
    from .data.judgments import Judgments, rewrite
    from .data.worksheet import read_worksheet
    from .evaluation.worksheet import checked, unchanged_documents

    sheet = read_worksheet(args.import_worksheet)
    judgments = checked(sheet, run)
    unchanged_documents(sheet, _judge_corpus(run, args)[0])  # each grade of the text the person read
    path = Path(args.judgments)
    with locked(path):
        rewrite(path, Judgments([*Judgments.load(path), *judgments], path))
    questions = len({j.query_id for j in judgments})
    print(f"{path}: recorded {len(judgments)} human grade(s) of {questions} question(s) from {args.import_worksheet}, "
          f"each question human-judged to depth {sheet.depth}")
    return 0

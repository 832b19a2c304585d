"""``python -m pytest_retrieval_eval`` (also the ``pytest-retrieval-eval`` command).

- ``generate``: fill the questions cache with one LLM-written question per chunk that lacks a
  fresh one (``--only-missing``, the default), or replace every question (``--regenerate``);
- ``check``: say whether the questions cache is stale against the corpus (exit 1 if so);
- ``report``: re-render and re-gate a saved ``results.json`` (against a baseline, with
  thresholds and max-drop rules), with the pytest gate's exit codes: 1 when it fails.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from .errors import RetrievalEvalError


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m pytest_retrieval_eval", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)

    def common(p: argparse.ArgumentParser) -> None:
        p.add_argument("--corpus", default="corpus", help="corpus folder (default: ./corpus)")
        p.add_argument("--questions", default="questions.cache.json", help="questions cache (default: ./questions.cache.json)")

    gen = sub.add_parser("generate", help="generate missing or stale questions with an LLM")
    common(gen)
    mode = gen.add_mutually_exclusive_group()
    mode.add_argument("--only-missing", action="store_true", help="only chunks without a fresh question (default)")
    mode.add_argument("--regenerate", action="store_true", help="a new question for every chunk")
    gen.add_argument("--model", default=None, help="chat model (default: RETRIEVAL_EVAL_GENERATOR_MODEL or openai/gpt-4o-mini)")
    gen.add_argument("--base-url", default=None, help="OpenAI-compatible base URL (default: RETRIEVAL_EVAL_BASE_URL or OpenRouter)")
    gen.add_argument("--concurrency", type=int, default=4)
    gen.add_argument("--split-length", type=int, default=400)
    gen.add_argument("--split-overlap", type=int, default=80)
    check = sub.add_parser("check", help="is the questions cache stale against the corpus?")
    common(check)
    rep = sub.add_parser("report", help="re-render and re-gate a saved results.json")
    rep.add_argument("results", help="a results.json written by --retrieval-report-dir or --retrieval-save-baseline")
    rep.add_argument("--baseline", default=None, help="a baseline results file to compare with")
    rep.add_argument("--baseline-force", action="store_true", help="compare even when fingerprints differ")
    rep.add_argument("--threshold", action="append", default=[], metavar="[ENGINE:]MEASURE>=VALUE")
    rep.add_argument("--max-drop", action="append", default=[], metavar="[ENGINE:]MEASURE=DELTA")
    rep.add_argument("--noise-aware", action="store_true", help="fail max-drop rules only on significant drops")
    rep.add_argument("--alpha", type=float, default=0.05)
    rep.add_argument("--measures", default=None, help="comma-separated table columns")
    rep.add_argument("--markdown", action="store_true", help="print the Markdown report instead of the table")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")
    try:
        return {"generate": _generate, "check": _check, "report": _report}[args.command](args)
    except RetrievalEvalError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted: the questions cache holds every question written so far", file=sys.stderr)
        return 130


def _generate(args) -> int:
    from .corpus import open_corpus
    from .generate import DEFAULT_MODEL, GeneratorConfig, generate_questions, require_api_key
    from .ingest import IngestConfig, chunk_corpus

    require_api_key()  # before any work, so the message is the first thing said
    split = IngestConfig(split_length=args.split_length, split_overlap=args.split_overlap)
    corpus = open_corpus(args.corpus).load()
    chunks = chunk_corpus(corpus, split)
    model = args.model or os.environ.get("RETRIEVAL_EVAL_GENERATOR_MODEL") or DEFAULT_MODEL
    config = GeneratorConfig(model=model, url=args.base_url, concurrency=args.concurrency)
    report = generate_questions(corpus, chunks, Path(args.questions), config=config, split=split,
                                regenerate=args.regenerate, progress=lambda m: print(m, flush=True))
    print(f"{args.questions}: {report.summary()}")
    return 1 if report.failed else 0


def _check(args) -> int:
    from .corpus import open_corpus
    from .labeled import load_questions_cache
    from .staleness import check, regenerate_command

    corpus = open_corpus(args.corpus).load()
    labeled = load_questions_cache(args.questions)
    stale = check(labeled, corpus)
    if stale:
        print(stale.describe(args.questions, args.corpus, regenerate_command(args.corpus, args.questions)))
        return 1
    print(f"{args.questions}: {len(labeled)} questions, up to date with {args.corpus}")
    return 0


def _report(args) -> int:
    from .gate import parse_max_drops, parse_thresholds
    from .measures import DEFAULT_TABLE_MEASURES, parse_measures
    from .report import table
    from .report.files import markdown
    from .report.terminal import baseline_lines
    from .results import RunResults
    from .verdict import judge, table_measures

    run = RunResults.load(args.results)
    baseline = RunResults.load(args.baseline) if args.baseline else None
    if args.max_drop and baseline is None:
        raise RetrievalEvalError("--max-drop compares with a baseline: give --baseline PATH")
    configured = tuple(parse_measures(m for m in args.measures.split(",") if m.strip())) if args.measures else DEFAULT_TABLE_MEASURES
    verdict = judge(run, measures=table_measures(run, configured),
                    thresholds=parse_thresholds((t, "--threshold") for t in args.threshold),
                    max_drops=parse_max_drops((t, "--max-drop") for t in args.max_drop), baseline=baseline,
                    force=args.baseline_force, noise_aware=args.noise_aware, alpha=args.alpha)
    if args.markdown:
        print(markdown(verdict, {"results": args.results, "baseline": args.baseline or "none"}), end="")
    else:
        print("\n".join(table.render(verdict)))
        if verdict.baseline is not None:
            print("\n".join(baseline_lines(verdict)))
    for failure in verdict.failures:
        print(f"FAIL retrieval gate: {failure}")
    return 1 if verdict.failed else 0

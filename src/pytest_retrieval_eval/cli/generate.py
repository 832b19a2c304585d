"""``generate``: one LLM-written question per chunk that lacks a fresh one.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import RetrievalEvalError


def main(args) -> int:
    from ..data.chunking import Chunking, chunk_corpus
    from ..data.corpus import open_corpus
    from ..data.generate import GeneratorConfig, generate_questions, require_api_key

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
        from ..data.staleness import check_command

        print(f"note: generate never changes imported or hand-written questions; {len(report.untouched_stale)} of them "
              f"are stale against the corpus, named by: {check_command(args.corpus, args.questions)}")
    return 1 if report.failed else 0


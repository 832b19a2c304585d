"""``corpus from-mtrag FILE... --out DIR``: a corpus of every passage MTRAG's conversation files
quote (a task's ``contexts``, a file's ``documents``), written as ``DIR/passages.jsonl`` with a
README saying what it is: a subset of the benchmark's corpus (only the passages some task
judges relevant), not the corpus itself, so a score on it is no score on MTRAG.
"""

from __future__ import annotations

import json
from pathlib import Path

from ..errors import RetrievalEvalError

README = """# Passages quoted by MTRAG's tasks

Written by `python -m pytest_retrieval_eval corpus from-mtrag` from: {files}.

{n} passages: every passage a task of those files judges relevant (its `contexts`, the file's
`documents`). A subset of MTRAG's corpora, not the benchmark's corpus: every passage here is
some task's answer, so a search over it is far easier than over the full collection, and its
scores are no MTRAG scores. For those, index the benchmark's corpora (`corpora/*.jsonl.zip` of
IBM/mt-rag-benchmark).
"""


def main(args) -> int:
    from .._atomic import write_text_atomic
    from ..data.benchmarks import is_mtrag_conversations, passages

    for f in args.files:
        if not is_mtrag_conversations(f):
            raise RetrievalEvalError("not an MTRAG conversation file (tasks with 'input' and 'contexts': "
                                     "reference*.jsonl, or a .json with 'tasks')", path=f)
    found = passages(args.files)
    if not found:
        raise RetrievalEvalError("the files quote no passage with its text", path=args.files[0])
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise RetrievalEvalError("exists and is no folder", path=out)
    others = sorted(p.name for p in out.iterdir() if p.name not in ("passages.jsonl", "README.md")) if out.is_dir() else []
    if others:
        raise RetrievalEvalError(f"holds other files ({', '.join(others[:3])}): the corpus would mix with them; name an "
                                 "empty or new folder", path=out)
    lines = [json.dumps({"doc_id": d, **({"title": v["title"]} if v.get("title") else {}), "content": v["content"]},
                        ensure_ascii=False) for d, v in sorted(found.items())]
    write_text_atomic(out / "passages.jsonl", "\n".join(lines) + "\n")
    write_text_atomic(out / "README.md", README.format(files=", ".join(f"`{Path(f).name}`" for f in args.files),
                                                       n=len(found)))
    print(f"{out}: {len(found)} passages quoted by {len(args.files)} file{'s' * (len(args.files) != 1)} "
          "(a subset of MTRAG's corpus, not the benchmark's corpus: see README.md)")
    return 0

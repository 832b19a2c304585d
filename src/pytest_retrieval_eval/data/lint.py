"""Corpus health: checks on the chunks after splitting and before embedding. Each finding names
its document and chunk; the counts can be gated (``--retrieval-threshold "lint.truncated<=0"``).

- ``empty``, ``tiny`` (fewer than ``min_words`` words): chunks that carry no answer;
- ``truncated``: more tokens than the embedder reads (all-MiniLM-L6-v2 reads 256): the rest is
  silently ignored by the vector half of retrieval;
- ``duplicate``: the same text as an earlier chunk; ``near_duplicate`` (opt-in threshold):
  MinHash-estimated Jaccard similarity of word 3-gram shingles at or above the threshold;
- ``missing_id``: a chunk without a document id; ``control_chars``, ``bom``: text that
  extraction left dirty.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from typing import Callable, Sequence

from .._defaults import CORPUS_LINT_KINDS
from ..types import Chunk

#: What lint counts; the gate accepts ``lint.<kind>`` rules for exactly these.
KINDS = CORPUS_LINT_KINDS
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


@dataclass(frozen=True)
class Finding:
    kind: str
    chunk_id: str
    detail: str

    def __str__(self) -> str:
        return f"{self.kind}: {self.chunk_id} ({self.detail})"


@dataclass
class LintReport:
    dataset: str
    chunks: int
    window: int | None  # tokens the embedder reads, None when unknown
    findings: list[Finding] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        out = {k: 0 for k in KINDS}
        for f in self.findings:
            out[f.kind] += 1
        return out

    def summary(self) -> str:
        window = f"embedder window {self.window} tokens" if self.window else "embedder window unknown: truncation not checked"
        counts = ", ".join(f"{k} {v}" for k, v in self.counts().items() if v) or "no findings"
        return f"corpus lint, {self.dataset}: {self.chunks} chunks, {window}: {counts}"

    def to_dict(self) -> dict:
        return {"dataset": self.dataset, "chunks": self.chunks, "window": self.window,
                "findings": [[f.kind, f.chunk_id, f.detail] for f in self.findings]}

    @classmethod
    def from_dict(cls, d: dict) -> "LintReport":
        return cls(d["dataset"], d["chunks"], d["window"], [Finding(*f) for f in d["findings"]])


def _shingles(text: str, n: int = 3) -> set[str]:
    words = text.lower().split()
    return {" ".join(words[i:i + n]) for i in range(max(1, len(words) - n + 1))}


def lint_chunks(chunks: Sequence[Chunk], *, dataset: str, min_words: int = 5,
                count_tokens: Callable[[str], int] | None = None, window: int | None = None,
                near_duplicates: float | None = None) -> LintReport:
    report = LintReport(dataset, len(chunks), window if count_tokens else None)
    add = report.findings.append
    seen: dict[str, str] = {}
    for c in chunks:
        cid = c.chunk_id
        text = c.text or ""
        words = len(text.split())
        if not c.doc_id:
            add(Finding("missing_id", cid, "no doc_id"))
        if not text.strip():
            add(Finding("empty", cid, "no text"))
            continue
        if words < min_words:
            add(Finding("tiny", cid, f"{words} words < {min_words}"))
        if count_tokens and window:
            tokens = count_tokens(text)
            if tokens > window:
                add(Finding("truncated", cid, f"{tokens} tokens > {window}: the embedder ignores {tokens - window}"))
        digest = hashlib.sha256(" ".join(text.split()).encode()).hexdigest()
        if digest in seen:
            add(Finding("duplicate", cid, f"same text as {seen[digest]}"))
        else:
            seen[digest] = cid
        if "\ufeff" in text:
            add(Finding("bom", cid, "byte-order mark inside the text"))
        if _CONTROL.search(text):
            add(Finding("control_chars", cid, f"{len(_CONTROL.findall(text))} control characters"))
    if near_duplicates is not None:
        _near_duplicates(chunks, near_duplicates, report)
    return report


def _near_duplicates(chunks: Sequence[Chunk], threshold: float, report: LintReport) -> None:
    """MinHash LSH (datasketch) over word 3-gram shingles; exact duplicates are left to the
    exact check."""
    from datasketch import MinHash, MinHashLSH

    lsh = MinHashLSH(threshold=threshold, num_perm=128)
    exact = {f.chunk_id for f in report.findings if f.kind in ("duplicate", "empty")}
    for c in chunks:
        if c.chunk_id in exact or not (c.text or "").strip():
            continue
        m = MinHash(num_perm=128, seed=1)
        m.update_batch([s.encode() for s in _shingles(c.text)])
        similar = lsh.query(m)
        if similar:
            report.findings.append(Finding("near_duplicate", c.chunk_id, f"~{threshold:g}+ similar to {', '.join(sorted(similar)[:3])}"))
        lsh.insert(c.chunk_id, m)

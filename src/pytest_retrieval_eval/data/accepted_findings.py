"""Findings of ``check --labels`` a team has accepted, each with why it stays: a committed JSON
Lines file, one finding a line, so CI can run the check and pass once every finding is either
fixed or accepted::

    {"kind": "near_duplicate", "questions": ["q3", "q7"], "reason": "the same ask, typed on mobile and on desktop"}

An entry accepts the finding of its kind that names exactly its questions (in any order). An
entry that no finding matches any more is stale and fails the check, as an unused ``noqa`` does
in ruff: the file keeps saying only what still holds. An entry of a kind the check did not look
for (``no_signal`` without ``--results``) is neither matched nor stale.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Collection, Sequence

from .._textfiles import json_lines
from ..errors import RetrievalEvalError
from .set_checks import SetFinding

#: beside the labels, read when present: ``labels.json`` -> ``labels.accepted.jsonl``
SUFFIX = ".accepted.jsonl"
FIELDS = ("kind", "questions", "reason")


def default_file(questions: str | Path) -> Path:
    return Path(questions).with_suffix(SUFFIX)


@dataclass(frozen=True)
class Accepted:
    """One entry: the finding's kind and questions, why it stays, and its line in the file."""

    kind: str
    query_ids: tuple[str, ...]
    reason: str
    line: int

    @property
    def key(self) -> tuple[str, tuple[str, ...]]:
        return self.kind, tuple(sorted(self.query_ids))


def key(finding: SetFinding) -> tuple[str, tuple[str, ...]]:
    """What an entry must name to accept ``finding``: its kind and its questions, in any order."""
    return finding.kind, tuple(sorted(finding.query_ids))


def entry(finding: SetFinding, reason: str = "") -> str:
    """The file's line that accepts ``finding`` (``reason`` left for a person to write)."""
    return json.dumps({"kind": finding.kind, "questions": list(finding.query_ids), "reason": reason},
                      ensure_ascii=False)


def read_accepted(path: str | Path, kinds: Sequence[str]) -> list[Accepted]:
    """The file's entries; a bad one is an error naming the file, line and field."""
    out: list[Accepted] = []
    seen: dict[tuple[str, tuple[str, ...]], int] = {}
    for number, record in json_lines(path, unique_keys=True):
        def bad(message: str, field: str | None = None) -> RetrievalEvalError:
            return RetrievalEvalError(message, path=path, line=number, field=field)

        if not isinstance(record, dict):
            raise bad('expected a JSON object: {"kind": ..., "questions": [...], "reason": ...}')
        unknown = [k for k in record if k not in FIELDS]
        if unknown:
            raise bad(f"unknown field; an entry holds {', '.join(FIELDS)}", unknown[0])
        kind = record.get("kind")
        if kind not in kinds:
            raise bad(f"{kind!r} is no kind of finding of check --labels ({', '.join(kinds)})", "kind")
        ids = record.get("questions")
        if (not isinstance(ids, list) or not ids or not all(isinstance(i, str) and i.strip() for i in ids)
                or len(set(ids)) != len(ids)):
            raise bad("required: the finding's question ids, a non-empty list of distinct strings", "questions")
        reason = record.get("reason")
        if not isinstance(reason, str) or not reason.strip():
            raise bad("required: why the finding stays, a non-empty string", "reason")
        accepted = Accepted(kind, tuple(ids), reason.strip(), number)
        if accepted.key in seen:
            raise bad(f"accepts the same finding as line {seen[accepted.key]}", "questions")
        seen[accepted.key] = number
        out.append(accepted)
    return out


@dataclass(frozen=True)
class Sorted:
    """A check's findings against the accepted ones."""

    failing: list[SetFinding]
    accepted: list[tuple[SetFinding, Accepted]]
    stale: list[Accepted]
    unchecked: list[Accepted]

    def failed(self) -> bool:
        return bool(self.failing or self.stale)


def sort_findings(findings: Sequence[SetFinding], entries: Sequence[Accepted], checked: Collection[str]) -> Sorted:
    """Each finding failing or accepted; each entry matched, stale (its kind was checked and no
    finding matches it) or unchecked."""
    by_key = {e.key: e for e in entries}
    failing, accepted = [], []
    for f in findings:
        match = by_key.get(key(f))
        if match is None:
            failing.append(f)
        else:
            accepted.append((f, match))
    matched = {key(f) for f, _ in accepted}
    stale = [e for e in entries if e.kind in checked and e.key not in matched]
    unchecked = [e for e in entries if e.kind not in checked]
    return Sorted(failing, accepted, stale, unchecked)


def stale_line(e: Accepted, failing: Sequence[SetFinding]) -> str:
    """Why an entry is stale, with the finding of its kind that now names some of its questions."""
    now = next((f for f in failing if f.kind == e.kind and set(f.query_ids) & set(e.query_ids)), None)
    return (f"stale: no {e.kind} finding names {', '.join(e.query_ids)} now"
            + (f" (one names {', '.join(now.query_ids)})" if now is not None else "") + ": remove the line")

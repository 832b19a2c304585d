"""What ``judge --validate`` found, kept per judge fingerprint beside the judgments file.

``judgments.validation.json`` sits next to ``judgments.jsonl`` (same stem) and is committed with
it: an object of judge fingerprint -> that judge's last validation (kappa, the base rate, the
confusion tables, the engines' order on human against judged labels, the floor and whether it
was met). It is a record of its own rather than lines of the judgments file because that file
holds one grade of one (question, document) pair per line, read line by line against a schema
(whose ``kind`` list an older reader enforces) with the newest line winning per pair: a summary
of many pairs fits none of that. The pairs themselves are in the judgments file, so a
validation can always be recomputed; this keeps what it said, for the judge it said it of.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping

from .._atomic import locked, write_text_atomic
from ..errors import RetrievalEvalError


def validation_path(judgments: str | Path) -> Path:
    """``judgments.jsonl`` -> ``judgments.validation.json`` beside it."""
    path = Path(judgments)
    return path.with_name(f"{path.stem}.validation.json")


def load(path: str | Path) -> dict[str, dict[str, Any]]:
    """Judge fingerprint -> its stored validation (none when the file does not exist)."""
    path = Path(path)
    if not path.exists():
        return {}
    try:
        found = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise RetrievalEvalError(f"cannot read the judge validations: {exc}", path=path) from None
    if not isinstance(found, dict) or not all(isinstance(v, dict) for v in found.values()):
        raise RetrievalEvalError("not an object of judge fingerprint -> validation", path=path)
    return found


def store(path: str | Path, fingerprint: str, validation: Mapping[str, Any]) -> None:
    """Keep ``validation`` as the judge ``fingerprint``'s, replacing only its own earlier one;
    written atomically under the file's lock, keys sorted for review diffs (no NaN: JSON has none,
    an undefined kappa is null)."""
    path = Path(path)
    with locked(path):
        records = {**load(path), fingerprint: dict(validation)}
        write_text_atomic(path, json.dumps(records, indent=1, sort_keys=True, ensure_ascii=False, allow_nan=False)
                          + "\n")

"""``calibrate``: how often each rule of a saved run fails its engines unchanged, and how often it
catches a drop injected into their rankings (``gate/calibrate.py``); the table printed, the
calibration written into the results file (atomically), or to ``--out``.
"""

from __future__ import annotations

import shlex
from pathlib import Path

from ..errors import RetrievalEvalError

#: results.json's key for the calibration the command writes into it
KEY = "calibration"
#: a calibration written apart from its results (``--out``)
FORMAT = "pytest-retrieval-eval/calibration"


def main(args) -> int:
    """Exit 1 when a rule that passes the run fails its unchanged reruns more often than alpha."""
    from .._atomic import write_text_atomic
    from ..archive.results_json import HISTORY_FORMAT, document_text, read_document
    from ..archive.saved import load_saved
    from ..gate.calibrate import calibrate
    from ..report.calibration import COMMAND, calibration_lines

    path = Path(args.results)
    original = path.read_bytes() if path.is_file() else None
    saved = load_saved(path)
    given = {key: value for key in ("alpha", "noise_aware", "correction", "confidence")
             if (value := getattr(args, key)) is not None}
    given.update({key: [(text, f"--{key.replace('_', '-')}") for text in value]
                  for key in ("threshold", "max_drop") if (value := getattr(args, key)) is not None})
    settings = saved.settings.with_options(given)
    shown = shlex.quote(args.results)
    if not settings.thresholds and not settings.max_drops:
        raise RetrievalEvalError(f"{args.results}: no threshold or max-drop rule to calibrate; name one, e.g. "
                                 f"{COMMAND} {shown} --max-drop=hit@5=0 --noise-aware")
    engines = sorted({e.engine for e in saved.run.evaluations})
    for rule in [*settings.thresholds, *settings.max_drops]:
        if rule.engine is not None and rule.engine not in engines:
            raise RetrievalEvalError(f"{args.results}: rule {rule} (from {rule.source}) names engine '{rule.engine}', "
                                     f"which the run has not; its engines: {', '.join(engines) or 'none'}")
    if not args.out and read_document_format(path) == HISTORY_FORMAT:
        raise RetrievalEvalError(f"{args.results} is a history record, which is kept as it was run; write the "
                                 f"calibration beside it: {COMMAND} {shown} --out=calibration.json")
    found = calibrate(saved.run, settings, reruns=args.reruns, sizes=args.drop_sizes,
                      **({"seed": args.seed} if args.seed is not None else {}))
    if not found.rules:
        raise RetrievalEvalError(f"{args.results}: none of its rules can be calibrated ({'; '.join(found.left_out)}); "
                                 f"name one, e.g. {COMMAND} {shown} --max-drop=hit@5=0 --noise-aware")
    for line in calibration_lines(found, args.results):
        print(line)
    record = found.to_dict()
    if args.out:
        write_text_atomic(args.out, document_text({"format": FORMAT, "results": args.results, KEY: record}))
        print(f"written to {args.out}")
    else:
        if path.read_bytes() != original:  # written by another process while the reruns ran: not clobbered
            raise RetrievalEvalError(f"{args.results} changed while it was calibrated; calibrate it again")
        write_text_atomic(path, document_text({**read_document(path), KEY: record}))
        print(f"written to {args.results} (its '{KEY}')")
    return 1 if found.over_alpha() else 0


def read_document_format(path: Path) -> str | None:
    """The format a results file names at its top (a history record holds a results.json)."""
    import json

    try:
        top = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return top.get("format") if isinstance(top, dict) else None


def drop_sizes(text: str) -> tuple[float, ...]:
    """``--drop-sizes 0.02,0.05``: drops in the rules' measures, each in (0, 1)."""
    import argparse

    out = []
    for part in (p.strip() for p in text.split(",") if p.strip()):
        try:
            value = float(part)
        except ValueError:
            value = -1.0
        if not 0 < value < 1:
            raise argparse.ArgumentTypeError(f"drop sizes are numbers in (0, 1), comma-separated; got {part!r}")
        out.append(value)
    if not out:
        raise argparse.ArgumentTypeError("give at least one drop size, e.g. 0.05")
    return tuple(out)

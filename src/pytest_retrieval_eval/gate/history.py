"""Every run remembered (``--retrieval-history DIR``): one record per run, keyed by commit.

A record is one JSON file, as pytest-benchmark keeps one per saved run: the run's results.json
plus the commit, branch and dirty flag, the time, and the fingerprints of what was measured
(corpus, labeled sets, judgments, engines, settings). Each file is written atomically under a
name no other writer takes (time, commit, process, random), so two xdist sessions or CI jobs
writing at once both keep theirs; the oldest beyond ``keep`` are removed. ``compare_ref`` finds
the record a branch is judged against: the newest one at the merge-base with a ref.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

from .._atomic import write_text_atomic
from ..errors import RetrievalEvalError
from ..run.results_json import HISTORY_FORMAT as FORMAT  # a record reads as a baseline file too
from ..types import canonical_json, sha256_text

VERSION = 1
#: records kept by default (``--retrieval-history-keep``)
KEEP = 500


def git(cwd: Path, *args: str) -> str | None:
    """``git ARGS`` in ``cwd``, its stripped output, or None (not a repository, no git)."""
    try:
        done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def commit_info(cwd: Path) -> dict[str, Any]:
    """The commit, branch and dirty flag of the checkout at ``cwd`` (nulls outside a repository)."""
    commit = git(cwd, "rev-parse", "HEAD")
    branch = git(cwd, "rev-parse", "--abbrev-ref", "HEAD") if commit else None
    status = git(cwd, "status", "--porcelain", "--untracked-files=no") if commit else None
    return {"commit": commit, "branch": branch if branch != "HEAD" else None,
            "dirty": bool(status) if status is not None else None}


def fingerprints(results: Mapping[str, Any]) -> dict[str, Any]:
    """What a record measured, as fingerprints: a trend across two of them is one series only
    where these agree (per engine: its corpus, labeled set, description and judge)."""
    engines = {}
    for e in results.get("evaluations", []):
        engines[f"{e['engine']} on {e['labeled']['name']}"] = {
            "corpus": (e.get("corpus") or {}).get("fingerprint"), "labeled": e["labeled"]["fingerprint"],
            "engine": sha256_text(canonical_json(e.get("engine_info", {})))[:16],
            "judge": (e.get("judge") or {}).get("fingerprint")}
    settings = {k: v for k, v in (results.get("settings") or {}).items() if k not in ("failures", "baseline")}
    return {"engines": engines, "settings": sha256_text(canonical_json(settings))[:16],
            "judgments": sha256_text(canonical_json(results["judgments"]))[:16] if results.get("judgments") else None}


@dataclass(frozen=True)
class Record:
    path: Path
    time: str
    git: Mapping[str, Any]
    fingerprints: Mapping[str, Any]
    results: Mapping[str, Any]

    @property
    def commit(self) -> str | None:
        return self.git.get("commit")

    def run(self) -> Any:
        """The recorded run (``RunResults``), its settings read."""
        from ..run.results_json import evaluation_from_dict
        from ..run.results import RunResults
        from .settings import GateSettings

        doc = self.results
        run = RunResults([evaluation_from_dict(e) for e in doc.get("evaluations", [])],
                         doc["metrics"]["fingerprint"], settings=dict(doc.get("settings") or {}))
        run.settings = GateSettings.of(run)
        return run


class History:
    """The records in one folder: append, list (oldest first), and the one a ref is judged against."""

    def __init__(self, folder: str | Path, keep: int = KEEP) -> None:
        self.folder = Path(folder)
        self.keep = keep

    def append(self, results_json: str, git_info: Mapping[str, Any], *, now: float | None = None) -> Path:
        results = json.loads(results_json)
        now = time.time() if now is None else now
        # microseconds in the name: records of one second still sort in the order they were made
        stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime(now)) + f".{int(now % 1 * 1e6):06d}Z"
        record = {"format": FORMAT, "version": VERSION, "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now)),
                  "git": dict(git_info), "fingerprints": fingerprints(results), "results": results}
        name = f"{stamp}_{(git_info.get('commit') or 'nocommit')[:12]}_{os.getpid()}_{secrets.token_hex(3)}.json"
        self.folder.mkdir(parents=True, exist_ok=True)
        path = self.folder / name
        write_text_atomic(path, json.dumps(record, indent=1, sort_keys=True, ensure_ascii=False) + "\n")
        for old in self._files()[:-self.keep] if self.keep else []:
            old.unlink(missing_ok=True)
        return path

    def count(self) -> int:
        """How many records the folder holds (their names only: nothing is read)."""
        return len(self._files())

    def _files(self) -> list[Path]:
        return sorted(self.folder.glob("*.json"), key=lambda p: p.name) if self.folder.is_dir() else []

    def records(self) -> list[Record]:
        """Every record, oldest first; a file that is not one is refused naming it."""
        out = []
        for path in self._files():
            try:
                doc = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError) as exc:
                raise RetrievalEvalError(f"not a history record ({exc})", path=path) from None
            if not isinstance(doc, dict) or doc.get("format") != FORMAT or doc.get("version") != VERSION:
                raise RetrievalEvalError(f"not a history record (expected \"format\": \"{FORMAT}\", version {VERSION})",
                                         path=path, field="format")
            out.append(Record(path, doc["time"], doc.get("git") or {}, doc.get("fingerprints") or {}, doc["results"]))
        return sorted(out, key=lambda r: r.path.name)  # the name starts with the time, to the microsecond

    def at(self, commits: Sequence[str], records: Sequence[Record] | None = None) -> Record | None:
        """The newest record at one of ``commits`` (full or abbreviated), a clean checkout first;
        ``records``: the folder's, when the caller read them already."""
        found = [r for r in (self.records() if records is None else records) if r.commit and any(r.commit.startswith(c) or c.startswith(r.commit)
                                                                for c in commits)]
        found.sort(key=lambda r: (not r.git.get("dirty"), r.path.name))
        return found[-1] if found else None


def compare_ref(history: History, ref: str, cwd: Path) -> tuple[Record | None, str]:
    """The record ``ref`` is judged against: the newest at the merge-base of HEAD and ``ref``
    (else at ``ref`` itself), and what was looked for, or why there is none (a message)."""
    target = git(cwd, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")
    if target is None:
        return None, (f"--retrieval-compare {ref}: not a branch, tag or commit of the repository at {cwd}")
    base = git(cwd, "merge-base", "HEAD", target) or target
    records = history.records()  # read once
    record = history.at([base, target], records)
    if record is None:
        held = sorted({(r.commit or "no commit")[:10] for r in records})
        try:  # as the user would type it
            folder = history.folder.resolve().relative_to(Path.cwd().resolve())
        except ValueError:
            folder = history.folder
        return None, (f"--retrieval-compare {ref}: no history record at its merge-base {base[:10]} in "
                      f"{folder} (records at: {', '.join(held) or 'none'}); run the eval on {ref} with "
                      f"--retrieval-history {folder} first")
    return record, f"compared with {ref} at {base[:10]} (history record {record.path.name})"

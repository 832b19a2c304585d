"""Every run remembered (``--retrieval-history DIR``): one record per run, keyed by commit.

A record is one JSON file, as pytest-benchmark keeps one per saved run: the run's results.json
plus the commit, branch and dirty flag, the CI job, the time, and the fingerprints of what was
measured (corpus, labeled sets, judgments, engines, settings). Each file is written atomically
under a name no other writer takes (time, commit, process, random), so two xdist sessions or CI
jobs writing at once both keep theirs; the oldest beyond ``keep`` are removed (records only: a
file of the team's in the folder is never pruned, and one that is not a record is skipped with a
warning). ``compare_ref`` finds the record a branch is judged against: this job's (same job
name, same labeled sets by fingerprint) at the merge-base with a ref, and no other.

A corpus's document digests (``evaluation/fingerprints.py``, about 30 bytes a document) repeat
in almost every record, so the folder keeps them once, in ``corpora/<fingerprint>.json``
(written atomically, only when absent); a record names its corpus by fingerprint under
``"corpora"``, and the digests are read back only for a comparison across two corpora. A map is
written before the record naming it and removed once the last record naming it is pruned, all
under one lock, so a crash between the steps leaves at most a map no record names; a map deleted
by hand leaves its records readable, their change "cannot be itemised". Records written with the
digests inline (before) read as they are.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Collection, Mapping, Sequence

from .._atomic import locked, write_text_atomic
from .._plain import loads, strict_json
from ..errors import RetrievalEvalError
from ..evaluation.fingerprints import CORPORA, map_path, map_text, with_documents
from .results_json import HISTORY_FORMAT as FORMAT  # a record reads as a baseline file too
from ..types import canonical_json, sha256_text
from ..data.labeled import LabeledSet
from ..evaluation.results import RunResults

VERSION = 1
#: records kept by default (``--retrieval-history-keep``)
KEEP = 500
#: a record's file name (``History.append``): only these are pruned, counted and read as records
RECORD_NAME = re.compile(r"^\d{8}T\d{6}\.\d{6}Z_[^/]+\.json$")
#: where a record's job name comes from: ours first, then the CI's own
JOB_VARIABLES = ("RETRIEVAL_EVAL_JOB", "GITHUB_JOB", "CI_JOB_NAME")


def job_name() -> str | None:
    """This CI job's name (``RETRIEVAL_EVAL_JOB``, else GitHub Actions' or GitLab's), or None:
    two jobs writing to one history folder never take each other's record as a baseline."""
    return next((os.environ[v] for v in JOB_VARIABLES if os.environ.get(v)), None)


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


def _slice(part: Any) -> str | None:
    """A labeled set's slice (``--retrieval-slice``) as "I/N", or None for the whole set."""
    return f"{part.get('index')}/{part.get('count')}" if isinstance(part, Mapping) else None


@dataclass(frozen=True)
class Record:
    path: Path
    time: str
    git: Mapping[str, Any]
    fingerprints: Mapping[str, Any]
    results: Mapping[str, Any]
    #: the CI job that wrote it (``{"name": ...}``; empty for records written before jobs were kept)
    job: Mapping[str, Any] = field(default_factory=dict)
    #: corpus fingerprint -> ``{"name": ...}``: corpora whose digests the folder's map files keep
    #: (empty for a record holding them inline)
    corpora: Mapping[str, Any] = field(default_factory=dict)

    @property
    def commit(self) -> str | None:
        return self.git.get("commit")

    def labeled_sets(self) -> dict[tuple[str, str], tuple[str | None, str | None]]:
        """(engine, labeled set name) -> (the labeled set's fingerprint, its slice "I/N" or None),
        per recorded evaluation."""
        return {(e["engine"], e["labeled"]["name"]): (e["labeled"].get("fingerprint"), _slice(e["labeled"].get("slice")))
                for e in self.results.get("evaluations", [])}


    def corpus_fingerprints(self) -> set[str]:
        """The corpora the record's evaluations searched, by fingerprint (nothing else is read)."""
        return {str(f) for e in self.results.get("evaluations", []) if isinstance(e, dict)
                if (f := (e.get("corpus") or {}).get("fingerprint"))}

    def run(self, against: Collection[str] | None = None) -> RunResults:
        """The recorded run (``RunResults``), read as a baseline; a record whose results cannot be
        read is refused naming its file (a one-line error, never a traceback). ``against``: the
        corpora (fingerprints) of the run it is compared with: only the digests of the others
        are read from their maps, as only a corpus that differs is itemised (None: every one)."""
        from ..analysis.result import EvaluationResult
        from ..evaluation.fingerprints import checked
        from ..evaluation.record_json import evaluation_from_dict
        from ..evaluation.results import METRICS_FINGERPRINT, RunResults
        from ..rules.settings import GateSettings

        doc = self.results
        wanted = {f: ref for f, ref in self.corpora.items() if against is None or f not in against}
        recorded = doc.get("fingerprints")
        recorded = with_documents(recorded, wanted, self.path.parent) if wanted else recorded
        try:
            same = doc["metrics"]["fingerprint"] == METRICS_FINGERPRINT  # its recorded values read as they are
            run = RunResults([evaluation_from_dict(e, EvaluationResult, recorded=same) for e in doc.get("evaluations", [])],
                             doc["metrics"]["fingerprint"], settings=dict(doc.get("settings") or {}),
                             fingerprints=checked(recorded))
            GateSettings.from_dict(run.settings)  # a record is refused whole, never half read
        except RetrievalEvalError as exc:
            raise RetrievalEvalError(f"history record {shown(self.path)}: {exc}") from None
        except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
            raise RetrievalEvalError(f"not a readable history record ({type(exc).__name__}: {exc})",
                                     path=shown(self.path)) from None
        return run


class History:
    """The records in one folder: append, list (oldest first), and the one a ref is judged against."""

    def __init__(self, folder: str | Path, keep: int = KEEP) -> None:
        self.folder = Path(folder)
        self.keep = keep
        #: one line per file of the folder that is not a record (skipped), each said once
        self.warnings: list[str] = []

    def append(self, results_json: str, git_info: Mapping[str, Any], *, now: float | None = None,
               job: str | None = None) -> Path:
        """``job``: the CI job's name (default: ``job_name()``, from the environment)."""
        results = loads(results_json)
        now = time.time() if now is None else now
        # microseconds in the name: records of one second still sort in the order they were made
        stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime(now)) + f".{int(now % 1 * 1e6):06d}Z"
        name = f"{stamp}_{(git_info.get('commit') or 'nocommit')[:12]}_{os.getpid()}_{secrets.token_hex(3)}.json"
        self.folder.mkdir(parents=True, exist_ok=True)
        path = self.folder / name
        # one writer at a time keeps a map from being pruned between its check and its record's write
        with locked(self.folder / CORPORA):
            corpora, written = self._store_maps(results)
            record = {"format": FORMAT, "version": VERSION,
                      "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now)),
                      "git": dict(git_info), "job": {"name": job if job is not None else job_name()},
                      "fingerprints": fingerprints(results), "corpora": corpora, "results": results}
            try:
                write_text_atomic(path, strict_json(record, indent=1, sort_keys=True, ensure_ascii=False) + "\n")
            except BaseException:
                for made in written:  # a map only this record would have named
                    made.unlink(missing_ok=True)
                raise
            self._prune(set(corpora))
        return path

    def _store_maps(self, results: dict[str, Any]) -> tuple[dict[str, Any], list[Path]]:
        """Moves each corpus's digests out of ``results`` into the folder's map for it (written
        only when absent: one corpus, one file): the references the record keeps, and the
        maps written now. A corpus whose fingerprint names no file keeps its digests inline."""
        recorded = results.get("fingerprints")
        corpora = recorded.get("corpora") if isinstance(recorded, dict) else None
        if not isinstance(corpora, dict):
            return {}, []
        refs, written, inline = {}, [], {}
        for fingerprint, corpus in corpora.items():
            path = map_path(self.folder, fingerprint)
            if path is None or not isinstance(corpus, dict) or not isinstance(corpus.get("documents"), dict):
                inline[fingerprint] = corpus
                continue
            if not path.exists():
                write_text_atomic(path, map_text(fingerprint, corpus.get("name"), corpus["documents"]))
                written.append(path)
            refs[fingerprint] = {"name": corpus.get("name"), "documents": f"{CORPORA}/{path.name}"}
        results["fingerprints"] = {**recorded, "corpora": inline}
        return refs, written

    def _prune(self, kept: set[str]) -> None:
        """The oldest records beyond ``keep``, then each map that only they named (``kept``: the
        corpora of the record just written). The records left are read oldest first, where the
        next of a pruned record's corpus is, and only until every map is found named."""
        old = self._files()[:-self.keep] if self.keep else []
        maps: set[str] = set()
        for path in old:
            maps |= _references(path)
            path.unlink(missing_ok=True)
        maps -= kept
        for path in self._files() if maps else []:
            maps -= _references(path)
            if not maps:
                break
        for fingerprint in maps:
            path = map_path(self.folder, fingerprint)
            if path is not None:
                path.unlink(missing_ok=True)

    def count(self) -> int:
        """How many records the folder holds (their names only: nothing is read)."""
        return len(self._files())

    def _files(self) -> list[Path]:
        """The records' files, by name (a record's name: ``RECORD_NAME``), oldest first."""
        return sorted((p for p in self._json() if RECORD_NAME.match(p.name)), key=lambda p: p.name)

    def _json(self) -> list[Path]:
        return sorted(self.folder.glob("*.json")) if self.folder.is_dir() else []

    def records(self) -> list[Record]:
        """Every record, oldest first; a ``*.json`` that is not one (a file of the team's, a
        truncated copy) is skipped, with a line in ``warnings`` naming it."""
        out = []
        for path in self._json():
            problem = None
            try:
                doc = loads(path.read_text(encoding="utf-8"))  # an old record's NaN: None
            except (OSError, ValueError) as exc:
                doc, problem = None, str(exc)
            if problem is None:
                problem = _record_problem(doc)
            if problem is not None:
                said = f"{shown(path)}: not a history record ({problem}); skipped"
                if said not in self.warnings:
                    self.warnings.append(said)
                continue
            out.append(Record(path, doc["time"], doc.get("git") or {}, doc.get("fingerprints") or {}, doc["results"],
                              doc.get("job") or {}, doc.get("corpora") or {}))
        return sorted(out, key=lambda r: r.path.name)  # the name starts with the time, to the microsecond

    def at(self, commits: Sequence[str], records: Sequence[Record] | None = None) -> Record | None:
        """The newest record at one of ``commits`` (full or abbreviated), a clean checkout first;
        ``records``: the folder's, when the caller read them already."""
        found = [r for r in (self.records() if records is None else records) if r.commit and any(r.commit.startswith(c) or c.startswith(r.commit)
                                                                for c in commits)]
        found.sort(key=lambda r: (not r.git.get("dirty"), r.path.name))
        return found[-1] if found else None


def _record_problem(doc: Any) -> str | None:
    """Why a parsed JSON document is not a record this version reads, or None."""
    if not isinstance(doc, dict) or doc.get("format") != FORMAT or doc.get("version") != VERSION:
        return f"expected \"format\": \"{FORMAT}\", version {VERSION}"
    results = doc.get("results")
    if not isinstance(doc.get("time"), str) or not isinstance(results, dict) \
            or not isinstance(results.get("evaluations"), list) or not isinstance(doc.get("git") or {}, dict) \
            or not isinstance(doc.get("job") or {}, dict) or not isinstance(doc.get("corpora") or {}, dict):
        return "its \"time\", \"git\", \"job\", \"corpora\" or \"results\" is missing or of another type"
    for e in results["evaluations"]:
        if not (isinstance(e, dict) and isinstance(e.get("engine"), str) and isinstance(e.get("labeled"), dict)
                and isinstance(e["labeled"].get("name"), str)):
            return "an evaluation without its engine or labeled set"
    return None


def _references(path: Path) -> set[str]:
    """The corpora whose maps the record at ``path`` names (none when it cannot be read)."""
    try:
        corpora = json.loads(path.read_text(encoding="utf-8")).get("corpora")
    except (OSError, ValueError, AttributeError):
        return set()
    return set(corpora) if isinstance(corpora, dict) else set()


def shown(path: Path) -> Path:
    """``path`` as the user would type it: relative to the working directory where it is under it."""
    try:
        return path.resolve().relative_to(Path.cwd().resolve())
    except ValueError:
        return path


def _why_not(record: Record, mine: Mapping[tuple[str, str], tuple[str | None, str | None]], job: str | None,
             force: bool, run: RunResults | None = None) -> str | None:
    """Why ``record`` is not this job's baseline (another job, other engines or labeled sets,
    another slice, a labeled set of the same name with other questions: named, with ``run``),
    or None when it is."""
    if job and record.job.get("name") and record.job["name"] != job:
        return f"job {record.job['name']} (this job: {job})"
    theirs = record.labeled_sets()
    shared = [k for k in mine if k in theirs]
    if not shared:
        return (f"{', '.join(f'{e} on {lab}' for e, lab in theirs) or 'no evaluation'} "
                f"(this run: {', '.join(f'{e} on {lab}' for e, lab in mine)})")
    sliced = sorted({k[1]: (theirs[k][1], mine[k][1]) for k in shared if theirs[k][1] != mine[k][1]}.items())
    if sliced:  # another job of the matrix, forced or not

        def part(s: str | None) -> str:
            return f"slice {s}" if s else "the whole set"

        return "; ".join(f"{part(a)} of {name} (this run: {part(b)})" for name, (a, b) in sliced)
    differ = sorted({k[1]: (theirs[k][0], mine[k][0]) for k in shared if theirs[k][0] != mine[k][0]}.items())
    differ = [(name, pair) for name, pair in differ if not _stale_only(record, run, name)
              and not _subset_of_record(record, run, name) and not _same_questions(record, run, name)]
    if differ and not force:
        return "; ".join(f"labeled set {name} fingerprint {str(a)[:12]} (this run: {str(b)[:12]}"
                         f"{_changes(record, run, name)}; --retrieval-baseline-force compares over the questions "
                         "both hold)" for name, (a, b) in differ)
    return None


def _labeled_pair(record: Record, run: RunResults | None, name: str) -> tuple[LabeledSet, LabeledSet] | None:
    """The record's labeled set ``name`` and this run's, or None (no run, an unreadable record)."""
    from ..evaluation.record_json import evaluation_from_dict

    now = next((e.labeled for e in getattr(run, "evaluations", ()) if e.labeled.name == name), None)
    found = next((e for e in record.results.get("evaluations", []) if e["labeled"]["name"] == name), None)
    try:
        return (evaluation_from_dict(found).labeled, now) if now and found else None
    except (RetrievalEvalError, KeyError, TypeError, ValueError, AttributeError):
        return None


def _stale_only(record: Record, run: RunResults | None, name: str) -> bool:
    """The record's labeled set ``name`` differs from this run's only by questions one of them
    left out as stale (``baseline.stale_only``): the same labels, compared over the questions
    both hold (a corpus that moved is the comparison's to refuse, by name)."""
    from ..analysis.baseline import stale_only

    pair = _labeled_pair(record, run, name)
    return pair is not None and stale_only(*pair)


def _same_questions(record: Record, run: RunResults | None, name: str) -> bool:
    """The record's labeled set ``name`` and this run's hold the same questions, none changed
    (``baseline.same_questions``): their fingerprints differ only where no measure looks."""
    from ..analysis.baseline import same_questions

    pair = _labeled_pair(record, run, name)
    return pair is not None and same_questions(*pair)


def _subset_of_record(record: Record, run: RunResults | None, name: str) -> bool:
    """This run's labeled set ``name`` is a subset (``--retrieval-subset``) of the record's, every
    question unchanged: the full set's record serves it, compared over the subset's questions, as
    a full-set baseline file does (``baseline.subset_of``)."""
    from ..analysis.baseline import subset_of

    pair = _labeled_pair(record, run, name)
    return pair is not None and subset_of(pair[1], pair[0])


def _changes(record: Record, run: RunResults | None, name: str) -> str:
    """``: `` and the questions added, removed and changed between the record's labeled set
    ``name`` and this run's (``baseline.labeled_changes``), or '' (no run, an unreadable record)."""
    from ..analysis.baseline import labeled_changes

    pair = _labeled_pair(record, run, name)
    return f": {labeled_changes(*pair)}" if pair is not None else ""


def _measured(record: Record) -> tuple:
    """The corpora and labeled sets a record measured and its judgments file, by fingerprint."""
    evaluations = [e for e in record.results.get("evaluations", []) if isinstance(e, dict)]
    return (sorted({str((e.get("corpus") or {}).get("fingerprint")) for e in evaluations}),
            sorted({(str(e["labeled"].get("name")), str(e["labeled"].get("fingerprint"))) for e in evaluations}),
            str(((record.results.get("fingerprints") or {}).get("judgments") or {}).get("sha256")))


def changes_since(before: Record, after: Record) -> list[str]:
    """What ``after`` measured otherwise than ``before`` (``history`` lists it under the record):
    the corpus's documents, each labeled set's questions (of the names both hold) and the
    judgments file, named (``evaluation/fingerprints.py``); none when they measured alike or a
    record cannot be read."""
    from ..evaluation.fingerprints import corpus_changes
    from ..analysis.baseline import labeled_changes

    if _measured(before) == _measured(after):  # read from the files as they are: most records change nothing
        return []
    try:  # a corpus's digests are read only where the two records' corpora differ
        old, new = before.run(against=after.corpus_fingerprints()), after.run(against=before.corpus_fingerprints())
    except RetrievalEvalError:
        return []
    out = []
    corpora = [sorted({e.corpus_fingerprint for e in r.evaluations if e.corpus_fingerprint}) for r in (old, new)]
    if corpora[0] != corpora[1]:
        a, b = (c[0] if len(c) == 1 else None for c in corpora)
        said = f" ({corpus_changes(old.fingerprints, new.fingerprints, a, b)})" if a and b else ""
        out.append(f"corpus {', '.join(c[:12] for c in corpora[0]) or 'none'} -> "
                   f"{', '.join(c[:12] for c in corpora[1]) or 'none'}{said}")
    sets = [{e.labeled.name: e.labeled for e in r.evaluations} for r in (old, new)]
    for name, labeled in sets[1].items():
        was = sets[0].get(name)
        if was is not None and was.fingerprint != labeled.fingerprint:
            out.append(f"labeled set {name} ({labeled_changes(was, labeled)})")
    digests = [(r.fingerprints.get("judgments") or {}).get("sha256") for r in (old, new)]
    if all(digests) and digests[0] != digests[1]:
        out.append(f"judgments file sha256 {digests[0][:12]} -> {digests[1][:12]}")
    return out


def compare_ref(history: History, ref: str, cwd: Path, *, run: RunResults | None = None,
                force: bool = False) -> tuple[Record | None, str]:
    """The record ``ref`` is judged against: the newest of this job's at the merge-base of HEAD
    and ``ref`` (at ``ref`` itself only where the two share no history), and what was used, or
    why there is none (a message naming the commit looked at). ``run``: this run, whose job
    and labeled sets (by fingerprint, by name with ``force``) a record must share."""
    target = git(cwd, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")
    if target is None:
        return None, (f"--retrieval-compare {ref}: not a branch, tag or commit of the repository at {cwd}")
    base = git(cwd, "merge-base", "HEAD", target)
    commit, where = (base, f"its merge-base {base[:10]}") if base else (target, f"{target[:10]} (no merge-base with HEAD)")
    records = history.records()  # read once
    folder = shown(history.folder)
    todo = (f"run the eval on {ref} with --retrieval-history={folder} first" if commit == target else
            f"run the eval at {commit[:10]} (git checkout {commit[:10]}) with --retrieval-history={folder} first, "
            f"or rebase onto {ref}")
    there = [r for r in records if r.commit and (r.commit.startswith(commit) or commit.startswith(r.commit))]
    if not there:
        held = sorted({(r.commit or "no commit")[:10] for r in records})
        return None, (f"--retrieval-compare {ref}: no history record at {where} in {folder} "
                      f"(records at: {', '.join(held) or 'none'}); {todo}")
    mine: dict[tuple[str, str], tuple[str | None, str | None]] = {}
    if run is not None:
        mine = {(e.engine, e.labeled.name): (e.labeled.fingerprint, _slice(e.labeled.provenance.get("slice")))
                for e in run.evaluations}
        job = job_name()
        why = {r.path.name: _why_not(r, mine, job, force, run) for r in there}
        fitting = [r for r in there if why[r.path.name] is None]
        if not fitting:
            reasons = list(dict.fromkeys(why.values()))
            if all(r.startswith("labeled set ") for r in reasons):  # this branch changed the labels: running
                # the eval on the ref again records the old labels again; the reason names the remedy
                todo = f"a record of {ref} made once these labels are merged into it compares"
            return None, (f"--retrieval-compare {ref}: no history record of this job at {where} in {folder}: "
                          f"the {len(there)} record(s) there are of {'; '.join(reasons)}; {todo}")
        there = fitting
    def fit(r: Record) -> tuple:  # the same questions (forced: the same names only), most of them, clean, newest
        theirs = r.labeled_sets()
        return (sum(theirs.get(k) == v for k, v in mine.items()), len(set(theirs) & set(mine)),
                not r.git.get("dirty"), r.path.name)

    record = max(there, key=fit)
    return record, f"compared with {ref} at {commit[:10]} (history record {record.path.name})"

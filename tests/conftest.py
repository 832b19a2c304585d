import json
import shutil
import subprocess
import tempfile
from pathlib import Path

import os

os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")  # no network here; tests build pipelines directly

import pytest

REPO = Path(__file__).resolve().parents[1]

import importlib.util  # noqa: E402

#: the hybrid extra (Haystack, pgvector, psycopg) is installed: chunking, embedders, stores
HYBRID = all(importlib.util.find_spec(m) is not None for m in ("haystack", "psycopg", "haystack_integrations"))
requires_hybrid = pytest.mark.skipif(not HYBRID, reason="the hybrid extra is not installed (a failure under CI)")


def pytest_configure(config):
    # Registered here rather than in pyproject.toml, so it holds whatever rootdir pytest picks.
    config.addinivalue_line("markers", "slow: takes more than a few seconds (still runs in .ci/run)")
CORPUS = REPO / "corpus"
QUESTIONS = REPO / "questions.cache.json"


@pytest.fixture(scope="session", autouse=True)
def _import_once():
    """numpy and psycopg's C core cannot be imported twice in one process (psycopg's would raise
    the classes of its first import), and pytester's inline runs restore sys.modules after each
    run: imported once here, before any test, they survive them all. (A fixture, not a module
    import: collecting the tests, as ``pytest -m retrieval`` does, imports neither.)"""
    import numpy  # noqa: F401

    try:
        import psycopg  # noqa: F401
    except ImportError:  # a base install (no hybrid extra): the tests that need it skip
        pass


@pytest.fixture
def bundled_project(pytester):
    """A pytester project wired to the repository's bundled corpus and questions; only the
    keyword engine unless a test asks for more (``--retrieval-engine`` overrides the ini)."""
    pytester.makeini(
        f"""
        [pytest]
        retrieval_corpus = {CORPUS}
        retrieval_questions = {QUESTIONS}
        retrieval_engines = keyword
        """
    )
    return pytester


def write_docs(folder: Path, docs: list[dict]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for d in docs:
        (folder / f"{d['doc_id']}.json").write_text(json.dumps(d), encoding="utf-8")
    return folder


FAKE_KEY = "sk-test-SECRET-c0ffee-1234567890abcdef"


@pytest.fixture
def fake_api(monkeypatch):
    """A local OpenAI-compatible server; the plugin's base URL and a recognisable fake key point
    at it for the duration of the test."""
    from fake_api import FakeApi

    with FakeApi() as api:
        monkeypatch.setenv("RETRIEVAL_EVAL_BASE_URL", api.url)
        monkeypatch.setenv("RETRIEVAL_EVAL_API_KEY", FAKE_KEY)
        monkeypatch.delenv("OPENROUTER_API_KEY", raising=False)
        yield api


@pytest.fixture(scope="session")
def shared_cache_dir(tmp_path_factory):
    """One embedding cache for the whole test session, so the model loads at most once."""
    return tmp_path_factory.mktemp("retrieval-cache")


def parse_table(output: str) -> dict[str, dict[str, float]]:
    """The summary table of a run's output as {engine: {column: value}}, superscripts and
    interval lines left out."""
    import re

    lines = output.splitlines()
    start = next(i for i, l in enumerate(lines) if "retrieval evaluation" in l) + 1
    header = lines[start].split()
    table = {}
    for line in lines[start + 1:]:
        if line.startswith("  95% CI"):
            continue
        cells = [re.sub(r"[^\x00-\x7f]", "", c) for c in line.split()]
        cells = [c for c in cells if c]
        if len(cells) != len(header):
            break
        table[cells[0]] = {h: float(c) for h, c in zip(header[1:], cells[1:])}
    return table


@pytest.fixture
def sandbox_tmp():
    """TMPDIR for the inner run: every temp dir it makes lands here, so leftovers are visible."""
    path = Path(tempfile.mkdtemp(prefix="retrieval-sandbox-"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def leftovers(tmp: Path) -> tuple[list[str], list[str]]:
    dirs = sorted(p.name for p in tmp.glob("pytest-retrieval-pg-*"))
    ps = subprocess.run(["ps", "-ewwo", "pid,stat,args"], capture_output=True, text=True).stdout
    procs = [l for l in ps.splitlines() if str(tmp) in l and "postgres" in l and " Z" not in l]
    return dirs, procs


# --- under CI a skip is a failure ---------------------------------------------------------------
# A test that cannot run for a missing dependency must not pass CI by skipping. Only a skip whose
# reason starts with "not applicable:" (the machine is of another kind, e.g. a Docker daemon
# answers) stays a skip.

def _skip_is_a_failure(report) -> bool:
    if not (os.environ.get("CI") and report.skipped and not hasattr(report, "wasxfail")):
        return False
    reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
    return not reason.removeprefix("Skipped: ").startswith("not applicable:")


def _fail(report) -> None:
    reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
    report.outcome = "failed"
    report.longrepr = f"skipped under CI, which must run every test: {reason}"


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    if _skip_is_a_failure(report):
        _fail(report)
    return report


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(collector):
    report = yield
    if _skip_is_a_failure(report):
        _fail(report)
    return report

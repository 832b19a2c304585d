import functools
import json
import shutil
import subprocess
import tempfile
from pathlib import Path

import os
import sys

os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")  # no network here; tests build pipelines directly
#: ranx (an oracle of the tests, a peer of the bench) runs its own Python code uninterpreted by
#: numba: numba's compile of its ~130 functions took 465 s of a loaded CI worker in a fresh venv
#: for 60 questions' worth of values, interpreted 3 s, the same values (tests/unit/test_ranx_interop.py,
#: and the bench's quick run, whose figures are not kept). The bench itself, run by hand, compiles.
os.environ.setdefault("NUMBA_DISABLE_JIT", "1")

#: The tests' inner pytest runs (pytester's, subprocesses') leave out the third-party pytest
#: plugins the dev extra brings, which they do not test: hypothesis's imports hypothesis (1.8 s a
#: run) and langsmith's its client (1.5 s), a keyword run 6.1 s instead of 2.3 s. Set after this
#: session read its own options; the helpers that clean the environment for a run keep it.
INNER_ADDOPTS = "-p no:hypothesispytest -p no:langsmith_plugin -p no:anyio"
os.environ["PYTEST_ADDOPTS"] = f"{os.environ.get('PYTEST_ADDOPTS', '')} {INNER_ADDOPTS}".strip()

import pytest

REPO = Path(__file__).resolve().parents[1]

import importlib.util  # noqa: E402

#: the hybrid extra (Haystack, pgvector, psycopg) is installed: chunking, embedders, stores
HYBRID = all(importlib.util.find_spec(m) is not None for m in ("haystack", "psycopg", "haystack_integrations"))
requires_hybrid = pytest.mark.skipif(not HYBRID, reason="the hybrid extra is not installed (a failure under CI)")
#: the files extra (Haystack's Markdown and HTML converters' packages): folders of text files as corpora
FILES = all(importlib.util.find_spec(m) is not None for m in ("haystack", "mdit_plain", "trafilatura", "lxml_html_clean"))
requires_files = pytest.mark.skipif(not FILES, reason="the files extra is not installed (a failure under CI)")


# --- tiers and lanes ------------------------------------------------------------------------------
# tests/unit: pure (no process started, no pytester, no PostgreSQL, no model); tests/plugin: the
# plugin driven through pytester, without the hybrid stack; tests/system: PostgreSQL, the model,
# the browser, the example project, installs. The markers (tier, ``slow`` by rule, what a system
# test needs) put every test in one lane, and a bare ``pytest`` runs the inner loop: tests/lanes.py.
# A unit test that starts a process or asks for pytester fails saying so.
#: the suite's own plugins: its lanes (tests/lanes.py) and the datasets it reads from outside the
#: repository (tests/shared_datasets.py). Imported by pytest as plugins: this module imports them only later
pytest_plugins = ("lanes", "shared_datasets")


def tier_of(path: Path) -> str | None:
    from lanes import tier_of

    return tier_of(path)


def pytest_configure(config):
    if getattr(config.option, "hypothesis_profile", None):  # hypothesis's plugin loads it next: registered first
        _PROFILE_FROM_OPTION.append(config.option.hypothesis_profile)
        _profiles()


#: the modules that take longest, started first within their tier: under -n the workers then end
#: on the many short tests, not on one of these alone (in the order of their seconds in a full
#: run on 2026-12-07: the system tier's, the ONNX exports among them; the plugin tier's; the unit's)
SLOWEST_FIRST = ("test_bench.py", "test_snapshots.py", "test_user_pipelines.py", "test_embedders_runs.py",
                 "test_snapshots_runs.py", "test_example_project.py", "test_onnx_cache.py", "test_plugin_hybrid.py",
                 "test_portable.py", "test_html_page.py", "test_load.py", "test_drift_canaries_runs.py",
                 "test_plugin.py", "test_bench_runs.py", "test_lanes_runs.py", "test_judging_runs.py",
                 "test_metrics.py", "test_ppi_measures.py", "test_comment.py")
_TIER_ORDER = {"system": 0, "plugin": 1, "unit": 2}


def pytest_collection_modifyitems(items):
    def rank(item) -> tuple[int, int]:
        name = item.path.name
        return (_TIER_ORDER.get(tier_of(item.path), 1),
                SLOWEST_FIRST.index(name) if name in SLOWEST_FIRST else len(SLOWEST_FIRST))

    items.sort(key=rank)  # stable: each module keeps its own order


class ImpureUnitTest(Exception):
    pass


def _pure(item) -> bool:
    return tier_of(item.path) == "unit" or bool(os.environ.get("RETRIEVAL_TESTS_PROBE_PURITY"))


def pytest_runtest_setup(item):
    if _pure(item) and "pytester" in item.fixturenames:
        raise ImpureUnitTest(f"{item.nodeid} asks for pytester: it belongs in tests/plugin")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """A test under tests/unit that starts a process (PostgreSQL, a model server, pytest), in
    the test or in a fixture of any scope, fails at once: the tier's minute holds only while it
    stays pure."""
    if not _pure(item):
        return (yield)
    original = subprocess.Popen.__init__

    def refuse(self, args, *rest, **kwargs):
        raise ImpureUnitTest(f"{item.nodeid} starts a process ({args!r}): it belongs in tests/plugin or tests/system")

    subprocess.Popen.__init__ = refuse
    try:
        return (yield)
    finally:
        subprocess.Popen.__init__ = original


# --- Hypothesis profiles ------------------------------------------------------------------------
# ``ci`` runs each property test at its own committed count (``examples(300)`` is 300), ``dev`` at
# DEV_EXAMPLES at most: the inner loop's. HYPOTHESIS_PROFILE names one; unset, CI=true picks ``ci``
# and anything else ``dev``; ``--hypothesis-profile`` wins over both. Hypothesis is imported when a
# test module that uses it is (0.2 s that the README's ``pytest -m retrieval`` does not pay).
DEV_EXAMPLES = 10
_PROFILE_FROM_OPTION: list[str] = []


def hypothesis_profile() -> str:
    """The profile the property tests run under."""
    return (_PROFILE_FROM_OPTION[0] if _PROFILE_FROM_OPTION else
            os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") else "dev"))


@functools.lru_cache(maxsize=None)
def _profiles():
    from hypothesis import settings

    settings.register_profile("ci", deadline=None, print_blob=True)  # Hypothesis's own count where a test names none
    settings.register_profile("dev", max_examples=DEV_EXAMPLES, deadline=None)
    if not _PROFILE_FROM_OPTION:  # else hypothesis's plugin loads the one named
        settings.load_profile(hypothesis_profile())
    return settings


def examples(full: int) -> int:
    """A property test's example count: ``full`` under the ``ci`` profile, at most the loaded
    profile's count under any other."""
    settings = _profiles()
    return full if hypothesis_profile() == "ci" else min(full, settings.default.max_examples)


CORPUS = REPO / "corpus"
QUESTIONS = REPO / "questions.cache.json"


@pytest.fixture(scope="session", autouse=True)
def _import_once():
    """numpy and psycopg's C core cannot be imported twice in one process (psycopg's would raise
    the classes of its first import), and pytester's inline runs restore sys.modules after each
    run: imported once here, before any test, they survive them all. (A fixture, not a module
    import: collecting the tests, as ``pytest -m retrieval`` does, imports neither.)"""
    import numpy  # noqa: F401
    import httpcore  # noqa: F401  httpx reads httpcore's exception classes on first use: were httpcore
    import httpx  # noqa: F401  imported inside an inline run, later imports would raise other classes

    try:
        import psycopg  # noqa: F401
    except ImportError:  # a base install (no hybrid extra): the tests that need it skip
        pass


#: the user's cache folder as this session found it, before pytester gives its runs a fresh HOME
USER_CACHE = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")


def copy_of_the_machines_export(cache: Path) -> Path:
    """A verified copy, in the model cache ``cache``, of the built-in MiniLM's ONNX export in the
    machine's cache (the one every run of the suite on the built-in MiniLM uses), exported there
    first where it is missing: for tests that need an export in a cache of their own, not the
    export itself (each export takes 10 to 17 s). Returns the copy's folder."""
    from pytest_retrieval_eval.hybrid import onnx_embedder
    from pytest_retrieval_eval.hybrid.embedders import MINILM_SHA256, packaged_minilm_path

    made = onnx_embedder.ensure_export(packaged_minilm_path(), MINILM_SHA256,
                                       Path(USER_CACHE) / "pytest-retrieval-eval" / "models")
    copy = onnx_embedder.export_folder(cache, MINILM_SHA256)
    shutil.copytree(made, copy, ignore=shutil.ignore_patterns("*.lock"))
    assert onnx_embedder.check_export(copy) is None  # verified where it now is
    return copy


@pytest.fixture
def pytester(pytester, monkeypatch):
    """pytester, whose runs (inline and subprocess) leave out the same plugins: it clears
    PYTEST_ADDOPTS when made, so it is set again here. Its fresh HOME would also hide the
    machine's model cache, so every inner run on the built-in MiniLM exported it again (a cold
    bundled run took 23 s instead of 7): the runs keep the user's cache folder, as a team's runs
    on one machine do. Tests of the export itself name their own cache (``retrieval_model_cache``)."""
    monkeypatch.setenv("PYTEST_ADDOPTS", INNER_ADDOPTS)
    monkeypatch.setenv("XDG_CACHE_HOME", USER_CACHE)
    for name in [k for k in os.environ if k.startswith("PYTEST_XDIST")]:
        monkeypatch.delenv(name)  # an inner run is no worker of this one's
    return pytester


RETRIEVAL_TEST = """
    import pytest

    @pytest.mark.retrieval
    def test_quality(retrieval_results):
        assert retrieval_results.n > 0
"""


@pytest.fixture
def make_project(pytester):
    """The one project a plugin test runs in: ``make(corpus=..., questions=..., engines=...,
    conftest=..., tests=..., copy=..., **ini)`` writes its ini (the bundled corpus and questions,
    the keyword engine, unless told), a conftest.py and a test file; ``copy`` (``"corpus"``, ``"questions"``) puts those inside the
    project, for tests that edit them, named relatively."""

    def make(*, corpus: Path = CORPUS, questions: Path | None = QUESTIONS, engines: str = "keyword",
             conftest: str | None = None, tests: str | None = RETRIEVAL_TEST, copy: tuple[str, ...] = (),
             **ini: object) -> pytest.Pytester:
        if "corpus" in copy:
            shutil.copytree(corpus, pytester.path / corpus.name)
            corpus = Path(corpus.name)
        if "questions" in copy and questions is not None:
            shutil.copy(questions, pytester.path / questions.name)
            questions = Path(questions.name)
        lines = {"retrieval_corpus": corpus, "retrieval_questions": questions, "retrieval_engines": engines,
                 **{f"retrieval_{k}": v for k, v in ini.items()}}
        pytester.makeini("[pytest]\n" + "".join(f"{k} = {v}\n" for k, v in lines.items() if v is not None))
        if conftest is not None:
            pytester.makeconftest(conftest)
        if tests is not None:
            pytester.makepyfile(tests)
        return pytester

    return make


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


@pytest.fixture
def server(sandbox_tmp):
    """An embedded PostgreSQL of the test's own, running for the test: the "existing server" a
    dsn store connects to."""
    from pytest_retrieval_eval.hybrid.store.embedded import EmbeddedPostgres

    store = EmbeddedPostgres(tmp_root=sandbox_tmp)
    store.start()
    yield store
    store.stop()


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


#: where sandboxes go: RAM where the machine has a tmpfs (/dev/shm), as the store's own default
#: is (a server's data dir on disk took twice the CPU to start), else the temp dir
SANDBOX_ROOT = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None


@pytest.fixture(scope="session")
def _store_caches():
    """A temp dir whose embedded PostgreSQL cache (the initdb template a first run under a temp
    dir builds: 2 s of CPU) is made once for the session; None without the hybrid extra."""
    if not HYBRID:
        yield None
        return
    from pytest_retrieval_eval.hybrid.store.embedded import EmbeddedPostgres

    seed = Path(tempfile.mkdtemp(prefix="retrieval-seed-", dir=SANDBOX_ROOT))
    seed.chmod(0o755)
    store = EmbeddedPostgres(tmp_root=seed)
    store.start()
    store.stop()
    yield seed
    shutil.rmtree(seed, ignore_errors=True)


@pytest.fixture
def bare_sandbox_tmp():
    """TMPDIR for the inner run: every temp dir it makes lands here, so leftovers are visible;
    empty, as on a machine where the plugin never ran."""
    path = Path(tempfile.mkdtemp(prefix="retrieval-sandbox-", dir=SANDBOX_ROOT))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def sandbox_tmp(bare_sandbox_tmp, _store_caches):
    """``bare_sandbox_tmp`` holding the store's caches of a machine where the plugin ran before
    (hard links to the session's, where each sandbox built its own); its server dirs,
    processes and leftovers are still its own. Tests of a first run use ``bare_sandbox_tmp``."""
    if _store_caches is not None:
        for cache in _store_caches.glob("pytest-retrieval-eval-*"):  # the template (no lock files: their own)
            shutil.copytree(cache, bare_sandbox_tmp / cache.name, symlinks=True, copy_function=os.link)
    return bare_sandbox_tmp



@pytest.fixture
def read_only():
    """``read_only(folder)`` makes a folder read-only for root too, as a mounted image or a
    shared cache would be (a read-only bind mount of itself; chmod does not stop root), and
    undoes it after the test."""
    mounted = []

    def make(folder: Path) -> Path:
        for args in (["--bind", str(folder), str(folder)], ["-o", "remount,bind,ro", str(folder)]):
            done = subprocess.run(["mount", *args], capture_output=True, text=True)
            if done.returncode:  # only root on Linux can; there it must (under CI a plain skip fails)
                mine = sys.platform.startswith("linux") and os.geteuid() == 0
                pytest.skip(f"{'' if mine else 'not applicable: '}cannot bind-mount a folder read-only here "
                            f"({done.stderr.strip()})")
            if "--bind" in args:
                mounted.append(folder)
        return folder

    yield make
    for folder in reversed(mounted):
        subprocess.run(["umount", str(folder)], capture_output=True)


def interruptible() -> dict:
    """Popen arguments for a child a test interrupts as Ctrl-C at a terminal would (SIGINT): the
    signal at its default in the child, whatever this run inherited. A suite started in the
    background by a script (``.ci/run &``) inherits SIGINT ignored, and so would every child: its
    Python then never raises KeyboardInterrupt, and a test of Ctrl-C waits on a run that goes on."""
    import signal

    if os.name != "posix":
        return {}
    return {"preexec_fn": lambda: signal.signal(signal.SIGINT, signal.SIG_DFL)}


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


def results_text(run, settings=None, baseline=None) -> str:
    """The results.json a run writes, judged under ``settings`` (default: the defaults)."""
    from pytest_retrieval_eval.archive.saved import results_json
    from pytest_retrieval_eval.gate.verdict import verdict_of

    return results_json(verdict_of(run, settings, baseline=baseline))


def evaluate_engine(*args, **kwargs):
    """The runner's record (``evaluation.evaluate.evaluate_engine``) as the result a test asserts
    on, as the session hands it to a test (``EvaluationResult.of``)."""
    from pytest_retrieval_eval.analysis.result import EvaluationResult
    from pytest_retrieval_eval.evaluation.evaluate import evaluate_engine as run_engine

    return EvaluationResult.of(run_engine(*args, **kwargs))

"""The suite's own lanes (tests/lanes.py), run in a project laid out as this repository's tests
are: a bare ``pytest`` takes the inner loop, ``slow`` comes by rule, ``--lane`` picks lanes, naming
anything else runs what was named, and a test that falls in no lane fails saying what would
place it. The datasets outside the repository (tests/shared_datasets.py) are skipped, naming
where to get them, in a checkout with nothing beside it, and fail under CI."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO

LANES = REPO / "tests" / "lanes.py"

#: tests/conftest.py's use of tests/lanes.py (imported under another name: the inner runs share this
#: process, where ``lanes`` is this repository's own)
CONFTEST = 'pytest_plugins = ("copied_lanes",)\n'

FILES = {
    "unit/test_sample_fast.py": "def test_sum():\n    assert sum([1, 2]) == 3\n",
    "unit/test_sample_oracle.py": "def test_against_scipy():\n    if sum([]):  # named, never imported here\n        import scipy.stats\n",
    "unit/test_sample_waits.py": "import time\n\ndef test_waits():\n    time.sleep(0)\n",
    "unit/test_sample_helper_waits.py": ("import time\n\ndef pause():\n    time.sleep(0)\n\n"
                                  "def test_through_a_helper():\n    pause()\n"),
    "plugin/test_sample_inner_run.py": "def test_inner(pytester):\n    pytester.makepyfile('def test_x(): pass')\n",
    "system/test_sample_store.py": "import pytest\n\npytestmark = pytest.mark.postgres\n\ndef test_store():\n    pass\n",
    "system/test_sample_page.py": ("import pytest\n\npytestmark = pytest.mark.postgres\n\n"
                            "@pytest.mark.browser\ndef test_page():\n    pass\n"),
    "system/test_sample_forgot.py": "def test_needs_nothing_named():\n    pass\n",
}


@pytest.fixture
def suite(pytester):
    """A repository-like layout: pyproject at the root, tests/ with lanes.py and the tiers."""
    pytester.makefile(".toml", pyproject='[tool.pytest.ini_options]\ntestpaths = ["tests"]\n'
                                         'addopts = "-p pytester -p no:cacheprovider"\n')
    tests = pytester.path / "tests"
    tests.mkdir()
    shutil.copy(LANES, tests / "copied_lanes.py")
    (tests / "conftest.py").write_text(CONFTEST)
    for name, text in FILES.items():
        (tests / name).parent.mkdir(exist_ok=True)
        (tests / name).write_text(text)
    return pytester


def ran(result) -> set[str]:
    return {r.nodeid.split("/", 1)[1] for r in result.reprec.getreports("pytest_runtest_logreport") if r.when == "call"}


def test_a_bare_pytest_runs_the_inner_loop_only_and_says_so(suite):
    result = suite.runpytest("-p", "no:xdist")
    assert ran(result) == {"unit/test_sample_fast.py::test_sum"}
    result.stdout.fnmatch_lines(["lanes: inner (the default of a bare pytest; `pytest --lane all` runs every lane*"])
    assert result.ret == 0


def test_slow_is_applied_by_rule_oracles_real_time_through_helpers_and_inner_runs(suite):
    result = suite.runpytest("-p", "no:xdist", "--lane", "unit-slow", "--lane", "plugin")
    assert ran(result) == {"unit/test_sample_oracle.py::test_against_scipy", "unit/test_sample_waits.py::test_waits",
                           "unit/test_sample_helper_waits.py::test_through_a_helper", "plugin/test_sample_inner_run.py::test_inner"}
    assert result.ret == 0


def test_a_system_test_is_in_the_lane_of_the_last_need_it_names(suite):
    assert ran(suite.runpytest("-p", "no:xdist", "--lane", "postgres")) == {"system/test_sample_store.py::test_store"}
    assert ran(suite.runpytest("-p", "no:xdist", "--lane", "browser")) == {"system/test_sample_page.py::test_page"}


def test_every_lane_runs_everything_and_a_test_in_no_lane_fails_naming_the_markers(suite):
    result = suite.runpytest("-p", "no:xdist", "--lane", "all")
    result.assert_outcomes(passed=7, errors=1)
    result.stdout.fnmatch_lines(["*tests/system/test_sample_forgot.py::test_needs_nothing_named falls in no lane: a system "
                                 "test names what it needs (pytest.mark.postgres, pytest.mark.model, "
                                 "pytest.mark.browser, pytest.mark.packaging*"])


@pytest.mark.parametrize("args", [["-m", "postgres or not slow"], ["-k", "store or sum"], ["tests/system/test_sample_store.py"]])
def test_naming_a_path_a_marker_or_a_keyword_runs_what_was_named(suite, args):
    result = suite.runpytest("-p", "no:xdist", *args)
    assert "lanes:" not in result.stdout.str()
    expected = {"-m": {"unit/test_sample_fast.py::test_sum", "system/test_sample_store.py::test_store", "system/test_sample_page.py::test_page"},
                "-k": {"unit/test_sample_fast.py::test_sum", "system/test_sample_store.py::test_store"}}
    assert ran(result) == expected.get(args[0], {"system/test_sample_store.py::test_store"})


def test_a_bare_pytest_spreads_the_inner_loop_over_every_core(suite):
    result = suite.runpytest_subprocess()
    result.stdout.fnmatch_lines(["created: * workers", "*1 passed*"])
    assert result.ret == 0


# --- the datasets outside the repository -----------------------------------------------------------

def _checkout_without_datasets(tmp_path: Path) -> Path:
    """The repository's tracked files (and this change's), copied where no ``shared/`` is beside them."""
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=REPO, capture_output=True,
                            text=True, check=True).stdout.split()
    copy = tmp_path / "clone" / "pytest-retrieval-eval"
    for name in listed:
        if (REPO / name).is_file():
            (copy / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, copy / name)
    assert not (copy.parent / "shared").exists()
    return copy


def test_in_a_checkout_with_nothing_beside_it_the_dataset_tests_skip_naming_what_to_get_and_fail_under_ci(tmp_path):
    copy = _checkout_without_datasets(tmp_path)
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "RETRIEVAL_TESTS_DATASETS", "PYTEST_ADDOPTS")
           and not k.startswith("PYTEST_XDIST")}
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-m", "dataset", "--lane", "all", "-n", "0"]
    done = subprocess.run(command, cwd=copy, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    out = done.stdout
    named = out.split("= datasets outside the repository =", 1)[1].splitlines()  # said without -rs
    for name in ("scifact", "trec_eval_test", "ir_measures_test"):
        assert any(f"skipped: dataset {name} not found at {copy.parent / 'shared' / 'datasets' / name}" in line
                   and "set RETRIEVAL_TESTS_DATASETS to the folder that holds it" in line for line in named), out[-3000:]
    assert " passed" not in out.splitlines()[-1]  # every one of them skipped, none run against nothing

    done = subprocess.run(command, cwd=copy, env={**env, "CI": "true"}, capture_output=True, text=True, timeout=300)
    assert done.returncode == 1
    assert "skipped under CI, which must run every test: Skipped: dataset scifact not found at" in done.stdout

"""The package as a user installs it, before it is on the index: the sdist and the wheel built from
the checkout the way ``python -m build`` builds them (the sdist, then the wheel from the unpacked
sdist), the wheel installed with ``--no-deps`` into a fresh venv, and the bundled eval run there
by the installed plugin.

The setuptools backend is called directly (``python -m build --no-isolation`` does the same), so
the test needs no ``build`` package and no network. The fresh venv sees the heavy dependencies
of this venv through a ``.pth`` line naming its site-packages: a path line adds the folder only,
without running the ``.pth`` files inside it, so the editable install's own ``.pth`` (which puts
the checkout's ``src/`` on the path) is left out and the plugin imported is the wheel's.
"""

from __future__ import annotations

import configparser
import os
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import zipfile
from pathlib import Path

import pytest

from conftest import REPO, parse_table, requires_hybrid

pytestmark = [pytest.mark.packaging]


PACKAGE = "pytest_retrieval_eval"
#: what pyproject.toml's package-data ships beside the modules (py.typed once there is one)
PACKAGE_DATA = ("report/*.j2", "data/*.schema.json", "pipelines/*.yaml", "py.typed")
#: what a checkout holds that is not the project (the .gitignore entries, the repository, the venv)
NOT_THE_PROJECT = shutil.ignore_patterns(".git", ".venv", "__pycache__", "*.pyc", "*.egg-info", ".pytest_cache",
                                         ".hypothesis", "build", "dist", "site", "retrieval-report", "*.lock")
#: the bundled eval's rows as the README shows them (hit@1, hit@3, hit@5, hit@10, hit@20, mrr)
README_ROWS = {"hybrid": [0.809, 0.971, 0.971, 1.0, 1.0, 0.892], "keyword": [0.118, 0.265, 0.353, 0.574, 0.765, 0.251]}


def run(cmd: list[str], **kwargs) -> str:
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=900, **kwargs)
    assert done.returncode == 0, f"{' '.join(map(str, cmd))} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def backend(hook: str, source: Path, out: Path) -> Path:
    """One PEP 517 hook of the project's setuptools backend, run in ``source``; the file it wrote."""
    code = f"import sys; from setuptools import build_meta; print(build_meta.{hook}(sys.argv[1]))"
    return out / run([sys.executable, "-c", code, str(out)], cwd=source).splitlines()[-1]


def package_files(root: Path) -> set[str]:
    """The package's files under ``root`` (a folder holding ``pytest_retrieval_eval/``), relative."""
    return {p.relative_to(root).as_posix() for p in (root / PACKAGE).rglob("*")
            if p.is_file() and "__pycache__" not in p.parts}


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict:
    """The checkout copied (so no build files land in it), its sdist, and the wheel built from the
    unpacked sdist."""
    tmp = tmp_path_factory.mktemp("wheel")
    checkout = tmp / "checkout"
    shutil.copytree(REPO, checkout, ignore=NOT_THE_PROJECT)
    dist = tmp / "dist"
    dist.mkdir()
    sdist = backend("build_sdist", checkout, dist)
    with tarfile.open(sdist) as tar:
        tar.extractall(tmp / "unpacked", filter="data")
    (unpacked,) = (tmp / "unpacked").iterdir()
    wheel = backend("build_wheel", unpacked, dist)
    return {"checkout": checkout, "sdist": sdist, "unpacked": unpacked, "wheel": wheel, "tmp": tmp}


def test_the_sdist_holds_the_project_and_every_package_file(built):
    top = built["unpacked"]
    for name in ("pyproject.toml", "README.md", "LICENSE", "NOTICE"):
        assert (top / name).is_file(), f"the sdist has no {name}"
    missing = package_files(built["checkout"] / "src") - package_files(top / "src")
    assert not missing, f"the checkout's package files missing from the sdist: {sorted(missing)}"


def test_the_wheel_holds_the_package_its_data_and_entry_points(built):
    with zipfile.ZipFile(built["wheel"]) as whl:
        names = set(whl.namelist())
        info = next(n.split("/")[0] for n in names if n.endswith(".dist-info/METADATA"))
        entry_points = configparser.ConfigParser()
        entry_points.read_string(whl.read(f"{info}/entry_points.txt").decode())
        metadata = whl.read(f"{info}/METADATA").decode()
    shipped = {n for n in names if n.startswith(f"{PACKAGE}/")}
    expected = package_files(built["checkout"] / "src")
    assert shipped == expected, f"missing {sorted(expected - shipped)}, extra {sorted(shipped - expected)}"
    root = built["checkout"] / "src" / PACKAGE
    for pattern in PACKAGE_DATA:
        present = {f"{PACKAGE}/{p.relative_to(root).as_posix()}" for p in root.glob(pattern)}
        assert pattern == "py.typed" or present, f"the checkout has no {pattern}"
        assert present <= shipped, f"package data {pattern} missing from the wheel: {sorted(present - shipped)}"
    assert dict(entry_points["pytest11"]) == {"retrieval_eval": "pytest_retrieval_eval.plugin"}
    assert entry_points["console_scripts"]["pytest-retrieval-eval"] == "pytest_retrieval_eval.cli:main"
    assert {f"{info}/licenses/LICENSE", f"{info}/licenses/NOTICE"} <= names
    assert "Provides-Extra: hybrid" in metadata


def fresh_venv(path: Path) -> tuple[Path, Path]:
    """A venv without pip (this venv's pip installs into it): its python and its site-packages."""
    run([sys.executable, "-m", "venv", "--without-pip", str(path)])
    python = path / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    site = Path(run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"]).strip())
    return python, site


def user_project(folder: Path) -> Path:
    """What a user has: the bundled corpus and questions, the bundled eval's test file, an ini."""
    (folder / "tests").mkdir(parents=True)
    shutil.copytree(REPO / "corpus", folder / "corpus")
    shutil.copy(REPO / "questions.cache.json", folder)
    shutil.copy(REPO / "tests" / "system" / "test_bundled_eval.py", folder / "tests")
    (folder / "pytest.ini").write_text(
        "[pytest]\n"
        "addopts = -p no:langsmith_plugin\n"  # langchain-core's plugin, seen through this venv: 0.7 s
        "retrieval_corpus = corpus\n"
        "retrieval_questions = questions.cache.json\n"
        "retrieval_engines = keyword hybrid\n",
        encoding="utf-8")
    return folder


@requires_hybrid  # the hybrid engine runs from the installed wheel
def test_the_installed_wheel_runs_the_bundled_eval(built):
    tmp = built["tmp"]
    python, site = fresh_venv(tmp / "fresh")
    run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--no-index", "-q",
         str(built["wheel"])])
    ours = dict.fromkeys(sysconfig.get_path(k) for k in ("purelib", "platlib"))
    (site / "zz-test-venv.pth").write_text("".join(f"{p}\n" for p in ours), encoding="utf-8")
    project = user_project(tmp / "user")
    env = {k: v for k, v in os.environ.items()
           if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME") and not k.startswith(("PYTEST_", "RETRIEVAL_EVAL_"))}

    where = run([str(python), "-c", "import pytest_retrieval_eval as p, pytest_retrieval_eval.plugin as q; "
                 "print(p.__file__); print(q.__file__)"], cwd=project, env=env).split()
    assert all(Path(f).is_relative_to(site) for f in where), f"the plugin was not imported from the wheel: {where}"
    script = python.parent / ("pytest-retrieval-eval.exe" if os.name == "nt" else "pytest-retrieval-eval")
    assert "usage:" in run([str(script), "--help"], cwd=project, env=env)

    out = run([str(python), "-m", "pytest", "-m", "retrieval", "--retrieval-report", "-p", "no:cacheprovider"],
              cwd=project, env=env)
    assert "8 passed" in out and "skipped" not in out, out  # 4 tests x 2 engines, the floors checked
    table = parse_table(out)
    measures = ("hit@1", "hit@3", "hit@5", "hit@10", "hit@20", "mrr")
    assert {e: [table[e][m] for m in measures] for e in table} == README_ROWS, out

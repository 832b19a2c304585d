"""The composite action and every workflow (issue 31 item 3): valid against GitHub's schemas
(check-jsonschema's vendored ones, offline) and clean of medium and high findings of zizmor's
security audit (offline: pinned actions, no template injection, least permissions)."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from conftest import REPO

pytestmark = [pytest.mark.packaging]
WORKFLOWS = sorted((REPO / ".github" / "workflows").glob("*.yml"))
ACTION = REPO / ".github" / "actions" / "retrieval-eval" / "action.yml"


def tool(name: str) -> str:
    found = shutil.which(name)
    assert found, f"{name} is a test dependency (pip install -e '.[dev]')"  # never a skip: CI fails without it
    return found


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(args, capture_output=True, text=True, timeout=120, cwd=REPO)


def test_the_workflows_and_the_action_validate_against_githubs_schemas():
    assert {p.name for p in WORKFLOWS} >= {"ci.yml", "release.yml", "retrieval-eval.yml"}
    done = run(tool("check-jsonschema"), "--builtin-schema", "vendor.github-workflows", *map(str, WORKFLOWS))
    assert done.returncode == 0, done.stdout + done.stderr
    done = run(tool("check-jsonschema"), "--builtin-schema", "vendor.github-actions", str(ACTION))
    assert done.returncode == 0, done.stdout + done.stderr


def test_zizmor_finds_nothing_of_medium_or_high_severity():
    done = run(tool("zizmor"), "--offline", "--min-severity", "medium", "--format", "plain", ".github")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "No findings to report" in done.stdout + done.stderr


def test_a_planted_injection_is_caught_so_the_audit_can_fail(tmp_path):
    bad = tmp_path / ".github" / "workflows"
    bad.mkdir(parents=True)
    (bad / "bad.yml").write_text(
        "on: pull_request\npermissions: {}\njobs:\n  x:\n    runs-on: ubuntu-latest\n    steps:\n"
        "      - uses: actions/checkout@v4\n      - run: echo \"${{ github.event.pull_request.title }}\"\n")
    done = subprocess.run([tool("zizmor"), "--offline", "--min-severity", "medium", str(tmp_path / ".github")],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode != 0 and "template-injection" in done.stdout + done.stderr
    assert "unpinned-uses" in done.stdout + done.stderr

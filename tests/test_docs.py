"""The documentation: a short README that links into docs/, and a MkDocs site that builds with
``--strict`` (every page in the nav, every link and anchor resolving)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO

README = REPO / "README.md"
README_LIMIT = 12 * 1024
_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def broken_relative_links(markdown: str, base: Path) -> list[str]:
    """The relative links in ``markdown`` that name no file under ``base``, or a heading its
    Markdown file lacks (anchors as MkDocs makes them from the heading text)."""
    from markdown.extensions.toc import slugify

    broken = []
    for target in _LINK.findall(markdown):
        if re.match(r"[a-z]+:|#", target):
            continue
        path, _, anchor = target.partition("#")
        file = base / path
        if not file.exists():
            broken.append(target)
        elif anchor and file.suffix == ".md":
            headings = re.findall(r"^#+ (.+)$", file.read_text(encoding="utf-8"), re.M)
            if anchor not in {slugify(h, "-") for h in headings}:
                broken.append(target)
    return broken


def mkdocs_build(tmp_path: Path, config: Path = REPO / "mkdocs.yml") -> subprocess.CompletedProcess:
    """``mkdocs build --strict`` with the venv's mkdocs (no ``-q``: it hides the warnings that
    strict mode counts, and the build then passes whatever they say)."""
    pytest.importorskip("material", reason="mkdocs-material (the dev extra) builds the site")
    mkdocs = Path(sys.executable).with_name("mkdocs")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    return subprocess.run([str(mkdocs), "build", "--strict", "-f", str(config), "-d", str(tmp_path / "site")],
                          capture_output=True, text=True, env=env, timeout=300)


def test_the_site_builds_strict(tmp_path):
    done = mkdocs_build(tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    site = tmp_path / "site"
    assert (site / "options" / "index.html").is_file()
    assert "--retrieval-corpus" in (site / "options" / "index.html").read_text(encoding="utf-8")
    assert (site / "reports" / "index.html").is_file() and (site / "html-report.png").is_file()


def test_a_broken_link_fails_the_strict_build(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "index.md").write_text("# Home\n\nSee [the gates](gates.md#no-such-heading).\n", encoding="utf-8")
    (docs / "gates.md").write_text("# Gates\n\n## Threshold rules\n", encoding="utf-8")
    config = (REPO / "mkdocs.yml").read_text(encoding="utf-8")
    config = re.sub(r"(?ms)^nav:.*", "nav:\n  - Home: index.md\n  - Gates: gates.md\n", config)
    (tmp_path / "mkdocs.yml").write_text(config, encoding="utf-8")
    done = mkdocs_build(tmp_path, tmp_path / "mkdocs.yml")
    assert done.returncode != 0
    assert "does not contain an anchor '#no-such-heading'" in done.stderr


def test_the_readme_is_at_most_12_kb():
    assert README.stat().st_size <= README_LIMIT, f"README.md is {README.stat().st_size} bytes; move text to docs/"


def test_every_relative_link_in_the_readme_resolves():
    text = README.read_text(encoding="utf-8")
    assert "docs/options.md" in text and "docs/quickstart.md" in text
    assert broken_relative_links(text, REPO) == []
    sample = "[x](docs/nope.md#a) [y](https://example.org) [z](#top) [w](docs/gates.md#nope) [v](docs/gates.md#threshold-rules)"
    assert broken_relative_links(sample, REPO) == ["docs/nope.md#a", "docs/gates.md#nope"]


def test_the_readme_keeps_the_two_commands_ci_runs():
    text = README.read_text(encoding="utf-8")
    assert text.index("## Two commands on a fresh machine") < text.index("## Your own project in five minutes")
    assert 'pip install torch==2.13.0 -e ".[hybrid]" && pytest -m retrieval --retrieval-report' in text
    assert 'pip install torch==2.13.0 -e ".[dev]" && pytest\n' in text
    assert "python -m pytest_retrieval_eval label import labels.csv" in text

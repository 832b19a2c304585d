"""The documentation: a short README that links into docs/, and a MkDocs site that builds with
``--strict`` (every page in the nav, every link and anchor resolving)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO, requires_hybrid
from projects import contiguous_in, shown_block

pytestmark = [pytest.mark.model]

README = REPO / "README.md"


def mkdocs_build(tmp_path: Path, config: Path = REPO / "mkdocs.yml") -> subprocess.CompletedProcess:
    """``mkdocs build --strict`` with the venv's mkdocs (no ``-q``: it hides the warnings that
    strict mode counts, and the build then passes whatever they say)."""
    pytest.importorskip("material", reason="mkdocs-material (the dev extra) builds the site")
    mkdocs = Path(sys.executable).with_name("mkdocs")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    return subprocess.run([str(mkdocs), "build", "--strict", "-f", str(config), "-d", str(tmp_path / "site")],
                          capture_output=True, text=True, env=env, timeout=300)


@pytest.mark.packaging
def test_the_site_builds_strict(tmp_path):
    done = mkdocs_build(tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    site = tmp_path / "site"
    assert (site / "options" / "index.html").is_file()
    assert "--retrieval-corpus" in (site / "options" / "index.html").read_text(encoding="utf-8")
    assert (site / "reports" / "index.html").is_file() and (site / "html-report.png").is_file()


@pytest.mark.packaging
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


# Output shown in the docs is output the plugin prints: the bundled eval's summary (the landing
# page and the README), the significance table, the corpus lint, the gate's failure lines. The
# day is pinned (the shown output was judged on it), so the freshness block does not move with
# the calendar.
AS_OF = "2026-11-30"


def run_bundled(bundled_project, sandbox_tmp, cache_dir, *args: str,
                test: str = "def test_x(retrieval_results):\n    pass\n") -> str:
    """The bundled corpus and questions in a fresh project, on ``cache_dir``, the day pinned."""
    bundled_project.makepyfile(test)
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--retrieval-report",
                           f"--retrieval-as-of={AS_OF}", f"--retrieval-cache-dir={cache_dir}", *args],
                          cwd=bundled_project.path, env={**os.environ, "TMPDIR": str(sandbox_tmp)},
                          capture_output=True, text=True, timeout=600)
    return done.stdout + done.stderr


def shown_inline(path: Path, start: str) -> str:
    """An output line a page quotes in running text (a code span, perhaps wrapped)."""
    spans = re.findall(rf"`({re.escape(start)}[^`]*)`", path.read_text(encoding="utf-8"))
    assert spans, f"{path.name}: no `{start}...`"
    return spans[0].replace("\n", " ")


@requires_hybrid
def test_the_bundled_eval_output_in_the_docs_is_what_it_prints(bundled_project, sandbox_tmp, tmp_path,
                                                              shared_cache_dir):
    """On the session's warm cache (what is shown does not depend on it: a restored table brings its lint)."""
    docs, both, baseline = REPO / "docs", ("--retrieval-engine=hybrid", "--retrieval-engine=keyword"), tmp_path / "b.json"
    by = ("--retrieval-by=body-only", "--retrieval-by=versioned")  # the repository's retrieval_by
    assert 'retrieval_by = "body-only versioned"' in (REPO / "pyproject.toml").read_text(encoding="utf-8")
    lines = run_bundled(bundled_project, sandbox_tmp, shared_cache_dir, *both, *by,
                        f"--retrieval-save-baseline={baseline}").splitlines()
    summary = "----------------------------- retrieval evaluation"
    for page in (docs / "index.md", README):
        block = shown_block(page, summary)
        assert contiguous_in(block, lines), f"{page.name}: the bundled eval now prints:\n" + "\n".join(
            lines[next(i for i, l in enumerate(lines) if l.startswith(summary)):])
    for page, first in ((docs / "gates.md", "engine      hit@1"), (docs / "misses.md", "hybrid missed 2 of 68")):
        assert contiguous_in(shown_block(page, first), lines), f"{page.name}: block {first!r} is not what the run prints"
    # the detail the pages show is what -v adds
    verbose = run_bundled(bundled_project, sandbox_tmp, shared_cache_dir, *both, *by, "-v").splitlines()
    for page, first in ((docs / "reports.md", "corpus lint, corpus:"), (docs / "misses.md", "segment           n"),
                        (docs / "misses.md", "coverage: the questions judge"),
                        (docs / "misses.md", "hybrid, recall of all each stage held")):
        assert contiguous_in(shown_block(page, first), verbose), f"{page.name}: block {first!r} is not what -v prints"

    # again, warm (embeddings and the store snapshot cached), with what the gate, trials, shadow
    # and detectable-drop passages show; a variant without vectors shares the ingested table
    out = run_bundled(bundled_project, sandbox_tmp, shared_cache_dir, *both, "--retrieval-trials=3",
                      "--retrieval-threshold=hybrid:hit@5>=0.85", "--retrieval-threshold=hybrid:hit@1>=0.75",
                      "--retrieval-confidence=lower", f"--retrieval-baseline={baseline}", "--retrieval-max-drop=hit@5=0.01",
                      "--retrieval-shadow=hybrid:keyword", "--retrieval-variant=hybrid-kw: use_vector=false",
                      "--retrieval-engine=hybrid-kw", "--retrieval-shadow=hybrid-kw:hybrid",
                      "--retrieval-threshold=shadow.gain>=0", "-v")
    lines = out.splitlines()
    shown = [(docs / "gates.md", shown_block(docs / "gates.md", "hybrid: 3 trials:")),
             (docs / "gates.md", shown_block(docs / "gates.md", "warning: max-drop rule hit@5=0.01")),
             (docs / "gates.md", shown_block(docs / "gates.md", "INCONCLUSIVE retrieval gate: hybrid: hit@1")),
             (docs / "freshness.md", shown_block(docs / "freshness.md", "shadow hybrid vs keyword")),
             (docs / "freshness.md", [shown_inline(docs / "freshness.md", "FAIL retrieval gate: shadow")])]
    for page, block in shown:
        assert contiguous_in(block, lines), f"{page.name}: {block[0]!r}... is not what the run prints:\n{out}"


def test_the_failures_in_the_docs_are_what_it_prints(bundled_project, sandbox_tmp, tmp_path):
    """The quickstart's test file, run as shown, and two gate rules; its bm25 is the keyword engine
    under that name (no store, no model)."""
    test_file = "\n".join(shown_block(REPO / "docs" / "quickstart.md", "# tests/test_retrieval.py"))
    bundled_project.makeconftest("""
        from pytest_retrieval_eval.engines.keyword import KeywordEngine

        def pytest_retrieval_engines(registry, config):
            registry.register("bm25", lambda request: KeywordEngine(request.getfixturevalue("retrieval_corpus"),
                                                                   name="bm25"))
    """)
    out = run_bundled(bundled_project, sandbox_tmp, tmp_path, "--retrieval-engine=bm25", "--retrieval-engine=keyword",
                      "--retrieval-threshold=keyword:mrr>=0.999",
                      "--retrieval-threshold=keyword:freshness.stale_free@5>=1.0", test=test_file)
    failed = shown_block(REPO / "docs" / "quickstart.md", "E       AssertionError:")
    assert contiguous_in(failed, out.splitlines()), "quickstart.md: the failed assertion now reads:\n" + "\n".join(
        l for l in out.splitlines() if l.startswith("E "))
    shown = {
        "gates.md": "FAIL retrieval gate: keyword: mrr = 0.2514, required >= 0.999 (from --retrieval-threshold; n=68)",
        "freshness.md": shown_block(REPO / "docs" / "freshness.md", "FAIL retrieval gate: keyword: freshness")[0],
    }
    assert shown["gates.md"] in (REPO / "docs" / "gates.md").read_text(encoding="utf-8")
    for page, line in shown.items():
        assert contiguous_in([line], out.splitlines()), f"{page}: {line!r} is not what the gate prints:\n" + "\n".join(
            l for l in out.splitlines() if l.startswith("FAIL"))

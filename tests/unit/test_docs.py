"""The documentation: a short README that links into docs/, and a MkDocs site that builds with
``--strict`` (every page in the nav, every link and anchor resolving)."""

from __future__ import annotations

import re
from pathlib import Path

from conftest import REPO
from projects import contiguous_in, installs_the_repository, yaml_installs

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
    assert 'pip install --no-compile torch==2.13.0 -e ".[dev]" && pytest --lane all -n auto\n' in text
    assert "python -m pytest_retrieval_eval label import labels.csv" in text


def test_a_block_the_run_does_not_print_is_caught():
    lines = ["engine  hit@1", "keyword 0.118", "  95% CI ±.074"]
    assert contiguous_in(["keyword 0.118", "  95% CI ±.074"], lines)
    assert not contiguous_in(["keyword 0.119", "  95% CI ±.074"], lines)
    assert not contiguous_in(["engine  hit@1", "  95% CI ±.074"], lines)
    assert contiguous_in(["keyword 0...", "  95% CI ±.074"], lines) and not contiguous_in(["keyword 1..."], lines)
    assert contiguous_in(["engine  hit@1", "    ...", "  95% CI ±.074"], lines)
    assert not contiguous_in(["engine  hit@1", "    ...", "keyword 0.118"], lines + ["x"])


def test_ci_runs_exactly_the_readmes_test_command():
    """The README's second command is what .ci/run runs: the two cannot drift apart."""
    for page in (README, REPO / "docs" / "index.md"):
        block = re.search(r"Run the test suite[^\n]*\n\n```bash\n(.+?)\n```", page.read_text(encoding="utf-8"), re.S)
        assert block, page
        install, _, command = block.group(1).rpartition(" && ")
        steps = [line for line in (REPO / ".ci" / "run").read_text().splitlines() if line and not line.startswith("#")]
        assert steps[-1] == command == "pytest --lane all -n auto", page
        assert install.endswith('pip install --no-compile torch==2.13.0 -e ".[dev]"') and install in steps


def test_the_ci_snippets_install_the_plugin_not_the_repository():
    """The quickstart's and the CI recipes' workflow steps run in an eval repository that is no
    Python package: they install the plugin by name (from the registry, a git URL or a wheel), never
    the repository itself."""
    assert installs_the_repository(["-e", ".", "pytest-retrieval-eval"])  # what the quickstart showed
    assert installs_the_repository(["-e", ".[hybrid]"]) and installs_the_repository(["./eval"])
    assert not installs_the_repository(["-r", "requirements.txt", "pytest-retrieval-eval[hybrid]"])
    assert not installs_the_repository(["torch", "--index-url", "https://download.pytorch.org/whl/cpu"])
    pages = [README, *sorted((REPO / "docs").glob("*.md"))]
    installs = {p.name: yaml_installs(p.read_text(encoding="utf-8")) for p in pages}
    assert installs["quickstart.md"] and installs["ci.md"] and installs["install.md"]
    for page, found in installs.items():
        for words in found:
            assert not installs_the_repository(words), f"{page}: pip install {' '.join(words)}"
    plugin = [w for found in installs.values() for words in found for w in words if "pytest-retrieval-eval" in w]
    assert len(plugin) >= 4, plugin  # the quickstart's, the two recipes of ci.md, install.md's

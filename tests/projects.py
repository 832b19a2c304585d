"""What several test modules build alike: a BEIR folder with the awkward bits real ones have,
the oracle engine (the labeled set's own answers) the report tests gate, a small corpus for
question generation, the matching of what the docs show against what a run prints, and the
team's own project (examples/helpdesk) copied to a fresh directory and run there.
Imported by name (``from projects import ...``): tests/ is on sys.path through its conftest."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

#: The bundled questions' one retrieval test: all 68 evaluated.
BUNDLED_TESTS = """
    import pytest

    pytestmark = pytest.mark.retrieval

    def test_quality(retrieval_results):
        assert retrieval_results.n == 68
"""

#: An engine that answers from the labeled set itself, minus the questions named in $MISS.
ORACLE_CONFTEST = """
    import os

    class Oracle:
        '''Answers from the labeled set itself, minus the queries named in $MISS (a degradation).'''
        name = "oracle"
        def __init__(self, labeled):
            self.gold = {q.question: q.gold[0] for q in labeled}
        def retrieve(self, query, k):
            missed = os.environ.get("MISS", "").split(",")
            qid = [q for q in os.environ.get("QIDS", "").split(",")]
            if any(m and m in query for m in missed):
                return ["nothing-here"]
            return [self.gold[query], "battery-care"][:k]

    def pytest_retrieval_engines(registry, config):
        registry.register("oracle", lambda request: Oracle(request.getfixturevalue("labeled_queries")))
"""


#: a team's own project (its kb, labels, engines and gate; the plugin installed as a package)
HELPDESK = Path(__file__).resolve().parents[1] / "examples" / "helpdesk"


def helpdesk_copy(tmp_path: Path) -> Path:
    """examples/helpdesk copied to a fresh directory, without what earlier runs left in it."""
    target = tmp_path / "helpdesk"
    shutil.copytree(HELPDESK, target, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache", "retrieval-report"))
    return target


def run_in(project: Path, *args: str, module: str = "pytest", env: dict | None = None) -> subprocess.CompletedProcess:
    """``python -m MODULE ARGS`` in ``project`` as its team runs it: none of the outer run's pytest
    or plugin settings leak in (``PYTEST_ADDOPTS`` aside), and pytest without its cache."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "RETRIEVAL_EVAL_")) or k == "PYTEST_ADDOPTS"}
    flags = ["-p", "no:cacheprovider"] if module == "pytest" else []
    return subprocess.run([sys.executable, "-m", module, *flags, *args], cwd=project, capture_output=True, text=True,
                          env={**clean, **(env or {})}, timeout=300)


def summary_of(lines: list[str]) -> list[str]:
    """A run's retrieval section: from its heading to pytest's closing line (what ``report
    results.json`` prints again)."""
    start = next(i for i, line in enumerate(lines) if "retrieval evaluation" in line and line.startswith("---"))
    return [line for line in lines[start:-1] if not line.startswith("retrieval: ")]


def make_beir(root, *, crlf=True, bom=True):
    (root / "qrels").mkdir(parents=True)
    nl = "\r\n" if crlf else "\n"
    prefix = "\ufeff" if bom else ""
    (root / "corpus.jsonl").write_text(prefix + nl.join([
        json.dumps({"_id": "d1", "title": "Vitamin D", "text": "Vitamin D and bones.", "metadata": {}}),
        "",
        json.dumps({"_id": "d2", "title": "", "text": "Sleep and memory.", "metadata": {}}),
    ]) + nl, encoding="utf-8", newline="")
    (root / "queries.jsonl").write_text(nl.join([
        json.dumps({"_id": "q1", "text": "does vitamin d help bones", "metadata": {}}),
        json.dumps({"_id": "q2", "text": "sleep memory", "metadata": {}}),
        json.dumps({"_id": "q3", "text": "unjudged", "metadata": {}}),
    ]) + nl, encoding="utf-8", newline="")
    (root / "qrels" / "test.tsv").write_text(
        prefix + nl.join(["query-id\tcorpus-id\tscore", "q1\td1\t2", "q1\td2\t0", "q2\td2\t1"]) + nl,
        encoding="utf-8", newline="")
    return root


# --- a small corpus for question generation -------------------------------------------------------

#: A help center's articles as its team keeps them: Markdown with and without front matter, plain
#: text, HTML pages with their site's navigation and scripts, a hidden folder and an image.
HELP_CENTER = {
    "getting-started.md": "---\ntitle: Getting started with Acme\ndescription: Your first steps.\n"
                          "valid_from: 2024-01-01\ntags: [onboarding]\n---\n# Welcome\n\n"
                          "Create an account with your work email, then invite your team.\n",
    "billing/refunds.md": "# Refunds and *returns*\n\nWe refund a yearly plan **within 30 days** of "
                          "purchase.\n\n```bash\n# not a heading\nacme refund --last\n```\n",
    "billing/invoices.txt": "Invoices are emailed on the first day of each month.\nDownload them from the "
                            "billing page.\n",
    "account/reset-password.html": "<!doctype html><html><head><title>Reset your password</title>"
                                   "<script>var tracking = 1;</script><style>p { color: red }</style></head>"
                                   "<body><h1>Forgot your password?</h1><p>Click <b>Forgot password</b> on the "
                                   "sign-in page and follow the link we email you. The link stays valid for "
                                   "one hour.</p></body></html>",
    "account/close.html": "<html><body><h1>Close your account</h1><p>Open the settings, choose "
                          "<em>Close account</em> and confirm by email. Your data is removed within "
                          "thirty days.</p></body></html>",
    "notes.md": "Opening hours: support answers from 9 to 17 on weekdays.\n",
    ".github/TEMPLATE.md": "# Not an article\n\nA template of the repository, not of the help center.\n",
    "images/logo.png": "\x89PNG not text",
}


def make_help_center(root: Path) -> Path:
    for name, text in HELP_CENTER.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    return root


def words(n: int, seed: str) -> str:
    return " ".join(f"{seed}{i}" for i in range(n))


def small_corpus(folder):
    """Three documents, four chunks at 30 words with 5 overlapping (alpha makes two)."""
    from conftest import write_docs

    return write_docs(folder, [
        {"doc_id": "alpha", "title": "Alpha", "content": words(50, "a")},
        {"doc_id": "beta", "title": "Beta", "content": words(20, "b")},
        {"doc_id": "gamma", "title": "Gamma", "content": words(10, "g")},
    ])


# --- what the docs show, matched against what a run prints -----------------------------------------


def code_blocks(markdown: str) -> list[list[str]]:
    """The lines of each fenced code block."""
    return [b.splitlines() for b in re.findall(r"(?ms)^```[^\n]*\n(.*?)^```$", markdown)]


def yaml_installs(markdown: str) -> list[list[str]]:
    """What each pip install line of the page's YAML blocks (a workflow's ``run:`` steps, the
    action's ``install:`` input) installs: its words after ``pip install``."""
    out = []
    for block in re.findall(r"(?ms)^```yaml\n(.*?)^```$", markdown):
        for line in block.splitlines():
            command = line.split(" #", 1)[0]
            if "pip install " in command:
                out.append(shlex.split(command.split("pip install ", 1)[1]))
            elif re.match(r"\s*install:\s", command):
                out.append(shlex.split(command.split("install:", 1)[1]))
    return out


def installs_the_repository(words: list[str]) -> bool:
    """Whether an install asks for the repository it runs in as a Python package (``.``,
    ``-e .``, ``.[extra]``, ``./path``): a repository of a corpus, labels, a conftest.py and tests
    has no pyproject.toml for pip to build ("does not appear to be a Python project")."""
    takes_value = {"-r", "--requirement", "-c", "--constraint", "-i", "--index-url", "--extra-index-url",
                   "-f", "--find-links"}
    skip = False
    for word in words:
        if skip:
            skip = False
            continue
        if word in takes_value:
            skip = True
        elif word not in ("-e", "--editable") and not word.startswith("-") and re.match(r"\.(/|\[|$)", word):
            return True
    return False


def shown_block(path: Path, first_line: str) -> list[str]:
    blocks = [b for b in code_blocks(path.read_text(encoding="utf-8")) if b and b[0].startswith(first_line)]
    assert blocks, f"{path.name}: no code block starting {first_line!r}"
    return blocks[0]


def same_line(shown: str, printed: str) -> bool:
    """``...`` in a shown line stands for what the docs leave out."""
    return re.fullmatch(".*?".join(map(re.escape, shown.split("..."))), printed) is not None


def block_at(block: list[str], lines: list[str]) -> bool:
    """``block`` matches the start of ``lines``; a shown line of ``...`` alone stands for one or
    more printed lines."""
    if not block:
        return True
    if block[0].strip() == "..." and len(block[0]) > 3:
        return any(block_at(block[1:], lines[n:]) for n in range(1, len(lines) + 1))
    return bool(lines) and same_line(block[0], lines[0]) and block_at(block[1:], lines[1:])


def contiguous_in(block: list[str], lines: list[str]) -> bool:
    return any(block_at(block, lines[i:]) for i in range(len(lines)))


def saved_oracle_run(folder: Path, tests: str, *flags: str) -> dict:
    """A real results.json of the keyword engine and the oracle on the bundled set, saved by a
    pytest run in ``folder`` (with ``flags``), as read back."""
    import subprocess
    import sys
    import textwrap

    from conftest import CORPUS, QUESTIONS

    (folder / "tox.ini").write_text(f"[pytest]\nretrieval_corpus = {CORPUS}\nretrieval_questions = {QUESTIONS}\n"
                                    "retrieval_engines = keyword oracle\n")
    (folder / "conftest.py").write_text(textwrap.dedent(ORACLE_CONFTEST))
    (folder / "test_q.py").write_text(tests)
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *flags,
                           "--retrieval-save-baseline=r.json"], cwd=folder, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout
    return json.loads((folder / "r.json").read_text())


BENCH = Path(__file__).resolve().parents[1] / "bench" / "run.py"


def bench_in_tiny_mode(results: Path):
    """bench/run.py as a module, its sections at their tiny sizes, its rows emptied and its
    results files written under ``results`` (never over the committed ones): for the tests that
    run each section once (tests/plugin/test_bench_runs.py, tests/system/test_bench.py)."""
    import importlib.util

    name = "retrieval_bench_run"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, BENCH)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    bench = sys.modules[name]
    bench.set_mode("tiny")
    bench.rows.clear()
    bench.RESULTS = results
    return bench


def bench_section_ran(bench, *sections: str) -> list[dict]:
    """The rows ``sections`` recorded, after checking that each recorded some, skipped nothing and
    has its own part in the summary written from them, and that nothing else recorded any."""
    rows = [r for r in bench.rows if r["section"] in sections]
    assert {r["section"] for r in bench.rows} == set(sections), sorted({r["section"] for r in bench.rows})
    assert not [r for r in rows if r.get("name") == "skipped"], rows
    bench.write_results()
    summary = (bench.RESULTS / "summary.md").read_text()
    assert all(f"\n## {section}\n" in summary for section in sections), summary[:2000]
    return rows

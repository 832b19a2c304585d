"""Data the suite reads from outside the repository, in place (never copied into it): peers'
test files and a real BEIR collection. One setting finds them all: ``RETRIEVAL_TESTS_DATASETS``,
a folder holding one folder per dataset, by default ``shared/datasets`` beside the checkout
(where this project's machines keep them).

A test that reads one is marked ``@pytest.mark.dataset("scifact")``. Where the folder is absent
it is skipped with a reason naming the dataset, where it was looked for and where to get it;
under ``CI=true`` that skip is a failure (tests/conftest.py), as every skip is.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
VARIABLE = "RETRIEVAL_TESTS_DATASETS"
#: how each skip reason for an absent dataset begins (the summary finds them by it)
PREFIX = "dataset "

#: name -> (a file that must be in its folder, where to get it)
DATASETS = {
    "scifact": ("corpus.jsonl", "BEIR's SciFact, unzipped: https://public.ukp.informatik.tu-darmstadt.de/thakur/"
                                "BEIR/datasets/scifact.zip"),
    "trec_eval_test": ("out.test", "the test/ folder of trec_eval 10: https://github.com/usnistgov/trec_eval "
                                   "(commit f4253652)"),
    "ir_measures_test": ("cwl.run", "cwl.qrels and cwl.run from the tests/ folder of ir_measures: "
                                    "https://github.com/terrierteam/ir_measures"),
    "mtrag": ("mtrag-human/evaluations/reference_subset_with_human_evaluations.json",
              "the human/ folder of IBM's MTRAG as mtrag-human/ and mtrag/ of MTRAG-UN as mtragun-human/, "
              "unchanged: https://github.com/IBM/mt-rag-benchmark (commit cc5b1d48)"),
}


def root() -> Path:
    return Path(os.environ.get(VARIABLE) or REPO.parent / "shared" / "datasets")


def dataset_path(name: str) -> Path:
    """Where the dataset ``name`` is looked for (whether or not it is there)."""
    if name not in DATASETS:
        raise KeyError(f"unknown dataset {name!r}: tests/shared_datasets.py lists {', '.join(DATASETS)}")
    return root() / name


def missing(name: str) -> str | None:
    """Why the dataset ``name`` cannot be read, or None where it can."""
    path = dataset_path(name)
    needed, source = DATASETS[name]
    if (path / needed).is_file():
        return None
    return (f"{PREFIX}{name} not found at {path} (no {needed}): get {source}, and put it there or set "
            f"{VARIABLE} to the folder that holds it")


# --- hooks: a plugin of the suite's own (``pytest_plugins`` in tests/conftest.py) -------------------

def pytest_runtest_setup(item: pytest.Item) -> None:
    """At setup: skip a test whose datasets are absent (a failure under CI)."""
    for marker in item.iter_markers("dataset"):
        why = missing(*marker.args)
        if why is not None:
            pytest.skip(why)


def summary(reports) -> list[str]:
    """Lines naming each absent dataset, where to get it and how many tests it skipped (the
    terminal's summary: a plain run's shows no skip reasons)."""
    by: dict[str, list[str]] = {}
    for report in reports:
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else ""
        reason = reason.removeprefix("Skipped: ")
        if reason.startswith(PREFIX):
            by.setdefault(reason, []).append(report.nodeid)
    return [f"{len(ids)} test{'s' * (len(ids) != 1)} skipped: {reason} (e.g. {ids[0]})" for reason, ids in by.items()]


def pytest_terminal_summary(terminalreporter) -> None:
    lines = summary(terminalreporter.stats.get("skipped", []))
    if lines:
        terminalreporter.section("datasets outside the repository")
        for line in lines:
            terminalreporter.line(line)

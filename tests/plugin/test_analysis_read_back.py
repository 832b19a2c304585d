"""A saved run's analysis is read back, not made again: ``report results.json`` renders every
artefact of the run, byte for byte, with every measure's evaluation, the paired test, the
bootstrap, the PPI estimate and the miss attribution made to raise (``analysis/analyse.py``,
``archive/saved.py``)."""

from __future__ import annotations

import pytest

from projects import BUNDLED_TESTS, ORACLE_CONFTEST, summary_of
from pytest_retrieval_eval.cli import main as cli

#: every artefact of the report folder; timing.json holds wall times, which a saved run has not
FILES = ["results.json", "results.md", "per_query.jsonl", "qrels.txt", "runs/keyword.trec", "runs/oracle.trec",
         "hit_at_k.svg"]


def no_statistics(monkeypatch) -> None:
    """Every measure, paired test, bootstrap, Wilson interval, PPI estimate, miss attribution and
    stage curve raises from here on: ``ir.metrics.evaluate``, every public function of
    ``ir.stats``, ``ir.paired`` and ``ir.ppi``, under each name a module of the package holds it
    by, and every method of ``Scores`` (``analysis/scores.py``), the evaluations' calculator."""
    import inspect
    import sys

    import pytest_retrieval_eval.analysis.ceiling as ceiling
    import pytest_retrieval_eval.analysis.causes as causes
    import pytest_retrieval_eval.ir.metrics as metrics
    import pytest_retrieval_eval.ir.paired as paired
    import pytest_retrieval_eval.ir.ppi as ppi
    import pytest_retrieval_eval.ir.stats as stats
    from pytest_retrieval_eval.analysis.scores import Scores

    def refused(*args, **kwargs):
        raise AssertionError("a statistic was computed again while a saved run was rendered")

    computing = {metrics.evaluate, metrics.per_query_frame, causes.causes, causes.cause_of, ceiling.ceiling_of,
                 ceiling.lost_at}
    computing |= {f for module in (stats, paired, ppi) for name, f in vars(module).items()
                  if inspect.isfunction(f) and f.__module__ == module.__name__ and not name.startswith("_")}
    for module in [m for name, m in sys.modules.items() if name.startswith("pytest_retrieval_eval") and m]:
        for name, value in list(vars(module).items()):
            if inspect.isfunction(value) and value in computing:
                monkeypatch.setattr(module, name, refused)
    for name, value in list(vars(Scores).items()):
        if not name.startswith("__") and (inspect.isfunction(value) or isinstance(value, (property, classmethod))):
            monkeypatch.setattr(Scores, name, property(refused) if isinstance(value, property) else refused)


@pytest.fixture
def failed_run(make_project):
    """A run against a baseline with a failing rule, segments and a segment rule, a shadow pair,
    freshness columns and repeated trials: every section of every artefact has something in it."""
    p = make_project(engines="keyword oracle", conftest=ORACLE_CONFTEST, tests=BUNDLED_TESTS)
    assert p.runpytest("-m", "retrieval", "--retrieval-save-baseline=base.json").ret == 0
    result = p.runpytest("-m", "retrieval", "--retrieval-report", "--retrieval-report-dir=out",
                         "--retrieval-html=page.html", "--retrieval-baseline=base.json", "--retrieval-by=tags",
                         "--retrieval-shadow=keyword:oracle", "--retrieval-max-drop=hit@5=0.0",
                         "--retrieval-threshold=keyword:hit@5>=0.9", "--retrieval-threshold=keyword:mrr>=0.9",
                         "--retrieval-threshold=oracle:hit@1>=0.99", "--retrieval-threshold=[body-only]:hit@5>=0.9",
                         "--retrieval-as-of=2026-11-30", "--retrieval-trials=2",
                         "--retrieval-measures=hit@1,hit@5,mrr,freshness.stale_free@5,freshness.conflict_free@5")
    assert result.ret == 1, result.stdout.str()
    return p, summary_of(result.stdout.lines)


def test_every_artefact_renders_from_results_json_byte_identical_with_no_statistic_computed(failed_run, monkeypatch,
                                                                                           capsys):
    p, printed = failed_run
    # the keyword engine reports its one leg: its recall by stage is among what is read back
    assert "## Recall by stage" in (p.path / "out" / "results.md").read_text(encoding="utf-8")
    assert 'id="recall-by-stage"' in (p.path / "page.html").read_text(encoding="utf-8")
    assert cli(["report", "comment", str(p.path / "out" / "results.json")]) == 1
    comment = capsys.readouterr().out
    no_statistics(monkeypatch)
    assert cli(["report", str(p.path / "out" / "results.json"), "--out", str(p.path / "again"),
                "--html", str(p.path / "again.html")]) == 1
    assert capsys.readouterr().out.splitlines() == printed  # the run's own terminal summary
    for name in FILES:
        assert (p.path / "again" / name).read_bytes() == (p.path / "out" / name).read_bytes(), name
    assert (p.path / "again.html").read_bytes() == (p.path / "page.html").read_bytes()
    assert cli(["report", "comment", str(p.path / "out" / "results.json")]) == 1
    again = capsys.readouterr().out
    assert again == comment and "FAIL" in "\n".join(again.splitlines()[:10])


def test_a_changed_setting_makes_the_analysis_again(failed_run, monkeypatch):
    """The recorded analysis is read only where it was made from the same run, settings and
    baseline: another alpha is another analysis, made now (here: the refused statistics raise)."""
    p, _ = failed_run
    no_statistics(monkeypatch)
    with pytest.raises(AssertionError, match="a statistic was computed again"):
        cli(["report", str(p.path / "out" / "results.json"), "--alpha=0.1"])

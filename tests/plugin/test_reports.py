"""Reports, baselines and noise-aware gates, end to end through pytester (no database: the
keyword engine and engines declared by the test's own conftest)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest

pytrec_eval = pytest.importorskip("pytrec_eval")  # the dev extra's oracle


from projects import BUNDLED_TESTS, ORACLE_CONFTEST

from pytest_retrieval_eval.cli import main as cli




@pytest.fixture
def project(make_project):
    return make_project(engines="keyword oracle", conftest=ORACLE_CONFTEST, tests=BUNDLED_TESTS)


def test_report_folder_is_complete_and_byte_identical_across_runs(project, tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    assert project.runpytest("-m", "retrieval", f"--retrieval-report-dir={a}").ret == 0
    assert project.runpytest("-m", "retrieval", f"--retrieval-report-dir={b}").ret == 0
    names = ["results.json", "results.md", "per_query.jsonl", "qrels.txt", "runs/keyword.trec", "runs/oracle.trec", "hit_at_k.svg"]
    for name in names:
        assert (a / name).read_bytes() == (b / name).read_bytes(), name
    assert json.loads((a / "timing.json").read_text())["engines"]["keyword on questions.cache.json"]["queries"] == 68
    results = json.loads((a / "results.json").read_text())
    assert results["format"] == "pytest-retrieval-eval/results" and results["version"] == 1
    oracle = next(e for e in results["evaluations"] if e["engine"] == "oracle")
    assert len(oracle["queries"]) == 68 and oracle["summary"]["hit@1"]["mean"] == 1.0
    assert set(oracle["queries"][0]["values"]) >= {"hit@5", "mrr", "ndcg@10", "recall@100", "map"}
    rows = [json.loads(l) for l in (a / "per_query.jsonl").read_text().splitlines()]
    assert len(rows) == 136 and set(rows[0]) == {"engine", "labeled", "query_id", "question", "gold", "ranked",
                                                 "rank_of_gold", "error", "tags", "why", "stages"}
    md = (a / "results.md").read_text()
    assert "| oracle ᵇ | questions.cache.json | 1.000ᵃ [0.947, 1.000]" in md and "fingerprint" in md
    svg = (a / "hit_at_k.svg").read_text()
    assert svg.count("<polyline") == 2 and ">oracle<" in svg and ">keyword<" in svg


def test_trec_runs_rescored_by_trec_eval_reproduce_the_table(project, tmp_path):
    out = tmp_path / "r"
    assert project.runpytest("-m", "retrieval", f"--retrieval-report-dir={out}").ret == 0
    results = json.loads((out / "results.json").read_text())
    with open(out / "qrels.txt") as fh:
        qrels = pytrec_eval.parse_qrel(fh)
    for engine in ("keyword", "oracle"):
        with open(out / "runs" / f"{engine}.trec") as fh:
            run = pytrec_eval.parse_run(fh)
        run = {q: run.get(q, {}) for q in qrels}  # trec_eval -c: judged queries the run left out count as 0
        scored = pytrec_eval.RelevanceEvaluator(qrels, {"success.1,5,10", "recip_rank", "ndcg_cut.10"}).evaluate(run)
        summary = next(e for e in results["evaluations"] if e["engine"] == engine)["summary"]
        for ours, theirs in [("hit@1", "success_1"), ("hit@5", "success_5"), ("hit@10", "success_10"),
                             ("mrr", "recip_rank"), ("ndcg@10", "ndcg_cut_10")]:
            mean = sum(scored[q][theirs] for q in qrels) / len(qrels)
            assert summary[ours]["mean"] == pytest.approx(mean, abs=1e-9), (engine, ours)


def test_table_has_intervals_significance_and_fits_80_columns(project):
    result = project.runpytest("-m", "retrieval", "--retrieval-report")
    lines = result.stdout.lines
    start = next(i for i, l in enumerate(lines) if "retrieval evaluation" in l) + 1
    block = lines[start:start + 7]
    assert block[0].split()[:7] == ["engine", "hit@1", "hit@3", "hit@5", "hit@10", "hit@20", "mrr"]
    assert block[1].startswith("keyword ᵃ") and block[3].startswith("oracle ᵇ")
    assert "1.000ᵃ" in block[3] and block[2].strip().startswith("95% CI") and "±" in block[2]
    assert any("significant win over that engine" in l for l in block[4:])
    assert max(len(l) for l in block) <= 80
    quiet = project.runpytest("-m", "retrieval", "--retrieval-report", "-q")
    assert "95% CI" not in quiet.stdout.str() and "keyword: fields=" not in quiet.stdout.str()


def test_a_degraded_engine_fails_the_max_drop_gate_and_names_the_movers(project, tmp_path, monkeypatch):
    base = tmp_path / "base.json"
    assert project.runpytest("-m", "retrieval", f"--retrieval-save-baseline={base}").ret == 0
    same = project.runpytest("-m", "retrieval", f"--retrieval-baseline={base}", "--retrieval-max-drop", "hit@5=0.02")
    assert same.ret == 0 and "retrieval gate: passed" in same.stdout.str()
    monkeypatch.setenv("MISS", "travelling abroad,four-year-old,power cell")
    worse = project.runpytest("-m", "retrieval", f"--retrieval-baseline={base}", "--retrieval-max-drop", "hit@5=0.02")
    assert worse.ret == pytest.ExitCode.TESTS_FAILED
    out = worse.stdout.str()
    assert "FAIL retrieval gate: oracle: hit@5 dropped 0.0441 (1.0000 -> 0.9559), more than 0.02" in out
    assert "moved: battery-care.q2 1->0; child-seat-compatibility.q1 1->0; subscription-pause.q1 1->0" in out
    assert "oracle: hit@5 1.0000 -> 0.9559 (-0.0441; 0 up, 3 down, 65 same; p=" in out
    # three queries out of 68 is within noise: the noise-aware gate lets it through
    noisy = project.runpytest("-m", "retrieval", f"--retrieval-baseline={base}", "--retrieval-max-drop",
                              "hit@5=0.02", "--retrieval-noise-aware")
    assert noisy.ret == 0, noisy.stdout.str()
    # the CLI re-gates the saved run with the same answer and exit code
    out_dir = tmp_path / "now"
    project.runpytest("-m", "retrieval", f"--retrieval-report-dir={out_dir}")
    assert cli(["report", str(out_dir / "results.json"), "--baseline", str(base), "--max-drop", "hit@5=0.02"]) == 1
    assert cli(["report", str(out_dir / "results.json"), "--baseline", str(base), "--max-drop", "hit@5=0.02",
                "--noise-aware"]) == 0
    assert cli(["report", str(base), "--baseline", str(base), "--max-drop", "hit@5=0.02", "--threshold", "oracle:mrr>=1"]) == 0


def test_a_baseline_of_another_labeled_set_is_refused_unless_forced(project, tmp_path):
    base = tmp_path / "base.json"
    project.runpytest("-m", "retrieval", f"--retrieval-save-baseline={base}")
    doc = json.loads(base.read_text())
    for e in doc["evaluations"]:
        e["labeled"]["fingerprint"] = "0" * 64
    base.write_text(json.dumps(doc))
    refused = project.runpytest("-m", "retrieval", f"--retrieval-baseline={base}")
    assert refused.ret == pytest.ExitCode.TESTS_FAILED
    assert "FAIL retrieval gate: baseline refused: keyword: labeled set questions.cache.json fingerprint 000000000000 ->" in refused.stdout.str()
    forced = project.runpytest("-m", "retrieval", f"--retrieval-baseline={base}", "--retrieval-baseline-force")
    assert forced.ret == 0


def test_report_comment_leads_with_the_verdict_and_folds_its_tables(project, tmp_path, capsys):
    base, out = tmp_path / "base.json", tmp_path / "out"
    project.runpytest("-m", "retrieval", f"--retrieval-save-baseline={base}")
    doc = json.loads(base.read_text())
    for e in doc["evaluations"]:
        e["labeled"]["fingerprint"] = "0" * 64
    base.write_text(json.dumps(doc))
    project.runpytest("-m", "retrieval", f"--retrieval-report-dir={out}")
    capsys.readouterr()
    assert cli(["report", "comment", str(out / "results.json"), "--baseline", str(base)]) == 1
    lines = capsys.readouterr().out.splitlines()
    lead = "\n".join(lines[:10])
    assert "**FAIL**" in lead and "- FAIL baseline refused: keyword: labeled set questions.cache.json fingerprint" in lead
    assert "<details><summary>Against the baseline: refused, nothing compared</summary>" in lines
    assert not any("unchanged" in line or "no measure moved" in line for line in lines)
    assert cli(["report", "comment", str(out / "results.json"), "--threshold", "oracle:mrr>=1"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[3] == "**PASS**: the retrieval gate passed" and not any("FAIL" in line for line in lines)
    at = next(i for i, line in enumerate(lines) if line.startswith("| engine | labeled set |"))  # the scores
    assert lines[at - 1] == "" and lines[at - 2].startswith("<details><summary>Scores: keyword, oracle on ")


def test_max_drop_needs_a_baseline_and_parses(project):
    result = project.runpytest("--retrieval-max-drop", "hit@5=0.02")
    assert result.ret == pytest.ExitCode.USAGE_ERROR and "compare with a baseline" in result.stderr.str()
    result = project.runpytest("--retrieval-max-drop", "hit@5>0.02", "--retrieval-baseline=x.json")
    assert "max-drop rule 'hit@5>0.02' (from --retrieval-max-drop) does not parse" in result.stderr.str()


def test_junit_properties_and_github_step_summary(project, tmp_path, monkeypatch):
    summary = tmp_path / "summary.md"
    summary.write_text("earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    xml = tmp_path / "junit.xml"
    assert project.runpytest("-m", "retrieval", f"--junitxml={xml}").ret == 0
    props = {p.get("name"): p.get("value") for p in ET.parse(xml).iter("property")}
    assert props["retrieval.oracle.hit@5"] == "1.000000" and props["retrieval.keyword.n"] == "68"
    assert float(props["retrieval.keyword.mrr"]) == pytest.approx(0.2514, abs=1e-4)
    text = summary.read_text()
    assert text.startswith("earlier step\n# Retrieval evaluation") and "| oracle ᵇ |" in text


def test_a_saved_results_json_rebuilds_every_artefact_byte_for_byte(project, tmp_path, monkeypatch):
    base = tmp_path / "base.json"
    assert project.runpytest("-m", "retrieval", f"--retrieval-save-baseline={base}").ret == 0
    monkeypatch.setenv("MISS", "travelling abroad,four-year-old,power cell")
    live, rebuilt = tmp_path / "live", tmp_path / "rebuilt"
    result = project.runpytest("-m", "retrieval", f"--retrieval-report-dir={live}", f"--retrieval-html={live / 'page.html'}",
                               f"--retrieval-baseline={base}", "--retrieval-max-drop", "hit@5=0.02",
                               "--retrieval-threshold", "oracle:mrr>=0.99", "--retrieval-measures", "hit@1,hit@5,mrr,ndcg@10")
    assert result.ret == pytest.ExitCode.TESTS_FAILED  # the drop and the threshold both fail the gate
    code = cli(["report", str(live / "results.json"), f"--out={rebuilt}", f"--html={rebuilt / 'page.html'}"])
    assert code == 1  # judged again with the recorded rules and baseline: the same verdict
    written = sorted(p.relative_to(live).as_posix() for p in live.rglob("*") if p.is_file())
    assert written == ["hit_at_k.svg", "page.html", "per_query.jsonl", "qrels.txt", "results.json", "results.md",
                       "runs/keyword.trec", "runs/oracle.trec", "timing.json"]
    for name in written:
        if name != "timing.json":
            assert (rebuilt / name).read_bytes() == (live / name).read_bytes(), name
    assert not (rebuilt / "timing.json").exists()  # timings are not in results.json
    md = (rebuilt / "results.md").read_text()
    assert "FAIL oracle: hit@5 dropped" in md and "oracle: mrr = " in md
    assert md.index("**FAIL**") < md.index("| engine |") and "ndcg@10" in next(
        line for line in md.splitlines() if line.startswith("| engine |"))  # the verdict first, then the table
    # a rule given on the command line replaces the recorded one
    assert cli(["report", str(live / "results.json"), "--threshold", "oracle:mrr>=0.5", "--baseline-force",
                "--max-drop", "hit@5=0.5"]) == 0


def test_a_results_file_without_rankings_is_refused_with_its_field(tmp_path):
    from pytest_retrieval_eval.archive.results_json import load

    old = tmp_path / "old.json"
    old.write_text(json.dumps({"format": "pytest-retrieval-eval/results", "version": 1,
                               "metrics": {"fingerprint": "x"}, "evaluations": [{"engine": "e", "labeled": {}}]}))
    with pytest.raises(Exception, match=r"old.json: field 'evaluations\[0\]'.*re-save it"):
        load(old)

"""Slices across CI jobs (issue 31 item 4): each job evaluates ``--retrieval-slice I/N`` of the
bundled set, ``report merge`` puts them together into the unsliced run's artefacts and verdict,
and refuses what does not fit, naming the files."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from conftest import CORPUS, QUESTIONS, parse_table
from pytest_retrieval_eval.archive.combine import _info

ARTEFACTS = ("results.json", "results.md", "per_query.jsonl", "qrels.txt", "runs/keyword.trec", "hit_at_k.svg")


def cli(cwd, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pytest_retrieval_eval", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=120)


def test_three_slices_merge_into_the_unsliced_run_and_its_verdict(bundled_project):
    p = bundled_project
    p.makepyfile("import pytest\n\n@pytest.mark.retrieval\ndef test_x(retrieval_results):\n    pass\n")
    rule = "--retrieval-threshold=keyword:hit@5>=0.5"
    for i in (1, 2, 3):
        job = p.runpytest("-m", "retrieval", f"--retrieval-slice={i}/3", f"--retrieval-report-dir=s{i}", rule,
                          "--retrieval-by=body-only")
        assert job.ret == 1  # each job gates its own slice
        n = (68 - i) // 3 + 1  # every third question from the i-th
        job.stdout.fnmatch_lines([f"FAIL retrieval gate: keyword: hit@5 = *, required >= 0.5 (*; n={n})"])
    whole = p.runpytest("-m", "retrieval", "--retrieval-report-dir=whole", rule, "--retrieval-by=body-only")
    merged = cli(p.path, "report", "merge", "s1/results.json", "s2/results.json", "s3/results.json", "--out", "merged")
    assert merged.returncode == whole.ret == 1, merged.stdout + merged.stderr
    assert ("FAIL retrieval gate: keyword: hit@5 = 0.3529, required >= 0.5 (from --retrieval-threshold; n=68)"
            in merged.stdout.splitlines())
    assert "keyword missed 44 of 68 at hit@5: 30 ranked 6-22, 14 never a candidate" in merged.stdout
    for name in ARTEFACTS:
        assert (p.path / "merged" / name).read_bytes() == (p.path / "whole" / name).read_bytes(), name

    missing = cli(p.path, "report", "merge", "s1/results.json", "s3/results.json")
    assert missing.returncode == 2
    assert missing.stderr.strip() == ("error: keyword on questions.cache.json: slice(s) 2 of 3 never given (given: 1 "
                                      "(s1/results.json), 3 (s3/results.json)); pass every job's results.json")
    twice = cli(p.path, "report", "merge", "s1/results.json", "s2/results.json", "s2/results.json", "s3/results.json")
    assert "slice 2 of 3 of keyword on questions.cache.json is in both s2/results.json and s2/results.json" in twice.stderr
    unsliced = cli(p.path, "report", "merge", "whole/results.json", "s1/results.json")
    assert "whole/results.json: keyword on questions.cache.json is not a slice: run each job with --retrieval-slice" \
        in unsliced.stderr
    other = p.runpytest("-m", "retrieval", "--retrieval-slice=2/3", "--retrieval-report-dir=o2", "--retrieval-alpha=0.01")
    assert other.ret == 0
    refused = cli(p.path, "report", "merge", "s1/results.json", "o2/results.json", "s3/results.json")
    assert refused.returncode == 2 and "o2/results.json" in refused.stderr and "settings differ" in refused.stderr
    one = cli(p.path, "report", "s1/results.json", "s2/results.json")
    assert "report merge s1/results.json s2/results.json" in one.stderr  # the command that combines them


def _slices(p, *extra: str, second: tuple[str, ...] = ()) -> None:
    p.makepyfile("import pytest\n\n@pytest.mark.retrieval\ndef test_x(retrieval_results):\n    pass\n")
    for i in (1, 2, 3):
        job = p.runpytest("-m", "retrieval", f"--retrieval-slice={i}/3", f"--retrieval-report-dir=s{i}", *extra,
                          *(second if i == 2 else ()))
        assert job.ret == 0, job.stdout.str()


def test_slices_that_searched_different_corpora_are_refused_naming_the_file_and_the_corpus(bundled_project):
    p = bundled_project
    other = p.path / "corpus-b"
    shutil.copytree(CORPUS, other)
    doc = json.loads((other / "plan-prices-2025.json").read_text())  # a page no question judges: the same questions
    doc["content"] = doc["content"].replace("thirty-two", "thirty-three", 1)
    (other / "plan-prices-2025.json").write_text(json.dumps(doc))
    _slices(p, second=(f"--retrieval-corpus={other}",))
    merged = cli(p.path, "report", "merge", "s1/results.json", "s2/results.json", "s3/results.json")
    assert merged.returncode == 2, merged.stdout
    [line] = merged.stderr.splitlines()
    fingerprints = [json.loads((p.path / f"s{i}/results.json").read_text())["evaluations"][0]["corpus"]["fingerprint"]
                    for i in (1, 2)]
    assert fingerprints[0] != fingerprints[1]
    assert line.startswith("error: s2/results.json: field 'corpus': slice 2 of 3 of questions.cache.json: keyword "
                           f"searched corpus corpus-b (fingerprint {fingerprints[1][:12]}), "
                           "s1/results.json's corpus corpus ")
    assert line.endswith(f"(fingerprint {fingerprints[0][:12]}): every CI job must evaluate the same corpus with the "
                         "same engines and options")


def test_slices_decide_the_tables_measures_from_the_whole_set_so_one_multi_gold_question_merges(bundled_project):
    """nDCG@10 joins the default columns for a set judged like qrels (a question with two gold
    documents): every slice's table says so, not only the slice that holds that question."""
    p = bundled_project
    cache = json.loads(QUESTIONS.read_text())
    cache["queries"][4]["relevant"]["account-deletion"] = 1  # in slice 2 of 3 only
    (p.path / "questions.cache.json").write_text(json.dumps(cache))
    p.makeini(f"[pytest]\nretrieval_corpus = {CORPUS}\nretrieval_questions = questions.cache.json\n"
              "retrieval_engines = keyword\n")
    _slices(p, "--retrieval-report")
    whole = p.runpytest("-m", "retrieval", "--retrieval-report-dir=whole", "--retrieval-report")
    merged = cli(p.path, "report", "merge", "s1/results.json", "s2/results.json", "s3/results.json", "--out", "merged")
    assert merged.returncode == whole.ret == 0, merged.stderr
    assert "ndcg@10" in json.loads((p.path / "s1/results.json").read_text())["settings"]["table_measures"]
    table = parse_table(whole.stdout.str())  # the merged table: the unsliced run's columns and numbers
    assert list(table) == ["keyword"] and "ndcg@10" in table["keyword"], table
    assert parse_table(merged.stdout) == table, merged.stdout
    for name in ARTEFACTS:
        assert (p.path / "merged" / name).read_bytes() == (p.path / "whole" / name).read_bytes(), name


@pytest.mark.parametrize("text", ["0/3", "4/3", "2", "a/b"])
def test_a_slice_that_is_not_i_of_n_is_refused(bundled_project, text):
    result = bundled_project.runpytest(f"--retrieval-slice={text}")
    assert result.ret != 0
    assert "must be I/N with 1 <= I <= N (slice I of N), e.g. 2/3" in result.stderr.str()


def test_an_engines_counts_add_up_across_slices_and_other_values_are_shown_per_slice():
    assert _info([{"keyword_empty": "22/23", "store": "embedded"}, {"keyword_empty": "21/22", "store": "embedded"}],
                 "slice") == {"keyword_empty": "43/45", "store": "embedded"}
    assert _info([{"note": "a"}, {"note": "b"}], "slice") == {"note": "a | b (per slice)"}

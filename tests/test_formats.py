"""Qrels and run file formats: TREC and BEIR, headers, CRLF, BOM, and errors naming the line."""

import pytest

from pytest_retrieval_eval import Qrels, RetrievalEvalError, Run


def test_trec_qrels_and_beir_tsv_agree(tmp_path):
    trec = tmp_path / "q.trec"
    trec.write_text("q1 0 d1 2\nq1 0 d2 0\n\nq2 0 d3 1\n")
    beir = tmp_path / "q.tsv"
    beir.write_bytes("\ufeffquery-id\tcorpus-id\tscore\r\nq1\td1\t2\r\nq1\td2\t0\r\nq2\td3\t1\r\n".encode())
    assert Qrels.from_trec(trec).to_dict() == Qrels.from_beir_tsv(beir).to_dict() == {
        "q1": {"d1": 2, "d2": 0}, "q2": {"d3": 1}
    }


def test_beir_tsv_without_header(tmp_path):
    path = tmp_path / "q.tsv"
    path.write_text("q1\td1\t1\n")
    assert Qrels.from_beir_tsv(path).to_dict() == {"q1": {"d1": 1}}


@pytest.mark.parametrize(
    "text, message",
    [
        ("q1 0 d1\n", r"q.txt:1: expected 4 columns"),
        ("q1 0 d1 1\nq1 0 d2 high\n", r"q.txt:2: field 'grade': relevance grade must be an integer, got 'high'"),
        ("q1 0 d1 1\nq1 0 d1 2\n", r"q.txt:2: query 'q1' judges document 'd1' twice with different grades"),
    ],
)
def test_bad_trec_qrels(tmp_path, text, message):
    path = tmp_path / "q.txt"
    path.write_text(text)
    with pytest.raises(RetrievalEvalError, match=message):
        Qrels.from_trec(path)


def test_trec_run_ranks_by_score_with_trec_eval_tie_break_and_round_trips(tmp_path):
    path = tmp_path / "run.trec"
    path.write_text("q1 Q0 a 1 1.0 bm25\nq1 Q0 b 2 3.0 bm25\r\nq1 Q0 c 3 1.0 bm25\n")
    run = Run.from_trec(path)
    assert run["q1"] == ("b", "c", "a") and run.name == "bm25"
    out = tmp_path / "out.trec"
    run.to_trec(out)
    assert Run.from_trec(out)["q1"] == ("b", "c", "a")


@pytest.mark.parametrize(
    "text, message",
    [
        ("q1 Q0 a 1 1.0\n", r"run.trec:1: expected 6 columns"),
        ("q1 Q0 a 1 x tag\n", r"run.trec:1: field 'score': score must be a number"),
        ("q1 Q0 a 1 1 t\nq1 Q0 a 2 0.5 t\n", r"run.trec:2: document 'a' is listed twice for query 'q1' \(first on line 1\)"),
        ("q1 Q0 a 1 nan t\n", r"run.trec:1: field 'score': score is NaN"),
    ],
)
def test_bad_trec_runs(tmp_path, text, message):
    path = tmp_path / "run.trec"
    path.write_text(text)
    with pytest.raises(RetrievalEvalError, match=message):
        Run.from_trec(path)

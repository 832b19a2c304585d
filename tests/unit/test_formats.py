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


def test_qrels_from_a_dataframe_read_numpy_grades_as_the_whole_numbers_they_hold():
    np = pytest.importorskip("numpy")
    qrels = Qrels.from_dict({"q1": {"a": np.int64(2), "b": np.float64(1.0), "c": np.int32(0)}})
    assert qrels.to_dict() == {"q1": {"a": 2, "b": 1, "c": 0}}
    assert all(type(g) is int for g in qrels["q1"].values())
    for bad in (np.float64(1.5), np.bool_(True), np.float64("nan")):
        with pytest.raises(RetrievalEvalError, match="field 'q1/a': relevance grade must be an integer"):
            Qrels.from_dict({"q1": {"a": bad}})


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


# --- trec_eval 10's reading rules ----------------------------------------------------------------

def test_trec_qrels_skip_comment_lines_and_read_any_whitespace(tmp_path):
    path = tmp_path / "q.txt"
    path.write_text("# written by the assessors\nq1\t0  d1 \t2\n#q1 0 d9 1\nq1 0 d#2 0\n\n   q2 0 d3 1\n")
    assert Qrels.from_trec(path).to_dict() == {"q1": {"d1": 2, "d#2": 0}, "q2": {"d3": 1}}


@pytest.mark.parametrize(
    "text, message",
    [
        ("# header\nq1 0 d1 1 extra\n", r"q.txt:2: expected 4 columns 'query_id iteration doc_id grade', found 5"),
        ("q1 0 d1 1\n  # indented: trec_eval reads it as a line, and it has 3 fields\n", r"q.txt:2: expected 4 columns"),
    ],
)
def test_trec_qrels_still_refuse_what_trec_eval_refuses(tmp_path, text, message):
    path = tmp_path / "q.txt"
    path.write_text(text)
    with pytest.raises(RetrievalEvalError, match=message) as caught:
        Qrels.from_trec(path)
    assert "\n" not in str(caught.value)


def test_trec_run_ignores_fields_after_the_tag_comments_and_blank_lines(tmp_path):
    path = tmp_path / "run.trec"
    path.write_text("# run from bm25\n  # indented comment\nq1\tQ0\ta\t1\t  2.5\tbm25 more junk at\n\n"
                    "q1 Q0 b#1 2 1.5 bm25 end of lines.\nq1 Q0 c 3 0.5 bm25-final\n")
    run = Run.from_trec(path)
    assert run["q1"] == ("a", "b#1", "c")
    assert run.name == "bm25-final"  # trec_eval keeps the tag of the last line


@pytest.mark.parametrize(
    "text, message",
    [
        ("# c\nq1 Q0 a 1 1.0\n", r"run.trec:2: expected 6 columns"),
        ("q1 Q0 a 1 1.0 t junk\nq1 Q0 a 2 0.5 t\n", r"run.trec:2: document 'a' is listed twice for query 'q1' \(first on line 1\)"),
    ],
)
def test_trec_run_still_refuses_what_trec_eval_refuses(tmp_path, text, message):
    path = tmp_path / "run.trec"
    path.write_text(text)
    with pytest.raises(RetrievalEvalError, match=message):
        Run.from_trec(path)


def test_trec_run_scores_are_doubles_as_in_trec_eval_10(tmp_path):
    # 10.0000001 and 10.0 round to one float32 (pytrec_eval would tie them and break the tie by
    # doc id, putting 'b' first); trec_eval 10 reads doubles: 'a' is first
    path = tmp_path / "run.trec"
    path.write_text("q1 Q0 a 1 10.0000001 t\nq1 Q0 b 2 10.0 t\n")
    assert Run.from_trec(path)["q1"] == ("a", "b")


# --- exports -------------------------------------------------------------------------------------

def test_run_to_dict_lists_documents_best_first_with_their_scores():
    run = Run.from_dict({"q": {"a": 1.0, "b": 1.0, "z": 1.0, "c": 2.0}})
    assert list(run.to_dict()["q"].items()) == [("c", 2.0), ("z", 1.0), ("b", 1.0), ("a", 1.0)]
    assert Run.from_ranked({"q": ["x", "y"]}).to_dict() == {"q": {"x": 2.0, "y": 1.0}}
    assert Run.from_dict(run.to_dict())["q"] == run["q"]


def test_per_query_values_as_a_dataframe():
    pytest.importorskip("pandas")
    from pytest_retrieval_eval.ir.metrics import per_query_frame

    frame = per_query_frame({"q1": {"a": 1}, "q2": {"b": 2}}, {"q1": ["a", "b"]}, ["hit@1", "P(rel=2)@5", "num_ret"])
    assert frame.index.name == "query_id" and list(frame.index) == ["q1", "q2"]
    assert list(frame.columns) == ["hit@1", "precision(rel=2)@5", "num_ret"]
    assert frame.loc["q1"].tolist() == [1.0, 0.0, 2.0] and frame.loc["q2"].tolist() == [0.0, 0.0, 0.0]

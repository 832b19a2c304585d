"""Evidence in the labels: quotes of a relevant document's text, in every label format, checked
against the document by ``label import`` and kept by the questions cache."""

from __future__ import annotations

import json
import unicodedata

import pytest

from pytest_retrieval_eval import RetrievalEvalError
from pytest_retrieval_eval.cli import main as cli
from pytest_retrieval_eval.data.evidence import OVERLAP, evidence_of, holds, passage_ranks, quote_problem
from pytest_retrieval_eval.data.labeled import load_questions_cache
from pytest_retrieval_eval.data.label_files import read_labels

WIFI = ("Visitors connect to the guest network. Reception prints a voucher valid for one day; for events, "
        "the organiser can order a batch of vouchers a week ahead.")
PRINT = "Printers are on every floor. Badge in at the printer to release a job; jobs wait for twelve hours."
CODES = "Staff get a daily code from the front desk. Lockers cost 15 euros a month, or 1.5 euros a day."


def _kb(tmp_path):
    from conftest import write_docs

    return write_docs(tmp_path / "kb", [{"doc_id": "wifi", "title": "wifi", "content": WIFI},
                                        {"doc_id": "print", "title": "print", "content": PRINT},
                                        {"doc_id": "codes", "title": "codes", "content": CODES}])


def _import(tmp_path, labels, capsys):
    cache = tmp_path / "questions.cache.json"
    code = cli(["label", "import", str(labels), "--corpus", str(_kb(tmp_path)), "--questions", str(cache)])
    return code, capsys.readouterr(), cache


def test_a_csv_evidence_column_a_jsonl_field_and_a_qrels_jsonl_field_all_reach_the_cache(tmp_path, capsys):
    csv = tmp_path / "labels.csv"
    csv.write_text("question,doc_id,evidence\nhow do guests get online,wifi,Reception prints a voucher valid "
                   "for one day\nhow do guests get online,wifi,\"the organiser can order   a batch\"\n")
    jsonl = tmp_path / "more.jsonl"
    jsonl.write_text(json.dumps({"id": "p1", "question": "how long do print jobs wait", "doc_id": "print",
                                 "evidence": "jobs wait for twelve hours"}) + "\n")
    qrels = tmp_path / "qrels.jsonl"
    qrels.write_text(json.dumps({"query_id": "p2", "query": "where are printers", "relevant_docs": {"print": 1, "wifi": 0},
                                 "evidence": {"print": ["Printers are on every floor."]}}) + "\n")
    for f in (csv, jsonl, qrels):
        code, out, cache = _import(tmp_path, f, capsys)
        assert code == 0, out
    got = {q.question: evidence_of(q) for q in load_questions_cache(cache)}
    assert got == {"how do guests get online": {"wifi": ("Reception prints a voucher valid for one day",
                                                         "the organiser can order a batch")},
                   "how long do print jobs wait": {"print": ("jobs wait for twelve hours",)},
                   "where are printers": {"print": ("Printers are on every floor.",)}}


def test_beir_evidence_beside_the_qrels_is_read_into_the_labels(tmp_path):
    folder = tmp_path / "beir"
    (folder / "qrels").mkdir(parents=True)
    (folder / "corpus.jsonl").write_text(json.dumps({"_id": "wifi", "title": "", "text": WIFI}) + "\n")
    (folder / "queries.jsonl").write_text(json.dumps({"_id": "q1", "text": "guest wifi?"}) + "\n")
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\twifi\t1\n")
    (folder / "qrels" / "test.evidence.jsonl").write_text(
        json.dumps({"query-id": "q1", "corpus-id": "wifi", "text": "a voucher valid for one day"}) + "\n")
    [q] = read_labels(folder, fmt="beir")
    assert evidence_of(q) == {"wifi": ("a voucher valid for one day",)}


def test_a_quote_not_in_its_document_stops_the_import_naming_file_line_and_the_closest_passage(tmp_path, capsys):
    csv = tmp_path / "labels.csv"
    csv.write_text("question,doc_id,evidence\nguest wifi,wifi,a voucher valid for one day\n"
                   "print wait,print,jobs wait for twelve days\n")
    code, out, cache = _import(tmp_path, csv, capsys)
    assert code == 2 and not cache.exists()
    assert out.err.startswith(f"error: {csv}:3: field 'evidence': query ")
    assert "evidence 'jobs wait for twelve days' does not occur in document 'print'" in out.err
    assert "its closest passage" in out.err and "'jobs wait for twelve hours.'" in out.err
    assert out.err.count("\n") == 1


def test_a_quote_cut_mid_word_stops_the_import_naming_file_line_and_the_closest_whole_word_passage(tmp_path, capsys):
    csv = tmp_path / "labels.csv"
    csv.write_text("question,doc_id,evidence\nguest wifi,wifi,a voucher valid for one day\n"
                   "staff codes,codes,get a daily co\n")
    code, out, cache = _import(tmp_path, csv, capsys)
    assert code == 2 and not cache.exists()
    assert out.err.startswith(f"error: {csv}:3: field 'evidence': query ")
    assert "evidence 'get a daily co' is cut mid-word in document 'codes' (a quote is whole words)" in out.err
    assert "its closest whole-word passage is 'get a daily code'" in out.err
    assert out.err.count("\n") == 1


@pytest.mark.parametrize("quote", ["5 euros a month", "5 euros a day", "euros a mon", "taff get"])
def test_a_quote_is_whole_words_never_part_of_a_word_or_a_number(quote):
    assert "is cut mid-word in document 'codes'" in quote_problem(quote, "codes", CODES)
    assert quote_problem("15 euros a month", "codes", CODES) is quote_problem("1.5 euros a day", "codes", CODES) is None


@pytest.mark.parametrize("quote, text", [
    ("la crème brûlée coûte 5 euros", unicodedata.normalize("NFD", "Ici, la crème brûlée coûte 5 euros.")),
    (unicodedata.normalize("NFD", "la crème brûlée coûte 5 euros"), "Ici, la crème brûlée coûte 5 euros."),
    ("the file is on the office floor", "The \ufb01le is on the o\ufb03ce floor."),  # ligatures, as a PDF leaves them
    ("room 12 on floor 3", "Room \uff11\uff12 on floor \uff13."),  # full-width digits
    ("Hauptstraße 5", "HAUPTSTRASSE 5, Berlin"),  # casefold: ß is ss
    ("information for   visitors", "Infor\u00admation for\u00a0visitors\u200b."),  # a soft hyphen, nbsp, zero width
    ("हिन्दी भाषा", "यह हिन्दी भाषा है"),  # an Indic vowel sign is part of its word
    ("天气很好", "今天天气很好。"),  # a script without spaces: each character is a word
])
def test_a_quote_is_found_whatever_the_unicode_form_of_either_text(quote, text):
    assert quote_problem(quote, "doc", text) is None and holds(text, quote)


def test_quotes_are_found_whatever_their_case_and_whitespace():
    assert quote_problem("RECEPTION prints\n a voucher", "wifi", WIFI) is None
    assert "does not occur" in quote_problem("a voucher valid for a week", "wifi", WIFI)


def test_evidence_for_a_document_not_judged_relevant_is_refused_in_the_cache(tmp_path):
    cache = tmp_path / "questions.cache.json"
    cache.write_text(json.dumps({"format": "pytest-retrieval-eval/questions", "version": 1, "queries": [
        {"id": "q1", "question": "guest wifi?", "relevant": {"wifi": 1, "print": 0},
         "source": {"evidence": {"print": ["Printers are on every floor."]}}}]}))
    with pytest.raises(RetrievalEvalError) as caught:
        load_questions_cache(cache)
    assert "field 'queries[0].source.evidence'" in str(caught.value)
    assert "'print', which is not a relevant document" in str(caught.value)


def test_a_passage_carries_evidence_when_it_holds_most_of_the_quote_in_order():
    quote = "Reception prints a voucher valid for one day"  # 8 tokens: 7 of them (0.875) pass, 6 (0.75) do not
    assert holds(WIFI, quote, OVERLAP)
    assert holds("Reception prints a voucher valid for one", quote, OVERLAP)
    assert not holds("Reception prints a voucher valid for", quote, OVERLAP)
    assert not holds("day one for valid voucher a prints Reception", quote, OVERLAP)  # the words, not in order


def test_a_passage_carries_a_quote_only_as_one_run_of_its_text():
    quote = "Reception prints a voucher valid for one day"  # 8 words: 7 needed, spanning at most 8 + 1
    assert holds("At the desk, Reception prints a voucher valid for one", quote, OVERLAP)  # its tail in the next passage
    assert holds("prints a voucher valid for one day. Then", quote, OVERLAP)  # its head in the passage before
    assert holds("Reception prints a paper voucher valid for one day", quote, OVERLAP)  # a word inserted
    assert holds("Reception prints a voucher that is valid for one day", quote, OVERLAP)  # 2 inserted, 1 lost
    assert not holds("Reception prints a new paper voucher that is valid for one day", quote, OVERLAP)
    scattered = ("Reception is closed on Sundays; the printer prints badges. Ask for a parking voucher if your car is "
                 "valid for the garage, and check for one more thing: the day of your visit.")
    assert not holds(scattered, quote, OVERLAP)  # its words, in order, over a passage about something else
    assert not holds("a voucher valid for", "a voucher valid for one day", OVERLAP)  # 4 of 6 words: too few
    assert not holds(WIFI, "Reception prints a voucher valid for one week")  # the whole quote, as import asks


def test_passage_ranks_credit_the_first_passage_with_the_evidence_and_any_passage_of_a_document_without():
    passages = [("wifi", "Visitors connect to the guest network."), ("print", "Printers are on every floor."),
                ("wifi", "Reception prints a voucher valid for one day; for events")]
    ranks = passage_ranks({"wifi": 1, "print": 1}, {"wifi": ["a voucher valid for one day"]}, passages)
    assert ranks == {"print": 2, "wifi": 3}


def test_a_failed_assertion_on_an_evidence_measure_explains_itself_with_the_wrong_passages():
    from pytest_retrieval_eval import LabeledQuery, LabeledSet, Passage, adapters
    from conftest import evaluate_engine

    labeled = LabeledSet((LabeledQuery("wifi", "guest wifi?", {"wifi": 1}, {"evidence": {"wifi": ["a voucher valid"]}}),
                          LabeledQuery("print", "print jobs?", {"print": 1}, {"evidence": {"print": ["twelve hours"]}})))
    answers = {"guest wifi?": [Passage("wifi", "Visitors connect to the guest network.")],
               "print jobs?": [Passage("print", "Printers are on every floor."), Passage("print", PRINT)]}
    result = evaluate_engine(adapters.function(lambda q, k: answers[q], name="chunks"), labeled)
    assert result.hit_at(5) == 1.0 and result.score("hit@1+evidence") == 0.0 and result.score("hit@5+evidence") == 0.5
    assert result.score("mrr+evidence") == 0.25  # the evidence of print at passage 2, none for wifi
    lines = result.score("hit@5+evidence").explain(">=", 0.9)
    assert lines[1] == "chunks missed 1 of 2 at hit@5+evidence: 1 right document, wrong passage"
    assert "why: right document, wrong passage: wifi at passage 1 lacks the evidence" in lines[3]
    first = result.evidence_misses(1).causes
    assert [(c.query_id, c.kind) for c in first] == [("wifi", "wrong-passage"), ("print", "wrong-passage")]
    assert first[1].text == "right document, wrong passage: print at passage 1 lacks the evidence, its evidence at passage 2"


def test_a_quote_edit_the_rule_cannot_see_imports_as_unchanged_and_one_it_can_as_changed(tmp_path, capsys):
    csv = tmp_path / "labels.csv"
    csv.write_text("question,doc_id,evidence\nhow much is a locker,codes,Lockers cost 15 euros a month\n")
    code, out, cache = _import(tmp_path, csv, capsys)
    assert code == 0, out
    written = cache.read_bytes()
    # case, a full stop, whitespace and the Unicode form: the same words, held by the same passages
    csv.write_text("question,doc_id,evidence\nhow much is a locker,codes,\"LOCKERS  cost 15 EUROS a ｍｏｎｔｈ.\"\n",
                   encoding="utf-8")
    code, out, cache = _import(tmp_path, csv, capsys)
    assert code == 0 and "added 0, replaced 0, unchanged 1" in out.out, out
    assert cache.read_bytes() == written  # its fingerprint too: no baseline is refused for it
    [locker] = load_questions_cache(cache)
    other = tmp_path / "ev.csv"  # another file's quotes update the question: the same words are no update
    other.write_text(f"id,question,doc_id,evidence\n{locker.query_id},how much is a locker,codes,lockers cost 15 euros "
                     "a month!\n")
    code, out, cache = _import(tmp_path, other, capsys)
    assert code == 0 and "unchanged 1" in out.out and "evidence changed" not in out.out, out
    assert cache.read_bytes() == written
    csv.write_text("question,doc_id,evidence\nhow much is a locker,codes,or 1.5 euros a day\n")
    code, out, cache = _import(tmp_path, csv, capsys)
    assert code == 0 and "replaced 1" in out.out, out
    assert [evidence_of(q) for q in load_questions_cache(cache)] == [{"codes": ("or 1.5 euros a day",)}]

"""Staleness by evidence: an edited document keeps the labels whose evidence is still in it; a
label goes stale when its evidence is gone or changed, named with its question."""

from __future__ import annotations

import json

from conftest import write_docs
from pytest_retrieval_eval.cli import main as cli
from pytest_retrieval_eval.data.corpus import JsonFolder
from pytest_retrieval_eval.data.labeled import load_questions_cache
from pytest_retrieval_eval.data.staleness import check

TEXT = ("Visitors connect to the guest network. Reception prints a voucher valid for one day. "
        "Printers are on every floor; jobs wait for twelve hours.")


def _labeled(tmp_path, capsys):
    kb = write_docs(tmp_path / "kb", [{"doc_id": "office", "title": "office", "content": TEXT}])
    labels = tmp_path / "labels.csv"
    labels.write_text("id,question,doc_id,evidence\nwifi,how do guests get online,office,a voucher valid for one day\n"
                      "print,how long do print jobs wait,office,jobs wait for twelve hours\nfloor,where are printers,office,\n")
    cache = tmp_path / "questions.cache.json"
    assert cli(["label", "import", str(labels), "--corpus", str(kb), "--questions", str(cache)]) == 0
    capsys.readouterr()
    return kb, cache


def _edit(kb, content):
    path = kb / "office.json"
    doc = json.loads(path.read_text())
    path.write_text(json.dumps({**doc, "content": content}))


def test_an_edit_outside_the_evidence_leaves_those_labels_fresh_and_only_a_label_without_evidence_goes_stale(
        tmp_path, capsys):
    kb, cache = _labeled(tmp_path, capsys)
    _edit(kb, TEXT.replace("Visitors connect", "Guests and contractors connect") + " Toner is in the cupboard.")
    stale = check(load_questions_cache(cache), JsonFolder(kb).load())
    assert stale.changed == {"office": ["floor"]}  # no evidence: any edit of its document, as before
    assert stale.why() == {"floor": ["changed: office"]}


def test_an_edit_of_the_evidence_makes_its_label_stale_naming_the_question_and_the_quote(tmp_path, capsys):
    kb, cache = _labeled(tmp_path, capsys)
    _edit(kb, TEXT.replace("twelve hours", "two days"))
    stale = check(load_questions_cache(cache), JsonFolder(kb).load())
    assert stale.changed == {"office": ["print", "floor"]}
    assert stale.why()["print"] == ["changed: office (its evidence 'jobs wait for twelve hours' is gone)"]
    assert cli(["check", "--corpus", str(kb), "--questions", str(cache)]) != 0
    out = capsys.readouterr()
    assert "print: its evidence 'jobs wait for twelve hours' is no longer in office" in out.out + out.err
    assert "wifi" not in out.out + out.err


def test_whitespace_and_case_of_the_evidence_may_change_without_making_it_stale(tmp_path, capsys):
    kb, cache = _labeled(tmp_path, capsys)
    _edit(kb, TEXT.replace("a voucher valid for one day", "a Voucher valid\nfor one day").replace(
        "jobs wait for", "jobs  wait for") + " New: the lift is on the left.")
    assert check(load_questions_cache(cache), JsonFolder(kb).load()).changed == {"office": ["floor"]}


def _priced(tmp_path, capsys, content):
    kb = write_docs(tmp_path / "kb", [{"doc_id": "office", "title": "office", "content": content}])
    labels = tmp_path / "labels.csv"
    labels.write_text("id,question,doc_id,evidence\nlocker,what does a locker cost,office,5 euros a month\n"
                      "cafe,what does the cafe serve,office,la crème brûlée du chef\n")
    cache = tmp_path / "questions.cache.json"
    assert cli(["label", "import", str(labels), "--corpus", str(kb), "--questions", str(cache)]) == 0
    capsys.readouterr()
    return kb, cache


def test_an_edit_that_puts_a_digit_before_a_quoted_number_makes_its_label_stale_naming_the_quote(tmp_path, capsys):
    content = "A locker costs 5 euros a month. The café serves la crème brûlée du chef."
    kb, cache = _priced(tmp_path, capsys, content)
    _edit(kb, content.replace("5 euros", "15 euros"))  # "5 euros a month" is still a substring, not a word run
    stale = check(load_questions_cache(cache), JsonFolder(kb).load())
    assert stale.changed == {"office": ["locker"]}
    assert stale.why() == {"locker": ["changed: office (its evidence '5 euros a month' is gone)"]}
    assert cli(["check", "--corpus", str(kb), "--questions", str(cache)]) != 0
    out = capsys.readouterr()
    assert "locker: its evidence '5 euros a month' is no longer in office" in out.out + out.err


def test_an_edit_that_signs_a_quoted_number_makes_its_label_stale_naming_the_quote(tmp_path, capsys):
    content = "Keep the store room at 5 degrees. The café serves la crème brûlée du chef."
    labels = "id,question,doc_id,evidence\nroom,how cold is the store room,office,store room at 5 degrees\n"
    for signed in ("-5 degrees", "\u22125 degrees", "+5 degrees"):
        kb = write_docs(tmp_path / "kb", [{"doc_id": "office", "title": "office", "content": content}])
        (tmp_path / "labels.csv").write_text(labels, encoding="utf-8")
        cache = tmp_path / "questions.cache.json"
        cache.unlink(missing_ok=True)
        assert cli(["label", "import", str(tmp_path / "labels.csv"), "--corpus", str(kb), "--questions", str(cache)]) == 0
        _edit(kb, content.replace("5 degrees", signed))  # "5" is the end of the word "-5", not a word of its own
        stale = check(load_questions_cache(cache), JsonFolder(kb).load())
        assert stale.why() == {"room": ["changed: office (its evidence 'store room at 5 degrees' is gone)"]}, signed
    _edit(kb, content.replace("at 5", "at \u22125"))  # a minus sign holds the quote's hyphen-minus
    (tmp_path / "labels.csv").write_text(labels.replace("at 5", "at -5"), encoding="utf-8")
    assert cli(["label", "import", str(tmp_path / "labels.csv"), "--corpus", str(kb), "--questions", str(cache)]) == 0


def test_a_document_saved_again_in_another_unicode_form_keeps_the_labels_it_quotes_fresh(tmp_path, capsys):
    import unicodedata

    content = "A locker costs 5 euros a month. The café serves la crème brûlée du chef."
    kb, cache = _priced(tmp_path, capsys, content)
    _edit(kb, unicodedata.normalize("NFD", content.replace("A locker", "A LOCKER")) + " Ask at the ﬁrst desk.")
    assert not check(load_questions_cache(cache), JsonFolder(kb).load())


def test_a_stamp_never_calls_a_label_fresh_whose_quote_its_document_no_longer_holds(tmp_path, capsys):
    kb, cache = _labeled(tmp_path, capsys)
    _edit(kb, TEXT.replace("twelve hours", "two days"))
    before = cache.read_bytes()
    assert cli(["label", "stamp", "--corpus", str(kb), "--questions", str(cache)]) != 0
    err = capsys.readouterr().err
    assert "query 'print': evidence 'jobs wait for twelve hours'" in err and "a stamp would call the label fresh" in err
    assert len(err.strip().splitlines()) == 1 and cache.read_bytes() == before  # one line; nothing written
    assert cli(["check", "--corpus", str(kb), "--questions", str(cache)]) != 0  # still stale
    said = capsys.readouterr().out
    [remedy] = [line for line in said.splitlines() if line.startswith("Give print evidence")]
    assert remedy.endswith(f"or remove it: python -m pytest_retrieval_eval label remove print --questions {cache}")
    assert cli(remedy.split(": ", 1)[1].split()[3:]) == 0  # the printed command runs as printed
    assert cli(["check", "--corpus", str(kb), "--questions", str(cache)]) != 0  # floor's document changed too
    assert "changed: office (1 question: floor)" in capsys.readouterr().out  # print is gone

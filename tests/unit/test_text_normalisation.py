"""One text normalisation and one word tokenisation for the labels' text (``data/text.py``): the
quote rule, the question filters, question ids and import keys all read text through it."""

from __future__ import annotations

import unicodedata

import pytest

from pytest_retrieval_eval.data.text import _word, normalise, words


@pytest.mark.parametrize("text", ["Hello, World! It costs 1.5 euros; 1,000 items_x v1.5 end.Start 3. 1.a a.5 2,",
                                  "  tabs\tand\nnewlines  ", "don't re-use e-mail #42 $3.99 10:30 a_b__c", "",
                                  "Ça coûte 1,5 € à Zürich; ÆSIR_ŒUVRE", "Цена: 1.500 руб., Ελληνικά 2,5",
                                  "temp -5, +3 and -2.5; 2020-2021 covid-19 1e-5 x=-5 (-5) 5 - 3 a_-5 --5 +-5 -x",
                                  "Température -5 °C ou +3,5; 2020-2021, ÉTÉ-5 été_-5"])
def test_text_without_marks_gives_the_words_the_full_pattern_gives(text):
    assert words(text) == _word().findall(normalise(text))  # the fast paths are the same rule


def test_words_keep_numbers_whole_and_marks_in_their_word():
    assert words("It costs 1.5 euros, or 1,000 for a year_pass.") == ["it", "costs", "1.5", "euros", "or", "1,000",
                                                                     "for", "a", "year", "pass"]
    assert words(unicodedata.normalize("NFD", "Crème BRÛLÉE")) == ["crème", "brûlée"]
    assert words("हिन्दी भाषा") == ["हिन्दी", "भाषा"]  # a vowel sign or a virama does not cut its word
    assert words("今天天气很好。iPhone手机") == ["今", "天", "天", "气", "很", "好", "iphone", "手", "机"]
    assert words("STRASSE straße ﬁle ＡＢＣ１２ infor\u00admation") == ["strasse", "strasse", "file", "abc12", "information"]


def test_the_question_filters_read_questions_as_quotes_are_read():
    from pytest_retrieval_eval.data.question_filters import QuestionFilter, normalised

    assert normalised("ＷＨＡＴ is the ﬁle size?") == normalised("what is the  file size") == "what is the file size"
    kept = [unicodedata.normalize("NFD", "Où se trouve le café de l'étage ?")]
    assert QuestionFilter().reject("OÙ SE TROUVE LE CAFÉ DE L'ÉTAGE ?", "", kept) == "duplicate"


def test_a_question_imported_again_in_another_unicode_form_is_the_same_question(tmp_path, capsys):
    from conftest import write_docs
    from pytest_retrieval_eval.cli import main as cli
    from pytest_retrieval_eval.data.labeled import load_questions_cache

    kb = write_docs(tmp_path / "kb", [{"doc_id": "cafe", "title": "Café", "content": "The café opens at eight."}])
    cache = tmp_path / "questions.cache.json"
    for form, question in (("NFC", "Quand ouvre le café ?"), ("NFD", "QUAND ouvre le café ?")):
        labels = tmp_path / f"{form}.csv"
        labels.write_text(f"question,doc_id\n{unicodedata.normalize(form, question)},cafe\n", encoding="utf-8")
        assert cli(["label", "import", str(labels), "--corpus", str(kb), "--questions", str(cache)]) == 0
    # another file's spelling of the question the cache holds (case, Unicode form): the same question, its
    # author's spelling kept, as for any text that matches (docs/labels.md: texts as written)
    assert "added 0, replaced 0, unchanged 1" in capsys.readouterr().out
    (kept,) = load_questions_cache(cache)
    assert kept.question == unicodedata.normalize("NFC", "Quand ouvre le café ?")


def test_a_sign_before_a_number_is_part_of_it_and_a_hyphen_between_words_or_numbers_is_not():
    assert words("temp -5 degrees, +3 or -1.5") == ["temp", "-5", "degrees", "+3", "or", "-1.5"]
    assert words("temp \u22125 degrees") == words("temp -5 degrees")  # the minus sign is the hyphen-minus
    assert words("(-5) x=-5 5 - 3") == ["-5", "x", "-5", "5", "3"]  # a sign at a word start only
    # between words or numbers a hyphen joins them, as it always did: a range, an id, an exponent
    assert words("2020-2021 COVID-19 1e-5 pre-2020") == ["2020", "2021", "covid", "19", "1e", "5", "pre", "2020"]
    assert words("हिन्दी-5 -5") == ["हिन्दी", "5", "-5"]  # a word ending in a vowel sign is a word before the hyphen


def test_a_quote_is_not_held_by_a_text_whose_number_changed_sign():
    from pytest_retrieval_eval.data.evidence import holds

    assert not holds("Keep the room at temp -5 degrees.", "temp 5 degrees")
    assert not holds("Keep the room at temp 5 degrees.", "temp -5 degrees")
    assert not holds("Keep the room at temp +5 degrees.", "temp 5 degrees")
    assert holds("Keep the room at temp \u22125 degrees.", "temp -5 degrees")
    assert holds("Seasons 2020-2021 and 2021-2022.", "2020 2021 and 2021")

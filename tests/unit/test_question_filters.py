"""Which generated questions are refused (data/question_filters.py): questions about the passage
itself, and a question that repeats one already kept, however it is written."""

from __future__ import annotations

import pytest

from pytest_retrieval_eval.data.question_filters import REASONS, QuestionFilter

PASSAGE = ("Visitors connect to the guest network. Reception prints a voucher valid for one day; for events, "
           "the organiser can order a batch of vouchers a week ahead.")


@pytest.mark.parametrize("question", [
    "What is the passage about?",
    "What is this text about?",
    "What is the document about?",
    "What is the chunk about?",
    "What's the main topic of the passage?",
    "What does the text say about guest vouchers?",
    "What does this document describe?",
    "According to the passage, how long is a voucher valid?",
    "According to the text, who can order vouchers?",
    "Based on the document, how do visitors get online?",
    "How long is a voucher valid, according to the passage?",
    "What information does the excerpt give about vouchers?",
    "What is described in the above paragraph?",
    "Which topic does the given text cover?",
    "What is the main idea of this article?",
    "Summarize the passage.",
])
def test_a_question_about_the_passage_itself_is_refused(question):
    assert QuestionFilter().reject(question, PASSAGE) == "about_the_passage"
    assert "about_the_passage" in REASONS


@pytest.mark.parametrize("question", [
    "How do I print a document from my laptop at the office?",
    "How can I change the font size of the text in an email?",
    "Can I get a voucher for a week-long event?",
    "Which section of the building has the guest network?",
])
def test_questions_that_merely_mention_a_document_or_text_are_kept(question):
    assert QuestionFilter().reject(question, PASSAGE) is None


@pytest.mark.parametrize("kept, question", [
    (["How do I reset my password?"], "How do I reset my password?"),
    (["How do I reset my password?"], "how do i reset my  password"),
    (["How do I reset my password?"], "How do I reset my password ?"),
    (["Wifi for guests?"], "WIFI for guests?"),
])
def test_a_question_repeating_a_kept_one_is_refused_however_short(kept, question):
    assert QuestionFilter(min_words=2).reject(question, PASSAGE, kept) == "duplicate"

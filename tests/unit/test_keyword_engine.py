"""The keyword engine's rules, pinned with worked numbers."""

import pytest

from pytest_retrieval_eval import Doc
from pytest_retrieval_eval.engines.keyword import KeywordEngine, field_score, normalize, tokenize


def test_normalize_lowercases_turns_dash_and_underscore_runs_into_one_space_and_trims():
    assert normalize("  Battery__Care--Guide.MD \t\n x ") == "battery care guide.md x"


def test_tokenize_keeps_unique_terms_of_two_or_more_characters_in_order():
    assert tokenize("A battery's care: battery, e-bike & x_y!") == ["battery", "care", "bike"]


def test_field_score_worked_numbers():
    # phrase match 8*w, plus per term w + 0.25*w*occurrences
    assert field_score("battery care", "battery", ["battery"], 4.0) == 32 + 4 + 1
    # 'care' occurs twice (non-overlapping substrings): 2 + 0.25*2*2 = 3; 'battery' once: 2.5
    assert field_score("battery care and more care", "battery care", ["battery", "care"], 2.0) == 16 + 2.5 + 3
    assert field_score("", "battery", ["battery"], 4.0) == 0
    assert field_score("aaaa", "zz", ["aa"], 1.0) == 1 + 0.25 * 2  # 'aa' twice, not three times


def test_whole_document_score_sums_title_description_filename():
    doc = Doc("d1", content="ignored body", title="Battery care", description="", filename="battery-care.md")
    engine = KeywordEngine([doc])
    # title: 8*4 + (4 + 1) = 37; filename 'battery care.md': 8*3 + (3 + 0.75) = 27.75
    assert engine.scores("Battery") == {"d1": pytest.approx(64.75)}


def test_words_that_occur_only_in_the_body_score_zero():
    docs = [
        Doc("body-only", content="A rhythmic clicking from the crank", title="Appendix C",
            description="Supplementary material.", filename="appendix_c.md"),
        Doc("other", content="x", title="Clicking noises", description="", filename="noise.md"),
    ]
    engine = KeywordEngine(docs)
    assert engine.scores("rhythmic crank")["body-only"] == 0
    assert engine.retrieve("rhythmic crank", 10) == []
    assert engine.retrieve("clicking", 10) == ["other"]


def test_order_is_score_descending_then_doc_id_ascending_and_zero_scores_dropped():
    docs = [
        Doc("b", content="x", title="pause plan"),
        Doc("a", content="x", title="pause plan"),
        Doc("c", content="x", title="pause"),
        Doc("z", content="x", title="unrelated"),
    ]
    assert KeywordEngine(docs).retrieve("pause plan", 10) == ["a", "b", "c"]
    assert KeywordEngine(docs).retrieve("pause plan", 2) == ["a", "b"]


def test_an_empty_query_keeps_every_document_at_score_zero_in_id_order():
    docs = [Doc("b", content="x", title="t"), Doc("a", content="x", title="t")]
    assert KeywordEngine(docs).retrieve("  -- ", 10) == ["a", "b"]


def test_bundled_corpus_body_only_documents_are_invisible(tmp_path):
    from conftest import CORPUS
    from pytest_retrieval_eval.data.corpus import JsonFolder

    engine = KeywordEngine(JsonFolder(CORPUS).load())
    # 'CL24B', 'isopropyl', 'locker' live only in bodies
    for query, doc in [("CL24B", "ops-bulletin-07"), ("isopropyl", "appendix-c"), ("lockers", "memo-2026-03")]:
        assert doc not in engine.retrieve(query, 100)


_WORDS = ["aa", "aaa", "ab", "b-a", "pause", "plan", "pause_plan", "ba"]


def _reference_ranking(docs, query, k):
    """The rules as the module docstring states them, one document at a time."""
    phrase, terms = normalize(query), tokenize(query)
    scored = []
    for d in docs:
        s = sum(field_score(normalize(getattr(d, f)), phrase, terms, w)
                for f, w in (("title", 4.0), ("description", 2.0), ("filename", 3.0)))
        if s > 0 or not phrase:
            scored.append((-s, d.doc_id))
    return [d for _, d in sorted(scored)[:k]]


def test_the_vectorised_ranking_equals_the_rules_applied_one_document_at_a_time():
    import random

    rng = random.Random(7)
    for trial in range(200):
        docs = [Doc(f"d{rng.randrange(1000):03d}-{i}", content="x",
                    title=" ".join(rng.choices(_WORDS, k=rng.randrange(0, 4))),
                    description=" ".join(rng.choices(_WORDS, k=rng.randrange(0, 3))),
                    filename=rng.choice(["", "pause-plan.md", "aa_b.txt"]))
                for i in range(rng.randrange(1, 25))]
        engine = KeywordEngine(docs)
        for _ in range(5):
            query = " ".join(rng.choices(_WORDS + ["", "--"], k=rng.randrange(0, 3)))
            k = rng.choice([0, 1, 3, 10, 100])
            assert engine.retrieve(query, k) == _reference_ranking(docs, query, k), (trial, query, k)


def test_occurrences_are_found_as_the_literal_regex_finds_them():
    """The engine counts a term's occurrences with str.find (no regex compiled per question):
    the same positions, overlaps skipped, as re.finditer of the escaped literal."""
    import random
    import re

    from pytest_retrieval_eval.engines.keyword import _starts

    rng = random.Random(7)
    for _ in range(3000):
        text = "".join(rng.choice("ab \n.*") for _ in range(rng.randint(0, 30)))
        needle = "".join(rng.choice("ab .*") for _ in range(rng.randint(0, 4)))
        assert list(_starts(text, needle)) == [m.start() for m in re.finditer(re.escape(needle), text)], (text, needle)

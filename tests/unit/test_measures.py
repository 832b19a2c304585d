import pytest

from pytest_retrieval_eval import Measure, RetrievalEvalError


@pytest.mark.parametrize(
    "text, name",
    [
        ("hit@5", "hit@5"), ("HIT@5", "hit@5"), ("success@5", "hit@5"), ("success_5", "hit@5"),
        ("mrr", "mrr"), ("MRR@10", "mrr@10"), ("RR", "mrr"), ("recip_rank", "mrr"),
        ("recall@100", "recall@100"), ("R@100", "recall@100"), ("recall.100", "recall@100"),
        ("precision@10", "precision@10"), ("P@10", "precision@10"), ("P_10", "precision@10"),
        ("nDCG@10", "ndcg@10"), ("ndcg_cut_10", "ndcg@10"), ("ndcg", "ndcg"),
        ("map", "map"), ("AP", "map"), ("map@100", "map@100"), ("map_cut_100", "map@100"),
    ],
)
def test_spellings_parse_to_a_canonical_name(text, name):
    assert Measure.parse(text).name == name
    assert str(Measure.parse(text)) == name


def test_identity_is_the_canonical_name():
    assert Measure.parse("nDCG@10") == Measure.parse("ndcg_cut_10") == Measure("ndcg", 10)
    assert len({Measure.parse("P@5"), Measure.parse("precision@5")}) == 1


@pytest.mark.parametrize(
    "text, fragment",
    [
        ("hit@0", "cutoff must be a whole number >= 1"),
        ("hit@-1", "cutoff must be a whole number >= 1"),
        ("hit", "needs a cutoff"),
        ("recall", "needs a cutoff"),
        ("bleu@4", "unknown measure 'bleu@4'"),
        ("hit@five", "unknown measure"),
        ("", "unknown measure"),
    ],
)
def test_bad_names_are_refused_with_a_message(text, fragment):
    with pytest.raises(RetrievalEvalError, match=fragment):
        Measure.parse(text)

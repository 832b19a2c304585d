"""Plain unit tests: they run without waking the retrieval plugin."""

from search import BM25, bm25, words


def test_words_drop_stopwords():
    assert words("How do I reset my VPN?") == ["reset", "vpn"]


def test_an_empty_index_finds_nothing():
    assert BM25([]).scores("vpn") == {}


def test_the_search_function_ranks_the_vpn_article_first():
    assert next(iter(bm25("wireguard tunnel profile", 3))) == "vpn-setup"

"""A plain unit test: it runs without waking the retrieval plugin."""

from search import HelpdeskSearch, words


def test_words_drop_stopwords():
    assert words("How do I reset my VPN?") == ["reset", "vpn"]


def test_an_empty_index_finds_nothing():
    assert HelpdeskSearch([]).retrieve("vpn", 5) == []

"""Plug the team's searches into pytest-retrieval-eval, one adapter each."""

from pytest_retrieval_eval import adapters, concatenated

import search


def pytest_retrieval_engines(registry, config):
    registry.register("helpdesk-bm25", lambda request: adapters.function(search.bm25))
    registry.register("helpdesk-haystack", lambda request: adapters.haystack(search.haystack_pipeline()))
    # the chat assistant's search takes the conversation (conversations.ini runs it); the plugin's
    # baseline beside it joins the user's turns before the same BM25, the rewrite to beat
    registry.register("helpdesk-chat", lambda request: adapters.function(search.chat_search, conversation=True))
    registry.register("helpdesk-bm25-concat",
                      lambda request: concatenated(adapters.function(search.bm25), name="helpdesk-bm25-concat"))

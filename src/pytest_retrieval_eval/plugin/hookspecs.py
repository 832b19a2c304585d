"""Hooks the plugin adds to pytest, implemented in a user's conftest.py or another plugin."""


def pytest_retrieval_engines(registry, config):
    """Register engines to evaluate: ``registry.register(name, factory)``.

    ``factory(request)`` builds the engine the first time a test asks for it and may request
    fixtures from the session, e.g. ``request.getfixturevalue("retrieval_corpus")``; the
    registered name becomes the engine's ``name``. Every registered engine becomes one parameter of the ``retrieval_engine`` fixture, with its name as
    the test id. Implement it in the root ``conftest.py`` (or a plugin) so that it runs before
    collection needs the list.
    """

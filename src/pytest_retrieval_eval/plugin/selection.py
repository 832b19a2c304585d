"""Which tests read which engine's results, and why a rule's engine recorded no evaluation
(``unread``): it was not selected, or no selected test reads its results."""

from __future__ import annotations

from typing import Any

#: the tests a "why" under a rule names, at most
TESTS_NAMED = 3


def reads(item: Any) -> str | None:
    """The engine whose results a test reads (``retrieval_results`` by its ``retrieval_engine``
    parameter), or None."""
    callspec = getattr(item, "callspec", None)
    if callspec is None or "retrieval_results" not in getattr(item, "fixturenames", ()):
        return None
    engine = callspec.params.get("retrieval_engine")
    return engine if isinstance(engine, str) else None


def tests_of(items: list, deselected: list) -> tuple[list, list]:
    """What this process runs, and what -k / -m left out, each with the engine whose results it reads."""
    return [(i.nodeid, reads(i)) for i in items], [(i.nodeid, reads(i)) for i in deselected]


def unread(tests: tuple[list, list] | None, engines: set[str], pytest_config: Any) -> dict[str, str]:
    """Engine -> why no evaluation of it was recorded and what to add, for each registered
    engine of ``engines`` (those a rule names that recorded none): not selected, or no
    selected test reads its results (named, with the deselected ones that would). ``tests``:
    ``tests_of`` this process's collection, None where it collected nothing (an xdist controller)."""
    from .wake import registry, selected_engines

    if tests is None or not engines:
        return {}
    selected, deselected = tests
    names = selected_engines(pytest_config)
    out = {}
    for engine in sorted(e for e in engines if e in registry(pytest_config).known()):
        if engine not in names:
            out[engine] = (f"{engine} is registered but not selected (selected: {', '.join(names) or 'none'}): add "
                           f"it to retrieval_engines (retrieval_engines = {' '.join([*names, engine])}), or pass "
                           f"--retrieval-engine={engine}")
            continue
        ids = [i for i, _ in selected]
        more = len(ids) - TESTS_NAMED
        shown = ", ".join(ids[:TESTS_NAMED]) + (f" and {more} more" if more > 0 else "")
        would = [i for i, reads in deselected if reads == engine][:TESTS_NAMED]
        out[engine] = (f"no selected test reads the results of {engine} (selected: {shown or 'none'}); add a test "
                       "that reads retrieval_results" + (f", or select one of those deselected: {', '.join(would)}"
                                                         if would else ""))
    return out

"""Identifiers the written files cannot hold are refused where they come in (file,
line, field), an engine's unwritable id is an error on its query, and no engine's output file
overwrites another's. Every file written reads back with the plugin's own readers."""

from __future__ import annotations


from pytest_retrieval_eval import Qrels, Run
from pytest_retrieval_eval.report.files import safe_name


def test_engine_names_that_map_to_one_file_name_get_their_own_files(bundled_project, tmp_path):
    bundled_project.makeconftest("""
        class Fixed:
            def __init__(self, name, answer):
                self.name, self.answer = name, answer
            def retrieve(self, query, k):
                return [self.answer]

        def pytest_retrieval_engines(registry, config):
            registry.register("search/v1", lambda request: Fixed("search/v1", "battery-care"))
            registry.register("search_v1", lambda request: Fixed("search_v1", "winter-riding-tips"))
    """)
    bundled_project.makepyfile("def test_x(retrieval_results):\n    pass\n")
    out = tmp_path / "out"
    assert bundled_project.runpytest("--retrieval-engine", "search/v1", "--retrieval-engine", "search_v1",
                                     f"--retrieval-report-dir={out}").ret == 0
    runs = sorted(p.name for p in (out / "runs").iterdir())
    assert len(runs) == 2 and "search_v1.trec" in runs
    firsts = {Run.from_trec(out / "runs" / name)["account-deletion.q1"][0] for name in runs}
    assert firsts == {"battery-care", "winter-riding-tips"}  # neither overwrote the other
    Qrels.from_trec(out / "qrels.txt")  # and the qrels read back too
    assert safe_name("a b") != safe_name("a_b") and safe_name("..") != ".."

"""A run over conversations end to end (``analysis/turns.py``, ``report/turns.py``): the engine
that sees only the last turn is good on first turns and bad on follow-ups, the one that reads the
conversation good on both; the drop is printed under the table, a ``turns.drop`` rule fails the
first, and ``report results.json`` prints the run's summary byte for byte."""

from __future__ import annotations

from pytest_retrieval_eval.cli import main as cli

from test_analysis_read_back import no_statistics, summary_of

#: the bundled questions as conversations of three turns; each follow-up needs its first turn
CONFTEST = """
    from pytest_retrieval_eval.data.labeled import LabeledSet
    from pytest_retrieval_eval.types import LabeledQuery, Turn, turn_id

    def chats(labeled):
        out = []
        for i, q in enumerate(labeled.queries[:60]):
            c, t = f"chat{i // 3:02d}", i % 3 + 1
            history = tuple(Turn("user", p.question) for p in labeled.queries[i - t + 1:i])
            out.append(LabeledQuery(turn_id(c, t), q.question, dict(q.relevant), conversation=c, turn=t,
                                    history=history, depends=t > 1))
        return LabeledSet(tuple(out), name="chats")

    class Engine:
        def __init__(self, name, labeled, follows):
            self.name, self.follows = name, follows
            self.turn = {q.question: q for q in labeled.queries}
        def retrieve(self, query, k):
            q = self.turn[query]
            if q.turn > 1 and not self.follows:  # the follow-up alone names nothing it can find
                return ["nothing-here"]
            return [q.gold[0]][:k]

    def pytest_retrieval_engines(registry, config):
        for name, follows in (("last-turn", False), ("reader", True)):
            registry.register(name, lambda request, name=name, follows=follows: Engine(
                name, chats(request.getfixturevalue("labeled_queries")), follows))
"""

TESTS = """
    import pytest
    from conftest import chats

    pytestmark = pytest.mark.retrieval

    def test_turns(retrieval_engine, evaluate_retrieval, labeled_queries):
        result = evaluate_retrieval(retrieval_engine, chats(labeled_queries))
        assert result.n == 60
"""


def test_the_drop_is_printed_gated_and_read_back_byte_for_byte(make_project, capsys, monkeypatch):
    p = make_project(engines="last-turn reader", conftest=CONFTEST, tests=TESTS)
    result = p.runpytest("-m", "retrieval", "-p", "no:randomly", "--retrieval-report",
                         "--retrieval-report-dir=out", "--retrieval-html=page.html",
                         "--retrieval-threshold=turns.drop.hit@5<=0.2")
    assert result.ret == 1, result.stdout.str()
    printed = summary_of(result.stdout.lines)
    text = "\n".join(printed)
    assert "hit@5 by turn (drop: first turns minus follow-ups, 95% interval over conversations):" in text
    assert any(line.startswith("  last-turn  1st 1.00  2nd 0.00  3rd 0.00 | drop 1.00 [") for line in printed)
    assert "  reader     1st 1.00  2nd 1.00  3rd 1.00 | drop 0.00 [-0.16, 0.09]" in printed  # 40 follow-ups worth 40
    failures = [line for line in printed if line.startswith("FAIL retrieval gate:")]
    assert len(failures) == 1 and failures[0].startswith(
        "FAIL retrieval gate: last-turn: turns.drop.hit@5 = 1.0000, required <= 0.2 (from --retrieval-threshold; "
        "first turns 1.0000 n=20, follow-ups 0.0000 n=40")
    assert "  cause (follow-ups): last-turn missed 40 of 40 at hit@5: 40 not retrieved" in printed
    assert len(printed) <= 30 and all(len(line) <= 88 for line in printed if not line.startswith("FAIL"))
    md = (p.path / "out" / "results.md").read_text(encoding="utf-8")
    assert "## By turn" in md and "### last-turn on chats (20 conversations, 20 first turns, 40 follow-ups)" in md
    page = (p.path / "page.html").read_text(encoding="utf-8")
    assert '<table id="by-turn">' in page and "1.000 (n=20)" in page
    no_statistics(monkeypatch)  # read back from the analysis: no bootstrap, no drop interval made again
    import pytest_retrieval_eval.analysis.turns as turns

    monkeypatch.setattr(turns, "by_turn", lambda *a, **k: (_ for _ in ()).throw(AssertionError("made again")))
    capsys.readouterr()
    assert cli(["report", str(p.path / "out" / "results.json"), "--out", str(p.path / "again"),
                "--html", str(p.path / "again.html")]) == 1
    assert capsys.readouterr().out.splitlines() == printed
    for name in ("results.json", "results.md"):
        assert (p.path / "again" / name).read_bytes() == (p.path / "out" / name).read_bytes(), name
    assert (p.path / "again.html").read_bytes() == (p.path / "page.html").read_bytes()

"""The drill-down page in a real browser: Debian's Chromium, headless, through Playwright (no
browser download). Skips with the reason where Chromium or Playwright is missing."""

from __future__ import annotations

import json
import os
import shutil

import pytest

from conftest import write_docs

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
#: skipped at each test's setup, so a run of another lane on a machine without Chromium never
#: meets it (under CI a skip is a failure, tests/conftest.py)
pytestmark = [pytest.mark.browser,
              pytest.mark.skipif(CHROMIUM is None, reason="no Chromium: apt-get install chromium (.ci/run does)"),
              pytest.mark.skipif(__import__("importlib.util").util.find_spec("playwright") is None,
                                 reason="playwright is not installed (the dev extra)")]

ATTACK = 'What about <script>window.pwned = 1; alert("pwned")</script> tags?'


@pytest.fixture
def page_file(pytester, tmp_path):
    corpus = write_docs(tmp_path / "corpus", [
        {"doc_id": "markup", "title": "Markup <b>in</b> titles", "content": "Body with <img src=x onerror=alert(2)> inside."},
        {"doc_id": "plain", "title": "Plain document", "content": "Nothing special about tags here."},
        {"doc_id": "other", "title": "Something else", "content": "Unrelated words about bicycles."},
    ])
    queries = [
        {"id": "q-attack", "question": ATTACK, "relevant": {"markup": 1}, "tags": ["team:a"]},
        {"id": "q-plain", "question": "plain document please", "relevant": {"plain": 1}},
        {"id": "q-miss", "question": "bicycles and unrelated words", "relevant": {"other": 1}, "tags": ["team:a"]},
        {"id": "q-boom", "question": "this one breaks the flaky engine", "relevant": {"plain": 1}},
    ]
    (tmp_path / "q.json").write_text(json.dumps({"format": "pytest-retrieval-eval/questions", "version": 1, "queries": queries}))
    from pytest_retrieval_eval.cli import main as cli

    assert cli(["label", "stamp", "--corpus", str(corpus), "--questions", str(tmp_path / "q.json")]) == 0  # fingerprints
    pytester.makeini(f"[pytest]\nretrieval_corpus = {corpus}\nretrieval_questions = {tmp_path / 'q.json'}\n")
    pytester.makeconftest(
        """
        import os

        class Flaky:
            name = "flaky"
            def retrieve(self, query, k):
                if "breaks" in query:
                    raise RuntimeError("engine <b>exploded</b>")
                return ["markup", "plain"] if os.environ.get("SWAP") else ["plain", "markup"]

        def pytest_retrieval_engines(registry, config):
            registry.register("flaky", lambda request: Flaky())
        """
    )
    pytester.makepyfile("def test_x(retrieval_results):\n    pass\n")
    out = tmp_path / "out"
    engines = ["--retrieval-engine", "keyword", "--retrieval-engine", "flaky"]
    assert pytester.runpytest(*engines, f"--retrieval-save-baseline={tmp_path / 'base.json'}").ret == 0
    os.environ["SWAP"] = "1"  # the flaky engine now ranks differently: rows move against the baseline
    try:
        result = pytester.runpytest(*engines, f"--retrieval-html={tmp_path / 'page.html'}", f"--retrieval-report-dir={out}",
                                    f"--retrieval-baseline={tmp_path / 'base.json'}")
    finally:
        del os.environ["SWAP"]
    assert result.ret == 0, result.stdout.str()
    return tmp_path / "page.html", json.loads((out / "results.json").read_text())


def misses(results: dict, engine: str) -> int:
    """The engine's misses at the run's miss cutoff, as the page, the terminal and the gate count them."""
    e = next(e for e in results["evaluations"] if e["engine"] == engine)
    return sum(1 for q in e["queries"] if q["values"][f"hit@{results['analysis']['miss_k']}"] == 0)


def errors(results: dict, engine: str) -> int:
    return len(next(e for e in results["evaluations"] if e["engine"] == engine)["errors"])


def test_the_page_in_chromium(page_file, tmp_path):
    from playwright import sync_api as playwright  # imported here: collecting stays fast

    path, results = page_file
    requests, dialogs = [], []
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=[
            "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
            "--disable-sync", "--no-first-run"])
        context = browser.new_context(viewport={"width": 1200, "height": 900}, offline=True)
        context.on("request", lambda r: requests.append(r.url))
        page = context.new_page()
        page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        page.goto(path.as_uri())
        # self-contained: the file itself is the only thing the page asked for, offline
        assert requests == [path.as_uri()]
        # data is text, never markup or script
        assert dialogs == [] and page.evaluate("window.pwned") is None
        assert page.locator("script").count() == 1  # the page's own, nothing injected
        assert page.get_by_text(ATTACK, exact=True).count() >= 2  # in each engine's list
        assert page.locator("section[data-engine=flaky] .err").first.inner_text() == "error: RuntimeError: engine <b>exploded</b>"
        # every engine's per-query list is there
        for engine in ("keyword", "flaky"):
            assert page.locator(f"section[data-engine={engine}] tr.q").count() == 4
        # filters: the visible rows are exactly the misses, then the errors, of results.json
        page.click("text=misses only")
        for engine in ("keyword", "flaky"):
            assert page.locator(f"section[data-engine={engine}] tr.q:visible").count() == misses(results, engine) > 0
        page.click("text=errors only")
        assert page.locator("section[data-engine=flaky] tr.q:visible").count() == errors(results, "flaky") == 1
        assert page.locator("section[data-engine=keyword] tr.q:visible").count() == errors(results, "keyword") == 0
        page.click("text=moved against the baseline")
        moved = page.locator("section[data-engine=flaky] tr.q:visible")
        assert moved.count() == 2  # q-attack up (2 -> 1), q-plain down (1 -> 2)
        assert sorted(moved.locator(".tag").all_inner_texts()) == ["down (was 1)", "up (was 2)"]
        assert page.locator("section[data-engine=keyword] tr.q:visible").count() == 0
        page.click("button[data-filter=all]")  # the filter, not the first text holding "all" ("Recall by stage")
        page.fill("#search", "q-plain")
        assert page.locator("section.engine tr.q:visible").count() == 2
        page.fill("#search", "")
        # a segment: the team's tag, then a derived one; every table of questions follows it
        page.select_option("#segment", "team:a")
        for engine in ("keyword", "flaky"):
            assert page.locator(f"section[data-engine={engine}] tr.q:visible").count() == 2
        assert page.locator("#compare tr.q:visible").count() == 2
        page.select_option("#segment", "")
        assert page.locator("section[data-engine=keyword] tr.q:visible").count() == 4
        # why each question missed, grouped by cause and beside each row
        why = {row.locator("code").first.inner_text(): row.locator("td.why").inner_text()
               for row in page.locator("section[data-engine=flaky] tr.q").all()}
        assert why["q-boom"].startswith("engine error: RuntimeError: engine <b>exploded</b>")
        assert why["q-miss"].startswith("not retrieved (not among the 2 returned)") and why["q-plain"] == ""
        assert page.locator("#miss-lines li", has_text=" missed ").count() == 2  # a line per engine
        # an engine answering with fewer documents than the cutoff while the corpus has more is said
        assert page.locator("#miss-lines li", has_text="under-returned").count() >= 1
        # side by side: two engine columns at a time
        assert page.locator("#compare th.col:visible").count() == 2
        page.evaluate("scrollTo(0, 0)")  # the picture shows the page as it opens: the verdict first
        shot = tmp_path / "page.png"
        page.screenshot(path=str(shot), full_page=False)
        assert shot.stat().st_size > 10_000
        if os.environ.get("RETRIEVAL_SCREENSHOT"):  # refresh the README's picture
            shutil.copy(shot, os.environ["RETRIEVAL_SCREENSHOT"])
        browser.close()


def test_the_page_is_self_contained_and_escaped_as_text(page_file):
    path, _ = page_file
    html = path.read_text()
    assert "http://" not in html.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert "https://" not in html
    assert "<script>window.pwned" not in html
    assert "&lt;script&gt;window.pwned = 1; alert(&#34;pwned&#34;)&lt;/script&gt;" in html


def test_a_stale_document_is_marked_in_chromium(pytester, tmp_path):
    """A superseded price list ranked above its newer version: struck through and tagged with
    why, and the "stale hits" filter shows exactly the queries that got one."""
    from playwright import sync_api as playwright

    corpus = write_docs(tmp_path / "corpus", [
        {"doc_id": "prices-2025", "title": "Prices", "content": "The plan costs 30 euros.", "version_key": "prices",
         "valid_until": "2025-12-31", "superseded_by": "prices-2026"},
        {"doc_id": "prices-2026", "title": "Prices", "content": "The plan costs 35 euros.", "version_key": "prices",
         "valid_from": "2026-01-01"},
        {"doc_id": "other", "title": "Something else", "content": "Unrelated words about bicycles."},
    ])
    queries = [{"id": "q-price", "question": "what does the plan cost", "relevant": {"prices-2026": 1}},
               {"id": "q-other", "question": "bicycles", "relevant": {"other": 1}}]
    (tmp_path / "q.json").write_text(json.dumps({"format": "pytest-retrieval-eval/questions", "version": 1, "queries": queries}))
    from pytest_retrieval_eval.cli import main as cli

    assert cli(["label", "stamp", "--corpus", str(corpus), "--questions", str(tmp_path / "q.json")]) == 0
    pytester.makeini(f"[pytest]\nretrieval_corpus = {corpus}\nretrieval_questions = {tmp_path / 'q.json'}\n")
    pytester.makeconftest("""
        class Old:
            name = "old-first"
            def retrieve(self, query, k):
                return ["prices-2025", "prices-2026"] if "cost" in query else ["other"]

        def pytest_retrieval_engines(registry, config):
            registry.register("old-first", lambda request: Old())
        """)
    pytester.makepyfile("def test_x(retrieval_results):\n    pass\n")
    page_path = tmp_path / "page.html"
    result = pytester.runpytest(f"--retrieval-html={page_path}", "--retrieval-as-of=2026-11-30")
    assert result.ret == 0, result.stdout.str()
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        page = browser.new_context(offline=True).new_page()
        page.goto(page_path.as_uri())
        stale = page.locator("section[data-engine=old-first] li.stale")
        assert stale.count() == 1 and stale.locator("code").inner_text() == "prices-2025"
        assert stale.locator(".stale-tag").inner_text() == "stale"
        assert stale.get_attribute("title") == "stale: superseded by prices-2026; expired 2025-12-31"
        assert page.evaluate("getComputedStyle(document.querySelector('li.stale')).textDecorationLine") == "line-through"
        assert page.locator("section[data-engine=old-first] li.gold:not(.stale) code").all_inner_texts() == ["prices-2026", "other"]
        assert "1 with a stale document in the top 10 (as of 2026-11-30)" in page.locator("h2", has_text="old-first").inner_text()
        page.click("text=stale hits")
        visible = page.locator("section[data-engine=old-first] tr.q:visible")
        assert visible.count() == 1 and "q-price" in visible.inner_text()
        browser.close()


LONG = "a-hybrid-engine-with-a-rather-long-name-v2"
MEASURES = "hit@1,hit@3,hit@5,hit@10,mrr,ndcg@10,map,recall@10,precision@5,recall@20"


def _questions(path, extra: bool) -> None:
    queries = [
        {"id": "q-plain", "question": "plain document please", "relevant": {"plain": 1}},
        {"id": "q-miss", "question": "bicycles and unrelated words", "relevant": {"other": 1}},
        {"id": "q-markup", "question": "markup in titles", "relevant": {"markup": 1}},
    ] + ([{"id": "q-new", "question": "a question added after the baseline", "relevant": {"other": 1}}] if extra else [])
    path.write_text(json.dumps({"format": "pytest-retrieval-eval/questions", "version": 1, "queries": queries}))


@pytest.fixture
def refused_page(pytester, tmp_path):
    """A failing run with ten columns, an engine with a long name, a two-record history and a
    baseline refused (a question was added since it was saved): the page, and the verdict
    judged again from results.json."""
    corpus = write_docs(tmp_path / "corpus", [
        {"doc_id": "markup", "title": "Markup in titles", "content": "Body about markup."},
        {"doc_id": "plain", "title": "Plain document", "content": "Nothing special about tags here."},
        {"doc_id": "other", "title": "Something else", "content": "Unrelated words about bicycles."},
    ])
    from pytest_retrieval_eval.cli import main as cli

    pytester.makeini(f"[pytest]\nretrieval_corpus = {corpus}\nretrieval_questions = {tmp_path / 'q.json'}\n")
    pytester.makeconftest(f"""
        class Long:
            name = "{LONG}"
            def retrieve(self, query, k):
                return ["plain", "markup"]

        def pytest_retrieval_engines(registry, config):
            registry.register("{LONG}", lambda request: Long())
        """)
    pytester.makepyfile("def test_x(retrieval_results):\n    pass\n")
    common = ["--retrieval-engine", "keyword", "--retrieval-engine", LONG, f"--retrieval-measures={MEASURES}",
              f"--retrieval-history={tmp_path / 'history'}"]
    _questions(tmp_path / "q.json", extra=False)
    assert cli(["label", "stamp", "--corpus", str(corpus), "--questions", str(tmp_path / "q.json")]) == 0
    first = pytester.runpytest(*common, f"--retrieval-save-baseline={tmp_path / 'base.json'}")
    assert first.ret == 0, first.stdout.str()
    _questions(tmp_path / "q.json", extra=True)  # the labeled set changed: the baseline no longer fits
    assert cli(["label", "stamp", "--corpus", str(corpus), "--questions", str(tmp_path / "q.json")]) == 0
    out = tmp_path / "out"
    result = pytester.runpytest(*common, f"--retrieval-html={tmp_path / 'page.html'}", f"--retrieval-report-dir={out}",
                                f"--retrieval-baseline={tmp_path / 'base.json'}", "--retrieval-threshold=hit@1>=0.99")
    assert result.ret == 1, result.stdout.str()
    from pytest_retrieval_eval.archive.saved import load_run, load_saved
    from pytest_retrieval_eval.gate.verdict import conclude

    saved = load_saved(out / "results.json")
    verdict = conclude(saved.run, saved.settings, load_run(tmp_path / "base.json", check_fingerprints=False),
                       recorded=saved.analysis)
    assert verdict.baseline.refusals and len(verdict.failures) >= 3
    return tmp_path / "page.html", verdict


def _browse(viewports, path):
    """(width, page) in Chromium for each viewport width, at 900 px high."""
    from playwright import sync_api as playwright

    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        for width in viewports:
            page = browser.new_context(viewport={"width": width, "height": 900}, offline=True).new_page()
            page.set_default_timeout(5000)
            page.goto(path.as_uri())
            yield width, page
        browser.close()


def _top(page, selector: str) -> float:
    return page.evaluate(f"document.querySelector({selector!r}).getBoundingClientRect().top + scrollY")


def test_at_800_px_the_page_never_scrolls_sideways(refused_page):
    path, _ = refused_page
    for _, page in _browse([800], path):
        assert page.locator("#summary th").count() == 2 + 10 + 2  # every column is there
        assert page.evaluate("document.documentElement.scrollWidth") <= page.evaluate("innerWidth")
        # the wide summary scrolls inside its own box: its last column can be reached
        assert page.evaluate("(() => { const t = document.querySelector('#summary'); "
                             "return t.parentElement.scrollWidth >= t.scrollWidth; })()")


def test_the_verdict_and_every_failure_come_before_the_table(refused_page):
    path, verdict = refused_page
    for width, page in _browse([800, 1400], path):
        shown = page.locator("#verdict").inner_text()
        assert shown.startswith("FAIL"), shown
        for failure in verdict.failures:
            assert failure in " ".join(shown.split()), (failure, shown)
        assert _top(page, "#verdict") + page.locator("#verdict").bounding_box()["height"] <= _top(page, "#summary")
        assert _top(page, "#verdict") < 900  # in the first screen
        # the per-query drill-down is one click away from the first screen
        link = page.locator("a[href='#per-query']").first
        assert link.bounding_box()["y"] < 900
        link.click()
        page.wait_for_function("Math.abs(document.querySelector('#per-query').getBoundingClientRect().top) < 50")


def test_a_refused_baseline_is_said_refused_and_nowhere_compared(refused_page):
    path, verdict = refused_page
    for _, page in _browse([1400], path):
        text = page.locator("body").inner_text()
        assert "no measure moved" not in text and "against the baseline (p corrected" not in text.lower()
        against = page.locator("#baseline").inner_text()
        assert "refused" in against
        for reason in verdict.baseline.refusals:
            assert reason in " ".join(against.split())
        # no curve of the baseline, no question moved against it, no filter for what moved
        assert "(baseline)" not in page.locator("#curve").inner_text()
        assert page.locator("#curve svg polyline[stroke-dasharray]").count() == 0
        assert page.locator("tr.q[data-moved='1']").count() == 0 and page.locator("section.engine .tag").count() == 0
        button = page.locator("[data-filter=moved]")
        assert button.is_disabled() and "refused" in button.get_attribute("title")


def test_chart_legends_lie_inside_their_svg(refused_page):
    """Every label of the Hit@k and history charts, the legend's long engine name included."""
    path, _ = refused_page
    inside = """(svg) => { const box = svg.getBoundingClientRect();
        return [...svg.querySelectorAll('text')].map(t => { const r = t.getBoundingClientRect();
            return [t.textContent, r.left >= box.left - 0.5 && r.right <= box.right + 0.5 &&
                    r.top >= box.top - 0.5 && r.bottom <= box.bottom + 0.5]; }); }"""
    for width, page in _browse([800, 1400], path):
        for chart in ("#curve svg", "#trend svg"):
            found = page.locator(chart).evaluate(inside)
            assert any(LONG in label for label, _ in found), (chart, found)
            assert all(ok for _, ok in found), (width, chart, found)


def test_a_conversation_in_chromium_reads_in_order_and_never_scrolls_sideways(tmp_path):
    """Each conversation's heading, then its turns with what was said before each; a filter that
    hides every turn of a conversation hides its heading too; 800 px never scroll sideways."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit"))
    from test_conversation_page import run_of, shuffled

    from pytest_retrieval_eval.gate.verdict import verdict_of
    from pytest_retrieval_eval.report.html import render

    path = tmp_path / "conversations.html"
    path.write_text(render(verdict_of(run_of(shuffled()), measures=["hit@1"])), encoding="utf-8")
    for _, page in _browse([800], path):
        assert page.evaluate("document.documentElement.scrollWidth") <= page.evaluate("innerWidth")
        keyword = page.locator("section[data-engine=keyword]")
        refund = keyword.locator("tr.q[data-conv=refund]")
        assert refund.count() == 2 and "turn 1" in refund.nth(0).inner_text()
        assert "assistant" in refund.nth(1).locator("ol.said").inner_text()
        assert keyword.locator("tr.conv").count() == 5
        page.locator("#search").fill("battery#")  # one conversation's turns: its heading alone stays
        assert [keyword.locator("tr.conv:visible").get_attribute("data-conv")] == ["battery"]
        assert keyword.locator("tr.q:visible").count() == 2

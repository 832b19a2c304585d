"""Secrets: text is masked BEFORE it is cut (half a key escapes every mask), and
credentials written into a URL (``user:password@``, ``?api_key=``) never reach a file the
plugin writes or a line it prints; a model's megabyte answer is logged capped."""

from __future__ import annotations

import json


from fake_api import FakeApi, Reply

PASSWORD = "pa55-w0rd-zz81"
QUERY_KEY = "qs-SECRET-77aa11bb"


def test_credentials_in_an_http_engine_url_stay_out_of_results_and_reports(bundled_project, tmp_path):
    with FakeApi() as api:
        api.script("/search", Reply(200, {"hits": [{"id": "battery-care"}]}))
        url = api.url.replace("http://", f"http://team:{PASSWORD}@") + "/search?q={query}&api_key=" + QUERY_KEY
        bundled_project.makeconftest(f"""
            from pytest_retrieval_eval import adapters

            def pytest_retrieval_engines(registry, config):
                registry.register("svc", lambda request: adapters.http({url!r}, ids="hits[].id"))
        """)
        bundled_project.makepyfile("def test_q(retrieval_results):\n    assert retrieval_results.n == 68\n")
        out = tmp_path / "out"
        result = bundled_project.runpytest("--retrieval-engine", "svc", f"--retrieval-report-dir={out}",
                                           f"--retrieval-html={tmp_path / 'page.html'}", "--retrieval-report")
        assert result.ret == 0, result.stdout.str()
        assert api.hits("/search")
    everything = result.stdout.str() + result.stderr.str() + (tmp_path / "page.html").read_text()
    for path in out.rglob("*"):
        if path.is_file():
            everything += path.read_text(errors="replace")
    info = json.loads((out / "results.json").read_text())["evaluations"][0]["engine_info"]
    assert info["url"] == api.url.replace("http://", "http://team:***@") + "/search"
    assert PASSWORD not in everything and QUERY_KEY not in everything

"""Each option is declared once (plugin/options.py): pytest's flags and ini keys, the CLI's shared
options and the options page of the docs (docs/options.md) all come from the declarations, and
this module keeps them equal."""

from __future__ import annotations

import re


from conftest import REPO
from pytest_retrieval_eval.plugin.options import OPTIONS, docs_block

OPTIONS_PAGE = REPO / "docs" / "options.md"


def undocumented_flags(help_text: str, page: str) -> list[str]:
    """The ``--retrieval-*`` flags pytest's help lists that no row of the options page names."""
    flags = sorted(set(re.findall(r"(--retrieval-[a-z-]+)", help_text)))
    rows = "\n".join(docs_block(page))
    return [f for f in flags if not re.search(rf"`{re.escape(f)}[ `]", rows)]


def test_every_flag_pytest_help_lists_is_on_the_options_page(pytester):
    help_text = pytester.runpytest("--help").stdout.str()
    page = OPTIONS_PAGE.read_text(encoding="utf-8")
    assert len(re.findall(r"--retrieval-[a-z-]+", help_text)) >= len(OPTIONS)
    assert undocumented_flags(help_text, page) == []
    # the check bites: a page that lost the --retrieval-dsn row reports that flag (and not
    # --retrieval-dsn-keep, whose row is still there)
    without_dsn = "\n".join(line for line in page.splitlines() if not line.startswith("| `--retrieval-dsn DSN`"))
    assert undocumented_flags(help_text, without_dsn) == ["--retrieval-dsn"]


def test_every_flag_and_ini_key_pytest_knows_is_declared_once(pytester):
    help_text = pytester.runpytest("--help").stdout.str()
    flags = set(re.findall(r"(--retrieval-[a-z-]+)", help_text))
    inis = set(re.findall(r"^\s+(retrieval_[a-z_]+)", help_text, re.M))
    assert flags == {o.flag_name for o in OPTIONS}
    assert inis == {o.ini_name for o in OPTIONS if o.ini_name}
    assert len({o.key for o in OPTIONS}) == len(OPTIONS)


def test_precedence_command_line_then_environment_then_ini(pytester, monkeypatch):
    pytester.makeini("[pytest]\nretrieval_embedder = hashing:64\nretrieval_depth = 7\n")
    pytester.makeconftest("""
        def pytest_configure(config):
            from pytest_retrieval_eval.plugin.options import read
            print("VALUES", read(config, "embedder"), read(config, "depth"))
    """)
    assert "VALUES hashing:64 7" in pytester.runpytest("-s").stdout.str()
    monkeypatch.setenv("RETRIEVAL_EVAL_EMBEDDER", "hashing:32")
    assert "VALUES hashing:32 7" in pytester.runpytest("-s").stdout.str()
    out = pytester.runpytest("-s", "--retrieval-embedder=hashing:16", "--retrieval-depth=9").stdout.str()
    assert "VALUES hashing:16 9" in out

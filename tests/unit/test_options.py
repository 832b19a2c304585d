"""Each option is declared once (plugin/options.py): pytest's flags and ini keys, the CLI's shared
options and the options page of the docs (docs/options.md) all come from the declarations, and
this module keeps them equal."""

from __future__ import annotations

import dataclasses
import re

import pytest

from conftest import REPO
from pytest_retrieval_eval.plugin import options
from pytest_retrieval_eval.plugin.options import OPTIONS, Option, docs_block, markdown_table

OPTIONS_PAGE = REPO / "docs" / "options.md"


def page_disagreements(page: str) -> list[str]:
    """Rows the options page's table lacks or has in excess, against the declarations."""
    have, want = docs_block(page), markdown_table()
    return [f"missing: {row}" for row in want if row not in have] + [f"extra: {row}" for row in have if row not in want]


def test_the_options_page_table_is_the_declarations():
    page = OPTIONS_PAGE.read_text(encoding="utf-8")
    problems = page_disagreements(page)
    assert not problems, "docs/options.md table is out of date; paste:\n" + "\n".join(markdown_table())
    assert docs_block(page) == markdown_table()


def test_an_option_declared_but_missing_from_the_options_page_is_caught(monkeypatch):
    page = OPTIONS_PAGE.read_text(encoding="utf-8")
    extra = Option("frobnicate", "a new option nobody documented", 3, options.whole(1), metavar="N")
    monkeypatch.setattr(options, "OPTIONS", (*OPTIONS, extra))
    problems = page_disagreements(page)
    assert problems == ["missing: | `--retrieval-frobnicate=N` | `retrieval_frobnicate` |  | `3` | a new option nobody documented |"]


def test_the_cli_shares_the_declarations_without_the_prefix(capsys):
    from pytest_retrieval_eval.cli.parser import make_parser

    parser = make_parser()
    generate = parser.parse_args(["generate"])
    assert (generate.split_length, generate.split_overlap) == (options.BY_KEY["split_length"].default,
                                                              options.BY_KEY["split_overlap"].default)
    assert generate.generator_model == options.BY_KEY["generator_model"].default
    assert parser.parse_args(["generate", "--model", "m1"]).generator_model == "m1"
    with pytest.raises(SystemExit):
        parser.parse_args(["generate", "--split-length", "0"])
    assert "must be a whole number >= 1, got '0'" in capsys.readouterr().err
    report = parser.parse_args(["report", "r.json", "--threshold", "hit@5>=0.5", "--alpha", "0.01"])
    assert report.threshold == ["hit@5>=0.5"] and report.alpha == 0.01 and report.noise_aware is None


def test_defaults_live_in_one_place():
    from pytest_retrieval_eval.data.chunking import Chunking
    from pytest_retrieval_eval.engines.hybrid import HybridConfig
    from pytest_retrieval_eval.plugin.config import RunConfig

    assert options.BY_KEY["split_length"].default == Chunking().split_length == 400
    assert options.BY_KEY["top_k"].default == HybridConfig().keyword_top_k
    assert options.BY_KEY["depth"].default == RunConfig().depth
    src = (REPO / "src" / "pytest_retrieval_eval").rglob("*.py")
    spelled = [p.name for p in src if re.search(r"(?i)\b(split_length|split-length)\b[^\n]*\b400\b", p.read_text())]
    assert spelled == ["_defaults.py"]  # which plugin.options and chunking take it from


def test_option_records_are_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        OPTIONS[0].key = "x"  # type: ignore[misc]


def test_every_option_that_takes_a_value_is_checked_for_a_value_apart_from_it(tmp_path, monkeypatch):
    """Switches take no value, so a path after one is a test path; every other flag's is its value."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "judgments.jsonl").write_text("")
    for o in OPTIONS:
        args = [o.flag_name, "judgments.jsonl"]
        if o.kind == "switch":
            options.check_command_line(args, lambda _: [])
            continue
        with pytest.raises(options.OptionError, match=re.escape(f"write {o.flag_name}=judgments.jsonl")):
            options.check_command_line(args, lambda _: [])
    options.check_command_line(["--retrieval-judgments=judgments.jsonl", "judgments.jsonl"], lambda _: [])
    options.check_command_line(["--retrieval-threshold", "mrr>=0.5"], lambda _: [])  # no such file


@pytest.mark.parametrize("unknown, said", [
    ("--retrieval-reprot", "did you mean --retrieval-report or --retrieval-report-dir?"),
    ("--retrieval_report", "did you mean --retrieval-report or"),
    ("--retreival-judgments=x", "did you mean --retrieval-judgments or"),
    ("--retrieval-xyzzy", "no --retrieval-* option is near it"),
])
def test_a_misspelt_flag_is_named_with_the_nearest_flags(unknown, said):
    with pytest.raises(options.OptionError) as caught:
        options.check_command_line([unknown], lambda args: list(args))
    assert str(caught.value).startswith(f"unrecognized option {unknown.partition('=')[0]}: ")
    assert said in str(caught.value)


def test_a_flag_of_another_plugin_is_left_to_pytest():
    options.check_command_line(["--cov-report=term", "--co"], lambda args: list(args))


def test_path_options_say_what_kind_of_path_they_name(tmp_path):
    kinds = {o.key: o.path for o in OPTIONS if o.path}
    assert kinds["judgments"] == kinds["baseline"] == kinds["html"] == kinds["questions"] == "file"
    assert kinds["report_dir"] == kinds["history"] == kinds["cache_dir"] == "dir"
    folder, file = tmp_path / "d", tmp_path / "f.json"
    folder.mkdir()
    file.write_text("{}")
    with pytest.raises(options.OptionError, match="--retrieval-judgments / retrieval_judgments names a file, and .* is a folder"):
        options.check_path(options.BY_KEY["judgments"], folder)
    with pytest.raises(options.OptionError, match="--retrieval-report-dir / retrieval_report_dir names a folder, and .* is a file"):
        options.check_path(options.BY_KEY["report_dir"], file)
    options.check_path(options.BY_KEY["judgments"], tmp_path / "not-yet.jsonl")  # made by --retrieval-judge
    options.check_path(options.BY_KEY["report_dir"], tmp_path / "new")


@pytest.mark.parametrize("name, text", [
    ("pytest.ini", "[pytest]\nretrieval_corpsu = kb\naddopts = -q\n"),
    ("setup.cfg", "[tool:pytest]\nretrieval_corpsu = kb\naddopts = -q\n[other]\nretrieval_x = 1\n"),
    ("pyproject.toml", '[tool.pytest.ini_options]\nretrieval_corpsu = "kb"\naddopts = "-q"\n[tool.other]\nretrieval_x = 1\n'),
])
def test_the_ini_keys_a_file_sets_are_read_from_its_pytest_section(tmp_path, name, text):
    import sys

    if name.endswith(".toml") and sys.version_info < (3, 11):
        pytest.skip("not applicable: no tomllib before Python 3.11")
    (tmp_path / name).write_text(text)
    assert options.ini_keys(tmp_path / name, ["retrieval_depht=3"]) == {"retrieval_corpsu", "addopts", "retrieval_depht"}
    with pytest.raises(options.OptionError, match="unknown ini key retrieval_corpsu: did you mean retrieval_corpus?"):
        options.check_ini_keys({"retrieval_corpsu", "addopts", "retrieval_team_owner"}, name)


#: reStructuredText a terminal shows as it is: ``literal`` and :role:`text`
REST_MARKUP = re.compile(r"``|:[a-z]+:`")


def _parsers(parser):
    """``parser`` and every subcommand's parser under it, depth first."""
    import argparse

    yield parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                yield from _parsers(sub)


def test_no_help_text_holds_rest_markup():
    from pytest_retrieval_eval.cli.parser import make_parser

    found = [f"{o.flag_name}: {o.help}" for o in OPTIONS if REST_MARKUP.search(o.help)]
    found += [f"{p.prog}: {line}" for p in _parsers(make_parser()) for line in p.format_help().splitlines()
              if REST_MARKUP.search(line)]
    assert found == []

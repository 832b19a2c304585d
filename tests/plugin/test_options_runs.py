"""Each option is declared once (plugin/options.py): pytest's flags and ini keys, the CLI's shared
options and the options page of the docs (docs/options.md) all come from the declarations, and
this module keeps them equal."""

from __future__ import annotations

import re

import pytest


from conftest import REPO
from pytest_retrieval_eval.plugin.options import OPTIONS, docs_block

OPTIONS_PAGE = REPO / "docs" / "options.md"


def undocumented_flags(help_text: str, page: str) -> list[str]:
    """The ``--retrieval-*`` flags pytest's help lists that no row of the options page names."""
    flags = sorted(set(re.findall(r"(--retrieval-[a-z-]+)", help_text)))
    rows = "\n".join(docs_block(page))
    return [f for f in flags if not re.search(rf"`{re.escape(f)}[=`]", rows)]


def test_every_flag_pytest_help_lists_is_on_the_options_page(pytester):
    help_text = pytester.runpytest("--help").stdout.str()
    page = OPTIONS_PAGE.read_text(encoding="utf-8")
    assert len(re.findall(r"--retrieval-[a-z-]+", help_text)) >= len(OPTIONS)
    assert undocumented_flags(help_text, page) == []
    # the check bites: a page that lost the --retrieval-dsn row reports that flag (and not
    # --retrieval-dsn-keep, whose row is still there)
    without_dsn = "\n".join(line for line in page.splitlines() if not line.startswith("| `--retrieval-dsn=DSN`"))
    assert undocumented_flags(help_text, without_dsn) == ["--retrieval-dsn"]


def test_every_flag_and_ini_key_pytest_knows_is_declared_once(pytester):
    help_text = pytester.runpytest("--help").stdout.str()
    flags = set(re.findall(r"(--retrieval-[a-z-]+)", help_text))
    inis = set(re.findall(r"^\s+(retrieval_[a-z_]+)", help_text, re.M))
    assert flags == {o.flag_name for o in OPTIONS}
    assert inis == {o.ini_name for o in OPTIONS if o.ini_name}
    assert len({o.key for o in OPTIONS}) == len(OPTIONS)


def test_pytest_help_of_every_retrieval_option_and_ini_key_is_plain_text(pytester):
    lines = pytester.runpytest("--help").stdout.lines
    start = lines.index("retrieval evaluation (pytest-retrieval-eval):")
    ours = lines[start:start + next(i for i, line in enumerate(lines[start:]) if not line.strip())]
    for i, line in enumerate(lines):  # each retrieval_* ini key and the lines its help wraps onto
        if re.match(r"\s+retrieval_[a-z_]+ ", line):
            ours += [line, *(x for x in lines[i + 1:i + 8] if x.startswith(" " * 20))]
    assert len(ours) > len(OPTIONS)
    assert [line for line in ours if re.search(r"``|:[a-z]+:`", line)] == []


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


# --- bad command lines: one usage error, before anything starts -----------------------------------

def test_a_misspelt_option_is_a_usage_error_naming_the_nearest_options(make_project):
    project = make_project()
    result = project.runpytest("-m", "retrieval", "--retrieval-reprot")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert "--retrieval-reprot" in err and "did you mean --retrieval-report" in err, err
    assert "Traceback" not in err and "passed" not in result.stdout.str()
    # with a value (=), and a typo in the prefix itself
    for typo, nearest in (("--retrieval-thresold=mrr>=0.1", "--retrieval-threshold"),
                          ("--retreival-report-dir=out", "--retrieval-report-dir")):
        result = project.runpytest("-m", "retrieval", typo)
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        assert f"did you mean {nearest}" in result.stderr.str(), result.stderr.str()


def test_an_unknown_option_far_from_the_plugins_is_left_to_pytest(make_project):
    result = make_project().runpytest("--cov-report=term")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "unrecognized arguments: --cov-report=term" in result.stderr.str()
    assert "did you mean" not in result.stderr.str()


@pytest.mark.parametrize("flag, value", [("--retrieval-judgments", "judgments.jsonl"),
                                         ("--retrieval-baseline", "baseline.json"),
                                         ("--retrieval-report-dir", "out"),
                                         ("--retrieval-threshold", "kept")])
def test_a_value_given_apart_from_its_option_is_a_usage_error_saying_to_write_it_with_equals(make_project, flag,
                                                                                                 value):
    """pytest finds its rootdir and ini file before the plugin's options exist: the value of
    ``--retrieval-judgments judgments.jsonl`` is taken for a test path there, and a file outside
    the project moves the rootdir away from the project's ini."""
    project = make_project()
    elsewhere = project.path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "out").mkdir()
    for name in ("judgments.jsonl", "baseline.json", "kept"):
        (elsewhere / name).write_text("{}\n")
    project.chdir()
    result = project.runpytest("-m", "retrieval", flag, str(elsewhere / value))
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()
    err = result.stderr.str()
    assert f"write {flag}={elsewhere / value}" in err, err
    assert "Traceback" not in err and "ERROR at setup" not in result.stdout.str()


def test_a_value_apart_from_its_option_that_names_no_file_still_runs(make_project):
    """Not on disk, pytest's early parse ignores it: ``--retrieval-threshold mrr>=0.01`` works."""
    result = make_project().runpytest("-m", "retrieval", "--retrieval-threshold", "mrr>=0.01",
                                      "--retrieval-engine", "keyword")
    assert result.ret == 0, result.stdout.str() + result.stderr.str()


@pytest.mark.parametrize("key, kind", [("judgments", "folder"), ("baseline", "folder"), ("questions", "folder"),
                                       ("html", "folder"), ("save_baseline", "folder"), ("report_dir", "file"),
                                       ("history", "file")])
def test_a_path_option_naming_the_wrong_kind_of_path_is_a_usage_error_naming_the_option(make_project, key, kind):
    project = make_project()
    where = project.path / "there"
    where.mkdir() if kind == "folder" else where.write_text("{}\n")
    flag = f"--retrieval-{key.replace('_', '-')}"
    result = project.runpytest("-m", "retrieval", f"{flag}=there")
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()
    err = result.stderr.str()
    assert flag in err and f"there is a {kind}" in err, err
    assert "INTERNALERROR" not in result.stdout.str() + err and "Traceback" not in err


def test_a_misspelt_ini_key_is_a_usage_error_naming_the_nearest_key(make_project):
    """pytest only warns of an unknown ini key: a misspelt retrieval_thresholds would gate nothing."""
    project = make_project(treshold="mrr>=0.999")
    result = project.runpytest("-m", "retrieval")
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()
    assert "tox.ini: unknown ini key retrieval_treshold: did you mean retrieval_thresholds" in result.stderr.str()
    other = make_project(team_owner="me")  # a key of the team's own, far from the plugin's: pytest's warning
    assert other.runpytest("-m", "retrieval").ret == 0


def test_a_query_pipeline_naming_a_folder_is_a_usage_error(make_project):
    project = make_project()
    (project.path / "pipelines").mkdir()
    result = project.runpytest("-m", "retrieval", "--retrieval-query-pipeline=mine=pipelines")
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()
    assert "query pipeline 'mine=pipelines' (from --retrieval-query-pipeline) names a file, and pipelines is a folder" \
        in result.stderr.str()

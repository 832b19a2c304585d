"""The end-of-run summary in the terminal reads verdict first: by default the table with its
intervals, a misses line per engine, the sections the run asked for (segments, latency, trials),
the first three warnings and the verdict with each failure and its cause, within 88 columns; ``-v``
brings back the detail not asked for (differences, engine configurations, judged@k without a
judgments file, coverage, lint findings), which results.md keeps either way."""

from __future__ import annotations

import textwrap

from projects import ORACLE_CONFTEST

SEP = "retrieval evaluation"
BOTH = ("--retrieval-engine=keyword", "--retrieval-engine=oracle", "--retrieval-by=body-only")


def hidden(lines: list[str]) -> str:
    """What the "more with -v" line names (its continuation lines joined), or ''."""
    start = next((i for i, line in enumerate(lines) if line.startswith("more with -v: ")), None)
    if start is None:
        return ""
    rest = [line.strip() for line in lines[start + 1:]]
    return " ".join([lines[start], *rest[:next((i for i, line in enumerate(lines[start + 1:])
                                                 if not line.startswith("    ")), len(rest))]])


def summary(result) -> list[str]:
    """The retrieval section of a run's output: from its separator to pytest's last line."""
    lines = result.stdout.lines
    start = next(i for i, line in enumerate(lines) if SEP in line)
    end = max(i for i, line in enumerate(lines) if line.startswith("====="))
    return lines[start + 1:end]


def two_engines(bundled_project):
    bundled_project.makeconftest(textwrap.dedent(ORACLE_CONFTEST))
    bundled_project.makepyfile("def test_q(retrieval_results):\n    pass\n")
    return bundled_project


def test_the_default_summary_is_the_table_misses_and_verdict_within_88_columns(bundled_project):
    p = two_engines(bundled_project)
    result = p.runpytest("--retrieval-report", "--retrieval-report-dir=out", *BOTH)
    lines = summary(result)
    text = "\n".join(lines)
    assert result.ret == 0, text
    assert lines[0].startswith("engine ") and lines[1].startswith("keyword") and "95% CI" in lines[2]
    assert any(line.startswith("keyword missed 44 of 68 at hit@5") for line in lines)
    assert any(line.startswith("oracle missed none of 68") for line in lines)
    for detail in ("differences (paired mean", "keyword: fields=", "judged@k, the share",
                   "coverage: the questions judge"):
        assert detail not in text, detail
    assert "segments at hit@5" in text  # asked for (--retrieval-by): shown without -v
    said = hidden(lines)
    assert said.startswith("more with -v: differences") and "engine configurations" in said
    assert "segments" not in said
    assert "recall by stage" in said and "recall of all each stage held" not in text  # the keyword engine's leg
    assert max(len(line) for line in lines) <= 88, max(lines, key=len)
    first = next(i for i, line in enumerate(lines) if line.startswith("segments at"))
    segments = next(i for i, line in enumerate(lines) if line.startswith("not body-only")) + 1 - first
    # the oracle answers two documents where five are counted: flagged in one line, beside the budget
    assert "oracle under-returned on 68 of 68 questions at k=5 (fewest: 1 of 5)" in lines
    assert len(lines) - segments - 1 <= 16, text
    results_md = (p.path / "out" / "results.md").read_text(encoding="utf-8")  # the file keeps the detail
    assert "Differences between engines" in results_md and "segment" in results_md


def test_verbose_brings_back_the_differences_configurations_and_detail(bundled_project):
    p = two_engines(bundled_project)
    text = "\n".join(summary(p.runpytest("--retrieval-report", "-v", *BOTH)))
    assert "differences (paired mean, 95% CI; * significant after correction):" in text
    assert "keyword: fields=title 4, description 2, filename 3, reads_body=False" in text
    assert "judged@k, the share of each top k the labels judge" in text
    assert "segments at hit@5" in text and "coverage: the questions judge" in text
    assert ("keyword, recall of all each stage held: metadata leg 0.79 (30), final ranking 0.79 (30); the 44 "
            "misses at hit@5 lost: 32% never a candidate, 68% ranked below 5") in text.replace("\n    ", " ")
    assert "oracle, recall of all" not in text  # an engine without stages: nothing said
    assert "more with -v" not in text


def test_a_failing_run_names_the_verdict_first_and_every_failure_with_its_cause_last(bundled_project):
    p = two_engines(bundled_project)
    result = p.runpytest("--retrieval-report", *BOTH, "--retrieval-threshold=keyword:hit@5>=0.9",
                         "--retrieval-threshold=keyword:hit@1>=0.5", "--retrieval-threshold=oracle:mrr>=0.5")
    lines = summary(result)
    assert result.ret == 1
    heading = next(line for line in result.stdout.lines if SEP in line)
    assert " retrieval evaluation: gate FAILED, 2 failures (causes at the end) " in heading
    assert lines[0].startswith("engine ")  # the table right under it, as parse_table reads it
    fails = [i for i, line in enumerate(lines) if line.startswith("FAIL retrieval gate: ")]
    assert [lines[i].split(" (from")[0] for i in fails] == [
        "FAIL retrieval gate: keyword: hit@5 = 0.3529, required >= 0.9",
        "FAIL retrieval gate: keyword: hit@1 = 0.1176, required >= 0.5"]
    assert lines[fails[0] + 1] == "  cause: keyword missed 44 of 68 at hit@5: 30 ranked 6-22, 14 never a candidate"
    assert lines[fails[1] + 1].startswith("  cause: keyword missed 60 of 68 at hit@1: ")
    assert fails[-1] + 2 == len(lines)  # the verdict closes the section: nothing buries it


def test_warnings_fit_the_width_and_beyond_three_are_counted_while_every_note_shows(bundled_project, tmp_path):
    p = two_engines(bundled_project)
    base = tmp_path / "b.json"
    assert p.runpytest(*BOTH, f"--retrieval-save-baseline={base}").ret == 0
    p.path.joinpath("tox.ini").write_text(p.path.joinpath("tox.ini").read_text()
                                          + "\nretrieval_thresholds = keyword:hit@5>=0.8\n")
    rules = [f"--retrieval-max-drop={m}=0.001" for m in ("hit@1", "hit@3", "hit@5", "hit@10", "mrr")]
    args = ("--retrieval-report", *BOTH, f"--retrieval-baseline={base}", *rules, "--retrieval-threshold=oracle:mrr>=0.1")
    lines = summary(p.runpytest(*args))
    warned = [line for line in lines if line.startswith("warning: max-drop rule")]
    assert len(warned) == 3 and max(len(line) for line in lines) <= 88, lines
    assert any(line.startswith("... and ") and line.endswith("more warnings (-v shows them)") for line in lines), lines
    # a gate the command line loosened is said however many warnings there are
    assert any(line.startswith("note: --retrieval-threshold replaced 1 rule of tox.ini") for line in lines), lines
    verbose = " ".join(summary(p.runpytest(*args, "-v")))
    assert verbose.count("warning: max-drop rule") >= 5


def test_a_section_the_run_asked_for_shows_without_verbose(bundled_project):
    p = two_engines(bundled_project)
    lines = summary(p.runpytest("--retrieval-report", "--retrieval-latency", "--retrieval-trials=2", *BOTH[:2]))
    text = "\n".join(lines)
    assert "what each engine's calls cost (latency; HTTP calls, tokens, dollars a query):" in text, text
    assert any(line.startswith("engine ") and "p50 ms" in line for line in lines), text  # its latency
    assert "keyword: 2 trials: " in text and "oracle: 2 trials: " in text, text
    said = hidden(lines)
    assert "cost" not in said and "trials" not in said and "differences" in said, said
    plain = "\n".join(summary(p.runpytest("--retrieval-report", *BOTH[:2])))  # not asked: not shown
    assert "calls cost" not in plain and "2 trials" not in plain

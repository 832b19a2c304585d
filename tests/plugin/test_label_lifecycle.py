"""Labels that follow a changing knowledge base (issue 27 items 2 and 3): ids from the question,
never the file name; import --sync, remove and list; a deleted gold document with a printed way
out that works as printed; an edited gold document listed as stale and left out, not blocking.

A team project in a temp dir: the helpdesk knowledge base, CSV labels, its own engine (a function
adapter in conftest.py) and the keyword engine, driven through pytester and the CLI in a
subprocess, as a team would type it."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys

import pytest

from conftest import REPO
from pytest_retrieval_eval.data.labeled import load_questions_cache

KB = REPO / "examples" / "helpdesk" / "kb"
ROWS = [
    ("My internet tunnel to work keeps dropping at the hotel", "vpn-setup"),
    ("I forgot my login as a contractor", "password-reset"),
    ("Someone took my work computer from the car", "laptop-replacement"),
    ("Where do print jobs wait before I pick them up", "printer-queue"),
    ("A customer visiting tomorrow needs internet", "guest-wifi"),
    ("Who grants access to the team folder", "shared-drives"),
]
CONFTEST = """
    import json
    from pathlib import Path

    from pytest_retrieval_eval.engines import adapters

    DOCS = {json.loads(p.read_text())["doc_id"]: set(json.loads(p.read_text())["content"].lower().split())
            for p in Path("kb").glob("*.json")}

    def ours(query, k):
        '''The team's own search: word overlap with each document.'''
        words = set(query.lower().split())
        return sorted(DOCS, key=lambda d: (-len(words & DOCS[d]), d))[:k]

    def pytest_retrieval_engines(registry, config):
        registry.register("ours", lambda request: adapters.function(ours, name="ours"))
"""
TESTS = """
    import pytest

    @pytest.mark.retrieval
    def test_quality(retrieval_results):
        assert retrieval_results.n > 0
"""


@pytest.fixture
def team(pytester):
    shutil.copytree(KB, pytester.path / "kb")
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(TESTS)
    pytester.makeini("[pytest]\nretrieval_corpus = kb\nretrieval_questions = questions.cache.json\n"
                     "retrieval_engines = ours keyword\n")
    write_csv(pytester.path / "labels.csv", ROWS)
    return pytester


def write_csv(path, rows, header="Question,Doc_IDs"):
    """Header names as a team writes them: matched case-insensitively, with the common aliases."""
    path.write_text(header + "\n" + "".join(f'"{q}",{d}\n' for q, d in rows), encoding="utf-8")


def cli(team, *args: str):
    """``python -m pytest_retrieval_eval ...`` in the project, as typed."""
    done = subprocess.run([sys.executable, "-m", "pytest_retrieval_eval", *args], cwd=team.path,
                          capture_output=True, text=True, timeout=120)
    return done.returncode, done.stdout, done.stderr


def run_as_printed(team, command: str):
    """A command a message suggested, pasted into a shell at the project's root."""
    argv = shlex.split(command)
    assert argv[:3] == ["python", "-m", "pytest_retrieval_eval"], command
    return cli(team, *argv[3:])


def printed_commands(text: str) -> list[str]:
    return re.findall(r"(python -m pytest_retrieval_eval [^\n]*?)(?=\s*$|\)|;)", text, flags=re.M)


def ids(team) -> dict[str, str]:
    return {q.question: q.query_id for q in load_questions_cache(team.path / "questions.cache.json")}


def imported(team, *extra: str, file: str = "labels.csv"):
    code, out, err = cli(team, "label", "import", file, "--corpus", "kb", "--questions", "questions.cache.json", *extra)
    assert code == 0, err
    return out


# --- item 2: labels that can be managed ------------------------------------------------------------

def test_importing_the_same_csv_under_a_second_name_adds_nothing(team):
    assert "added 6, replaced 0, unchanged 0" in imported(team)
    shutil.copy(team.path / "labels.csv", team.path / "labels_v2.csv")
    assert "added 0, replaced 0, unchanged 6" in imported(team, file="labels_v2.csv")
    assert len(ids(team)) == 6 and all(i.startswith("q.") for i in ids(team).values())  # never the file's name
    code, out, _ = cli(team, "check", "--corpus", "kb", "--questions", "questions.cache.json")
    assert code == 0 and "6 of 6 questions checked" in out


def test_a_repeated_question_is_one_question_and_said(team):
    (team.path / "labels.csv").write_text(
        'question,doc_id\n"Who grants access to the team folder",shared-drives\n'
        '"Who grants access to the team folder",shared-drives\n'
        '"A customer visiting tomorrow needs internet",guest-wifi\n'
        '"A customer visiting tomorrow needs internet",password-reset\n', encoding="utf-8")
    out = imported(team)
    assert "added 2," in out
    assert "line 3 repeats the question of line 2: the same judgments, counted once" in out
    assert "line 5 repeats the question of line 4: its judgments merged (password-reset added)" in out
    by_text = {q.question: q for q in load_questions_cache(team.path / "questions.cache.json")}
    assert dict(by_text["A customer visiting tomorrow needs internet"].relevant) == {"guest-wifi": 1, "password-reset": 1}


def test_a_query_id_column_is_used_when_present(team):
    (team.path / "ids.csv").write_text('QID,query,gold\nw1,"A customer visiting tomorrow needs internet",guest-wifi\n')
    assert "added 1" in imported(team, file="ids.csv")
    assert ids(team) == {"A customer visiting tomorrow needs internet": "w1"}


def test_sync_removes_what_the_file_no_longer_holds_and_remove_and_list_work(team):
    imported(team)
    gone = ids(team)[ROWS[2][0]]
    write_csv(team.path / "labels.csv", ROWS[:2] + ROWS[3:])
    out = imported(team)
    assert "unchanged 5" in out and gone in ids(team).values()  # without --sync, nothing is lost
    out = imported(team, "--sync")
    assert "removed 1" in out and f"removed (gone from labels.csv): {gone}" in out
    assert gone not in ids(team).values() and len(ids(team)) == 5
    target = ids(team)[ROWS[0][0]]
    code, out, err = cli(team, "label", "remove", target, "--questions", "questions.cache.json")
    assert code == 0 and f"removed 1: {target}" in out, err
    assert target not in ids(team).values()
    code, _, err = cli(team, "label", "remove", target, "--questions", "questions.cache.json")
    assert code == 2 and f"no question '{target}' in the cache" in err and "label list" in err
    code, out, _ = cli(team, "label", "list", "--corpus", "kb", "--questions", "questions.cache.json")
    assert code == 0 and "4 questions: 4 fresh, 0 stale, 0 unchecked" in out
    assert f"{ids(team)[ROWS[4][0]]}\tfresh\tguest-wifi\t{ROWS[4][0]}" in out


def test_a_missing_doc_column_names_a_flag_that_exists(team):
    write_csv(team.path / "labels.csv", ROWS, header="question,answer_doc")
    code, _, err = cli(team, "label", "import", "labels.csv", "--corpus", "kb", "--questions", "questions.cache.json")
    assert code == 2 and "labels.csv:1: no column 'doc_id' for the doc id" in err
    flag = re.search(r"name it with (--[\w-]+) NAME", err).group(1)
    assert flag == "--doc-column"
    assert "added 6" in imported(team, flag, "answer_doc")  # the flag it names exists and does the job


# --- item 3: staleness that does not block a changing knowledge base --------------------------------

def edit(team, doc_id: str, extra: str) -> None:
    path = team.path / "kb" / f"{doc_id}.json"
    doc = json.loads(path.read_text())
    doc["content"] += extra
    path.write_text(json.dumps(doc))


def test_a_deleted_gold_document_has_a_way_out_that_works_as_printed(team):
    imported(team)
    wifi = ids(team)[ROWS[4][0]]
    (team.path / "kb" / "guest-wifi.json").unlink()
    blocked = team.runpytest("-m", "retrieval", "--retrieval-stale=error")
    assert blocked.ret == pytest.ExitCode.TESTS_FAILED
    blocked.stdout.fnmatch_lines([f"*deleted: guest-wifi (1 question: {wifi})*"])
    code, out, _ = cli(team, "check", "--corpus", "kb", "--questions", "questions.cache.json")
    assert code == 1
    suggested = printed_commands(out)
    assert "python -m pytest_retrieval_eval label stamp --corpus kb --questions questions.cache.json --drop-deleted" \
        in suggested
    code, _, err = cli(team, "label", "stamp", "--corpus", "kb", "--questions", "questions.cache.json")
    assert code == 2 and f"guest-wifi ({wifi})" in err  # who lost it, and the way out, printed
    (offered,) = printed_commands(err)
    code, out, err = run_as_printed(team, offered)
    assert code == 0, err
    assert f"deleted guest-wifi: its judgment dropped from {wifi}" in out
    assert wifi not in ids(team).values() and len(ids(team)) == 5  # its only gold document is gone
    code, out, _ = cli(team, "check", "--corpus", "kb", "--questions", "questions.cache.json")
    assert code == 0 and "5 of 5 questions checked" in out
    runnable = team.runpytest("-m", "retrieval", "--retrieval-stale=error")
    assert runnable.ret == 0, runnable.stdout.str()


def test_an_edited_gold_document_leaves_its_question_out_without_blocking(team):
    imported(team)
    wifi = ids(team)[ROWS[4][0]]
    edit(team, "guest-wifi", " The lobby printer is on the second floor.")
    result = team.runpytest("-m", "retrieval", "--retrieval-report", "-W", "default", "-v")
    assert result.ret == 0, result.stdout.str()
    out = result.stdout.str()
    assert f"  {wifi} '{ROWS[4][0]}': changed: guest-wifi" in out
    assert "questions.cache.json: n 5, 1 stale left out" in out
    assert out.count("n 5, 1 stale left out") == 2  # when the questions load, and under the table
    result.stdout.fnmatch_lines(["ours *5*0", "keyword *5*0"])
    suggested = set(printed_commands(out))
    assert suggested  # the run names where to look
    for command in suggested:  # every command the run suggests works as printed
        code, said, err = run_as_printed(team, command)
        assert code == 0, (command, err)
        assert f"{wifi}\tstale (changed: guest-wifi)" in said
    gated = team.runpytest("-m", "retrieval", "--retrieval-threshold", "stale<=0")
    assert gated.ret == pytest.ExitCode.TESTS_FAILED, gated.stdout.str()
    # named by its text, not the id made from it (issue 27 item 7)
    gated.stdout.fnmatch_lines(["*stale = 1*required <= 0*'A customer visiting tomorrow needs…' (changed: guest-wifi)*"])
    assert wifi not in gated.stdout.str().split("FAIL retrieval gate")[-1]
    assert team.runpytest("-m", "retrieval", "--retrieval-threshold", "stale<=1").ret == 0
    blocked = team.runpytest("-m", "retrieval", "--retrieval-stale=error")
    assert blocked.ret == pytest.ExitCode.TESTS_FAILED
    blocked.stdout.fnmatch_lines(["*questions.cache.json is stale against the corpus kb:*",
                                  f"*changed: guest-wifi (1 question: {wifi})*"])
    warned = team.runpytest("-m", "retrieval", "--retrieval-report", "--retrieval-stale=warn")
    assert warned.ret == 0
    warned.stdout.fnmatch_lines(["ours *6*0"])  # evaluated anyway
    code, out, err = cli(team, "label", "stamp", "--corpus", "kb", "--questions", "questions.cache.json")
    assert code == 0, err
    fresh = team.runpytest("-m", "retrieval", "--retrieval-report", "-v")
    assert fresh.ret == 0 and "stale left out" not in fresh.stdout.str()
    fresh.stdout.fnmatch_lines(["ours *6*0"])


# --- every command said works as printed; output into a closed pipe ---------------------------------

QRELS = [
    {"query_id": "r1", "query": "A customer visiting tomorrow needs internet", "relevant_docs": {"guest-wifi": 2}},
    {"query_id": "r2", "query": "I forgot my login as a contractor", "relevant_docs": ["password-reset"]},
    {"query_id": "r3", "query": "Who grants access to the team folder",
     "relevant_docs": [{"doc_id": "shared-drives", "relevance": 1}]},
]


def write_qrels(path):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(line) + "\n" for line in QRELS), encoding="utf-8")


@pytest.mark.parametrize("qrels", ["qrels.jsonl", "rig/qrels.jsonl"])
def test_check_of_a_qrels_jsonl_suggests_commands_that_work_as_printed(team, qrels):
    write_qrels(team.path / qrels)
    code, out, _ = cli(team, "check", "--corpus", "kb", "--questions", qrels)
    assert code == 1 and "3 of 3 questions unchecked" in out
    suggested = printed_commands(out)
    assert suggested
    for command in suggested:
        code, said, err = run_as_printed(team, command)
        assert code == 0, (command, said, err)
    cache = str((team.path / qrels).with_name("questions.cache.json").relative_to(team.path))
    assert cache in " ".join(suggested)  # the cache it advises, beside the team's file
    code, out, _ = cli(team, "check", "--corpus", "kb", "--questions", cache)
    assert code == 0 and "3 of 3 questions checked" in out
    code, _, err = cli(team, "label", "stamp", "--corpus", "kb", "--questions", qrels)
    assert code == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1
    (offered,) = printed_commands(err)
    code, _, err = run_as_printed(team, offered)
    assert code == 0, (offered, err)


def test_the_session_on_a_qrels_jsonl_suggests_a_command_that_works_as_printed(team):
    write_qrels(team.path / "rig" / "qrels.jsonl")
    result = team.runpytest("-m", "retrieval", "--retrieval-questions=rig/qrels.jsonl", "-W", "default")
    out = result.stdout.str()
    assert "3 of 3 questions unchecked" in out, out
    suggested = printed_commands(out)
    assert suggested
    for command in suggested:
        code, said, err = run_as_printed(team, command)
        assert code == 0, (command, said, err)
    assert len(load_questions_cache(team.path / "rig" / "questions.cache.json")) == 3


@pytest.mark.parametrize("argv, status", [
    (("label", "list", "--corpus", "kb", "--questions", "questions.cache.json"), 141),
    (("check", "--corpus", "kb", "--questions", "questions.cache.json"), 141),
    (("label", "import", "labels.csv", "--corpus", "kb", "--questions", "questions.cache.json"), 141),
    (("--help",), 0),  # argparse says its help and exits 0, pipe or not
], ids=["label-list", "check", "label-import", "help"])
def test_a_command_writing_into_a_closed_pipe_ends_quietly(team, argv, status):
    """``label list | head -1``: the reader is gone before the command writes. No traceback;
    141 (128 + SIGPIPE) as a shell reports any tool the pipe ended."""
    imported(team)
    proc = subprocess.Popen([sys.executable, "-m", "pytest_retrieval_eval", *argv], cwd=team.path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    proc.stdout.close()  # as head does once it has its line
    err = proc.stderr.read()
    assert proc.wait(timeout=120) == status, err
    assert err == "", err


def test_label_list_into_head_prints_its_first_line_and_nothing_else(team):
    imported(team)
    done = subprocess.run("python -m pytest_retrieval_eval label list --corpus kb --questions questions.cache.json "
                          "| head -1", shell=True, cwd=team.path, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONUNBUFFERED": "1", "PATH": f"{os.path.dirname(sys.executable)}:{os.environ['PATH']}"})
    assert done.stdout.count("\n") == 1 and "\tfresh\t" in done.stdout
    assert done.stderr == "", done.stderr

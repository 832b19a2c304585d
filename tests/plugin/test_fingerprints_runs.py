"""Say what changed, in a team's own project (the helpdesk knowledge base, its own engine): a
baseline recorded on one corpus is refused on the corpus with a document edited, one added and
one removed, naming them; forced, the comparison names them too; a baseline saved before the
documents' digests were kept still loads and says the change cannot be itemised; and
``--retrieval-compare`` against main's history record says the same, as ``history`` does under
the record that changed (from the corpus maps the history keeps once each; with one deleted,
the change cannot be itemised)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from conftest import REPO

KB = REPO / "examples" / "helpdesk" / "kb"
ROWS = [("My internet tunnel to work keeps dropping at the hotel", "vpn-setup"),
        ("I forgot my login as a contractor", "password-reset"),
        ("Where do print jobs wait before I pick them up", "printer-queue"),
        ("A customer visiting tomorrow needs internet", "guest-wifi")]
ENGINE = """
    import json
    from pathlib import Path

    GOLD = dict(json.loads(Path("gold.json").read_text()))

    class Ours:
        name = "ours"

        def retrieve(self, query, k):
            return [GOLD[query]]

    def pytest_retrieval_engines(registry, config):
        registry.register("ours", lambda request: Ours())
"""
CHANGED = "(documents: 1 added (expense-claims); 1 removed (software-requests); 1 changed (mfa-enrolment))"


def sh(cwd, *args: str) -> str:
    done = subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout.strip()


@pytest.fixture
def project(pytester):
    import shutil

    shutil.copytree(KB, pytester.path / "kb")
    (pytester.path / "labels.csv").write_text("question,doc_id\n" + "".join(f"{q},{d}\n" for q, d in ROWS))
    (pytester.path / "gold.json").write_text(json.dumps(ROWS))
    pytester.makeconftest(textwrap.dedent(ENGINE))
    pytester.makeini("[pytest]\nretrieval_corpus = kb\nretrieval_questions = questions.cache.json\n"
                     "retrieval_engines = ours\n")
    pytester.makepyfile("import pytest\n\n@pytest.mark.retrieval\ndef test_x(retrieval_results):\n    pass\n")
    done = subprocess.run([sys.executable, "-m", "pytest_retrieval_eval", "label", "import", "labels.csv", "--corpus",
                           "kb", "--questions", "questions.cache.json"], cwd=pytester.path, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return pytester


def edit_corpus(root) -> None:
    """None of the labeled documents: an edit, an addition and a removal the questions do not see."""
    kb = root / "kb"
    mfa = json.loads((kb / "mfa-enrolment.json").read_text())
    (kb / "mfa-enrolment.json").write_text(json.dumps({**mfa, "content": mfa["content"] + " Hardware keys work too."}))
    (kb / "software-requests.json").unlink()
    (kb / "expense-claims.json").write_text(json.dumps({"doc_id": "expense-claims", "title": "Expense claims",
                                                        "content": "Claims are filed in the finance portal."}))


def corpus_fingerprints(*paths) -> list[str]:
    return [json.loads(p.read_text())["evaluations"][0]["corpus"]["fingerprint"][:12] for p in paths]


def test_a_baseline_on_an_edited_corpus_is_refused_naming_the_documents_and_forced_names_them_too(project):
    assert project.runpytest("-m", "retrieval", "--retrieval-save-baseline=base.json").ret == 0
    recorded = json.loads((project.path / "base.json").read_text())["fingerprints"]
    [(_, corpus)] = recorded["corpora"].items()
    assert corpus["name"] == "kb" and len(corpus["documents"]) == 9
    assert all(len(digest) == 12 for digest in corpus["documents"].values())
    edit_corpus(project.path)
    refused = project.runpytest("-m", "retrieval", "--retrieval-baseline=base.json", "--retrieval-report-dir=out")
    out = refused.stdout.str()
    assert refused.ret == 1, out
    before, after = corpus_fingerprints(project.path / "base.json", project.path / "out" / "results.json")
    said = f"ours: corpus fingerprint {before} -> {after} {CHANGED}"
    assert f"FAIL retrieval gate: baseline refused: {said}; re-save the baseline" in out, out
    forced = project.runpytest("-m", "retrieval", "--retrieval-baseline=base.json", "--retrieval-baseline-force")
    out = forced.stdout.str()
    assert forced.ret == 0, out
    assert f"compared although {said} (--retrieval-baseline-force)" in out, out


def test_a_baseline_saved_before_document_digests_were_kept_still_loads_and_says_so(project):
    assert project.runpytest("-m", "retrieval", "--retrieval-save-baseline=base.json").ret == 0
    doc = json.loads((project.path / "base.json").read_text())
    del doc["fingerprints"]
    (project.path / "base.json").write_text(json.dumps(doc))
    edit_corpus(project.path)
    result = project.runpytest("-m", "retrieval", "--retrieval-baseline=base.json")
    out = result.stdout.str()
    assert result.ret == 1, out
    assert "(the change cannot be itemised: the baseline records no document digests); re-save the baseline" in out, out
    assert "baseline unusable" not in out


def compared_with_main(project, edit, message: str):
    """main's history record made on a git repository of the project, then a feature branch whose
    commit ``edit`` changes, run with ``--retrieval-compare=main``."""
    for args in (("init", "-q", "-b", "main"), ("config", "user.email", "t@example.com"), ("config", "user.name", "t")):
        sh(project.path, "git", *args)
    (project.path / ".gitignore").write_text("retrieval-history/\n")
    sh(project.path, "git", "add", "-A")
    sh(project.path, "git", "commit", "-qm", "one")
    assert project.runpytest("-m", "retrieval", "--retrieval-history=retrieval-history").ret == 0  # main's record
    sh(project.path, "git", "checkout", "-qb", "feature")
    edit(project.path)
    sh(project.path, "git", "add", "-A")
    sh(project.path, "git", "commit", "-qm", message)
    return project.runpytest("-m", "retrieval", "--retrieval-history=retrieval-history", "--retrieval-compare=main")


def test_compare_with_mains_record_on_another_corpus_names_the_documents(project):
    result = compared_with_main(project, edit_corpus, "the knowledge base moves on")
    out = result.stdout.str()
    assert result.ret == 1, out
    assert "baseline refused: ours: corpus fingerprint " in out and f"{CHANGED}; re-save the baseline" in out, out
    listed = subprocess.run([sys.executable, "-m", "pytest_retrieval_eval", "history"], cwd=project.path,
                            capture_output=True, text=True, timeout=120)
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    assert len(lines) == 3 and lines[2].startswith("  changed since the record before: corpus "), lines
    assert lines[2].endswith(f" {CHANGED}") and not lines[1].startswith(" "), lines
    folder = project.path / "retrieval-history"
    records = sorted(folder.glob("*.json"))
    kept = sorted((folder / "corpora").glob("*.json"))  # each corpus's digests once, beside the records
    assert [p.stem for p in kept] == sorted(next(iter(json.loads(r.read_text())["corpora"])) for r in records)
    assert all(json.loads(r.read_text())["results"]["fingerprints"]["corpora"] == {} for r in records)
    mains = next(iter(json.loads(records[0].read_text())["corpora"]))
    (folder / "corpora" / f"{mains}.json").unlink()  # deleted by hand: the records still read
    listed = subprocess.run([sys.executable, "-m", "pytest_retrieval_eval", "history"], cwd=project.path,
                            capture_output=True, text=True, timeout=120)
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    assert len(lines) == 3 and lines[2].endswith(
        "(the change cannot be itemised: the baseline records no document digests)"), lines


def edit_labeled_document(root) -> None:
    """An edit of a labeled document: its question goes stale and the run leaves it out."""
    path = root / "kb" / "printer-queue.json"
    doc = json.loads(path.read_text())
    path.write_text(json.dumps({**doc, "content": doc["content"] + " Jobs now wait a day."}))


#: how messages name the printer-queue question (its id was made from its text)
PRINTER = "'Where do print jobs wait before I pick…' (changed: printer-queue)"


def stale_id(project) -> str:
    return next(q["id"] for q in json.loads((project.path / "questions.cache.json").read_text())["queries"]
                if "printer-queue" in q["relevant"])


def test_a_question_left_out_as_stale_is_said_stale_not_removed_and_compared_over_the_rest(project):
    assert project.runpytest("-m", "retrieval", "--retrieval-save-baseline=base.json").ret == 0
    edit_labeled_document(project.path)
    refused = project.runpytest("-m", "retrieval", "--retrieval-baseline=base.json", "--retrieval-report-dir=out")
    out = refused.stdout.str()
    assert refused.ret == 1, out
    q = stale_id(project)
    assert json.loads((project.path / "out" / "results.json").read_text())["evaluations"][0]["labeled"][
        "stale_left_out"] == {q: ["changed: printer-queue"]}
    # refused on the corpus alone: the labels did not change, the question was left out as stale
    assert "baseline refused: ours: corpus fingerprint " in out and "(documents: 1 changed (printer-queue))" in out, out
    assert " removed (" not in out and "labeled set questions.cache.json fingerprint" not in out, out
    forced = project.runpytest("-m", "retrieval", "--retrieval-baseline=base.json", "--retrieval-baseline-force")
    out = forced.stdout.str()
    assert forced.ret == 0, out
    assert ("compared over the 3 questions both hold; 1 only in the baseline and 0 only in this run left out "
            f"(1 left out as stale in this run (their document changed: {PRINTER}))") in out, out


def test_history_says_a_question_left_out_as_stale_not_removed(project):
    assert project.runpytest("-m", "retrieval", "--retrieval-history=retrieval-history").ret == 0
    edit_labeled_document(project.path)
    assert project.runpytest("-m", "retrieval", "--retrieval-history=retrieval-history").ret == 0
    listed = subprocess.run([sys.executable, "-m", "pytest_retrieval_eval", "history"], cwd=project.path,
                            capture_output=True, text=True, timeout=120)
    assert listed.returncode == 0, listed.stderr
    said = listed.stdout
    assert (f"labeled set questions.cache.json (1 left out as stale in this run (their document changed: "
            f"{PRINTER}))") in said, said
    assert " removed (" not in said, said


def test_compare_with_mains_record_uses_it_though_a_question_is_left_out_as_stale(project):
    result = compared_with_main(project, edit_labeled_document, "the printer article moves on")
    out = result.stdout.str()
    assert result.ret == 1, out
    assert "no history record of this job" not in out, out
    assert "baseline refused: ours: corpus fingerprint " in out and "(documents: 1 changed (printer-queue))" in out, out
    forced = project.runpytest("-m", "retrieval", "--retrieval-history=retrieval-history", "--retrieval-compare=main",
                               "--retrieval-baseline-force")
    out = forced.stdout.str()
    assert forced.ret == 0, out
    assert f"(1 left out as stale in this run (their document changed: {PRINTER}))" in out, out

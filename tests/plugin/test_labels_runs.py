"""Bringing your own labels: the shipped schema, importers (CSV, JSONL, rig-style qrels.jsonl,
BEIR), fingerprints stamped without an LLM, unchecked entries said out loud, unknown ids with a
suggestion, and the filters that keep generated questions worth keeping."""

from __future__ import annotations

import importlib.resources
import json
import shutil
from pathlib import Path

import pytest

from conftest import QUESTIONS, REPO
from pytest_retrieval_eval.cli import main as cli
from pytest_retrieval_eval.data.labeled import load_questions_cache

EXAMPLE_KB = REPO / "examples" / "helpdesk" / "kb"
TEN = [
    ("My internet tunnel to work keeps dropping at the hotel", "vpn-setup"),
    ("I forgot my login as a contractor", "password-reset"),
    ("Someone took my work computer from the car", "laptop-replacement"),
    ("Where do print jobs wait before I pick them up", "printer-queue"),
    ("New phone, what about my sign-in codes app", "mfa-enrolment"),
    ("How to get a paid design tool", "software-requests"),
    ("Who grants access to the team folder", "shared-drives"),
    ("A customer visiting tomorrow needs internet", "guest-wifi"),
    ("Restore a file I deleted last month", "shared-drives"),
    ("Colour printing is greyed out", "printer-queue"),
]
ORACLE = """
    import json
    from pathlib import Path

    class Oracle:
        '''Answers from the cache the team imported: a stand-in for a perfect search.'''
        name = "oracle"
        def __init__(self, labeled):
            self.gold = {q.question: sorted(q.relevant, key=lambda d: -q.relevant[d]) for q in labeled}
        def retrieve(self, query, k):
            return self.gold[query][:k]

    def pytest_retrieval_engines(registry, config):
        registry.register("oracle", lambda request: Oracle(request.getfixturevalue("labeled_queries")))
"""
TESTS = """
    import pytest

    @pytest.mark.retrieval
    def test_quality(retrieval_results):
        assert retrieval_results.n > 0
"""


@pytest.fixture
def team(pytester):
    """A team project: the helpdesk knowledge base, an engine, thresholds, no labels yet."""
    shutil.copytree(EXAMPLE_KB, pytester.path / "kb")
    pytester.makeconftest(ORACLE)
    pytester.makepyfile(TESTS)
    pytester.makeini("[pytest]\nretrieval_corpus = kb\nretrieval_questions = questions.cache.json\n"
                     "retrieval_thresholds =\n    oracle:hit@1>=0.99\n    keyword:hit@10>=0.5\n"
                     "retrieval_engines = oracle keyword\n")
    return pytester


def write_csv(path: Path, rows) -> Path:
    path.write_text("question,doc_id\n" + "".join(f'"{q}",{d}\n' for q, d in rows), encoding="utf-8")
    return path


def test_a_csv_imported_then_gated_and_an_edit_of_a_gold_document_is_caught(team, capsys):
    write_csv(team.path / "labels.csv", TEN)
    assert cli(["label", "import", "labels.csv", "--corpus", "kb", "--questions", "questions.cache.json"]) == 0
    assert "imported 10 from labels.csv: added 10, replaced 0, unchanged 0" in capsys.readouterr().out
    cache = load_questions_cache(team.path / "questions.cache.json")
    wifi = next(q.query_id for q in cache if q.relevant == {"guest-wifi": 1})
    assert len(cache) == 10 and all(q.source["judged_sha256"] for q in cache)
    result = team.runpytest("-m", "retrieval", "--retrieval-report")
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(["retrieval gate: passed"])
    doc = json.loads((team.path / "kb" / "guest-wifi.json").read_text())
    doc["content"] += " Vouchers now last two days."
    (team.path / "kb" / "guest-wifi.json").write_text(json.dumps(doc))
    stale = team.runpytest("-m", "retrieval", "--retrieval-stale=error")
    assert stale.ret == pytest.ExitCode.TESTS_FAILED
    stale.stdout.fnmatch_lines([f"*changed: guest-wifi (1 question: {wifi})*",
                                "*label stamp --corpus kb --questions questions.cache.json*"])


def test_importing_again_merges_replaces_and_never_loses_entries(team, capsys):
    write_csv(team.path / "a.csv", TEN[:6])
    assert cli(["label", "import", "a.csv", "--corpus", "kb", "--questions", "q.json"]) == 0
    write_csv(team.path / "a.csv", [TEN[0], ("How do I get a paid design tool installed", "software-requests"), *TEN[6:]])
    capsys.readouterr()
    assert cli(["label", "import", "a.csv", "--corpus", "kb", "--questions", "q.json"]) == 0
    assert "added 5, replaced 0, unchanged 1" in capsys.readouterr().out  # an edited question is a new one
    assert len(load_questions_cache(team.path / "q.json")) == 11  # nothing of the first import lost
    (team.path / "ids.csv").write_text("id,question,doc_id\nt1,wifi for visitors,guest-wifi\n")
    assert cli(["label", "import", "ids.csv", "--corpus", "kb", "--questions", "q.json", "--id-column", "id"]) == 0
    (team.path / "ids.csv").write_text("id,question,doc_id\nt1,wifi for our visitors,guest-wifi\n")
    capsys.readouterr()
    assert cli(["label", "import", "ids.csv", "--corpus", "kb", "--questions", "q.json", "--id-column", "id"]) == 0
    assert "added 0, replaced 1, unchanged 0" in capsys.readouterr().out
    assert load_questions_cache(team.path / "q.json").by_id()["t1"].question == "wifi for our visitors"


def test_an_unknown_id_stops_the_import_with_a_suggestion_and_writes_nothing(team, capsys):
    write_csv(team.path / "labels.csv", TEN[:3] + [("Is the VPN on TCP", "vpn-stup")])
    before = b"untouched"
    (team.path / "q.json").write_bytes(before)
    assert cli(["label", "import", "labels.csv", "--corpus", "kb", "--questions", "q.json"]) == 2
    err = capsys.readouterr().err
    assert "labels.csv:5: field 'doc_id': query 'q." in err and "unknown document id 'vpn-stup' (did you mean 'vpn-setup'?)" in err
    assert (team.path / "q.json").read_bytes() == before


def test_a_rig_style_qrels_jsonl_works_directly_and_through_import_with_its_grades(team, tmp_path):
    pytrec_eval = pytest.importorskip("pytrec_eval")  # a failure under CI
    lines = [
        {"query_id": "q1", "query": "wifi for visitors", "relevant_docs": {"guest-wifi": 2, "vpn-setup": 1},
         "reference_answer": "Reception prints a voucher."},
        {"query_id": "q2", "query": "lost laptop", "relevant_docs": [{"doc_id": "laptop-replacement", "relevance": 3},
                                                                     {"doc_id": "shared-drives", "relevance": 1}]},
        {"query_id": "q3", "query": "print colour", "relevant_docs": ["printer-queue"]},
    ]
    (team.path / "qrels.jsonl").write_text("\n".join(json.dumps(l) for l in lines) + "\n")
    direct = team.runpytest("-m", "retrieval", "--retrieval-questions=qrels.jsonl", "--retrieval-engine", "keyword",
                            f"--retrieval-report-dir={tmp_path / 'direct'}", "--retrieval-measures", "ndcg@10,hit@5",
                            "-W", "ignore::UserWarning")
    assert direct.ret == pytest.ExitCode.TESTS_FAILED  # keyword:hit@10>=0.5 may fail; the numbers are what matter
    assert cli(["label", "import", str(team.path / "qrels.jsonl"), "--corpus", str(team.path / "kb"),
                "--questions", str(team.path / "imported.json")]) == 0
    imported = load_questions_cache(team.path / "imported.json")
    assert imported.by_id()["q2"].relevant == {"laptop-replacement": 3, "shared-drives": 1}
    assert imported.by_id()["q1"].source["reference_answer"] == "Reception prints a voucher."
    via = team.runpytest("-m", "retrieval", "--retrieval-questions=imported.json", "--retrieval-engine", "keyword",
                         f"--retrieval-report-dir={tmp_path / 'via'}", "--retrieval-measures", "ndcg@10,hit@5")
    ours = {}
    for name in ("direct", "via"):
        results = json.loads((tmp_path / name / "results.json").read_text())
        ours[name] = {q["id"]: q["values"]["ndcg@10"] for q in results["evaluations"][0]["queries"]}
    assert ours["direct"] == ours["via"]
    with open(tmp_path / "direct" / "qrels.txt") as fh:
        qrels = pytrec_eval.parse_qrel(fh)
    assert qrels["q2"] == {"laptop-replacement": 3, "shared-drives": 1}
    with open(tmp_path / "direct" / "runs" / "keyword.trec") as fh:
        run = pytrec_eval.parse_run(fh)
    run = {q: run.get(q, {}) for q in qrels}
    theirs = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10"}).evaluate(run)
    for q in qrels:
        assert ours["direct"][q] == pytest.approx(theirs[q]["ndcg_cut_10"], abs=1e-9)


def test_a_graded_labels_csv_works_directly_and_through_import_alike(team, tmp_path):
    labels = team.path / "labels.csv"
    labels.write_text("question,doc_id,grade\nwifi for visitors,guest-wifi,2\nwifi for visitors,vpn-setup,1\n"
                      "lost laptop,laptop-replacement,3\nlost laptop,shared-drives,0\n", encoding="utf-8")
    assert cli(["label", "import", str(labels), "--corpus", str(team.path / "kb"),
                "--questions", str(team.path / "imported.json")]) == 0
    qrels = {}
    for name, questions in (("direct", "labels.csv"), ("via", "imported.json")):
        team.runpytest("-m", "retrieval", f"--retrieval-questions={questions}", "--retrieval-engine", "keyword",
                       f"--retrieval-report-dir={tmp_path / name}", "-W", "ignore::UserWarning")
        qrels[name] = sorted((tmp_path / name / "qrels.txt").read_text().splitlines())
    assert qrels["direct"] == qrels["via"] and any(line.endswith(" 3") for line in qrels["direct"])
    labels.write_text("question,doc_id,grade\nwifi for visitors,guest-wifi,1.5\n", encoding="utf-8")
    refused = team.runpytest("-m", "retrieval", "--retrieval-questions=labels.csv", "--retrieval-engine", "keyword")
    assert refused.ret != pytest.ExitCode.OK
    assert f"{labels}:2: field 'grade': relevance grade must be an integer, got '1.5'" in refused.stdout.str() + \
        refused.stderr.str()


def test_a_hand_written_cache_without_fingerprints_is_unchecked_until_stamped(team, capsys):
    entries = [{"id": f"h{i}", "question": q, "relevant": {d: 1}} for i, (q, d) in enumerate(TEN, start=1)]
    cache = {"format": "pytest-retrieval-eval/questions", "version": 1, "queries": entries}
    (team.path / "questions.cache.json").write_text(json.dumps(cache, indent=2))
    refused = team.runpytest("-m", "retrieval", "--retrieval-stale=error")  # all unchecked
    assert refused.ret == pytest.ExitCode.TESTS_FAILED
    refused.stdout.fnmatch_lines(["*10 of 10 questions unchecked*label stamp --corpus kb --questions questions.cache.json*"])
    warned = team.runpytest("-m", "retrieval", "--retrieval-stale=warn")
    assert warned.ret == 0
    warned.stdout.fnmatch_lines(["*UncheckedQuestionsWarning*10 of 10 questions unchecked*"])
    assert cli(["check", "--corpus", str(team.path / "kb"), "--questions", str(team.path / "questions.cache.json")]) == 1
    assert "10 of 10 questions unchecked" in capsys.readouterr().out
    assert cli(["label", "stamp", "--corpus", str(team.path / "kb"),
                "--questions", str(team.path / "questions.cache.json")]) == 0
    assert team.runpytest("-m", "retrieval").ret == 0
    doc = json.loads((team.path / "kb" / "vpn-setup.json").read_text())
    doc["content"] = doc["content"].replace("WireGuard", "OpenVPN")
    (team.path / "kb" / "vpn-setup.json").write_text(json.dumps(doc))
    caught = team.runpytest("-m", "retrieval", "--retrieval-stale=error")
    assert caught.ret == pytest.ExitCode.TESTS_FAILED
    caught.stdout.fnmatch_lines(["*changed: vpn-setup (1 question: h1)*"])


# --- the schema ----------------------------------------------------------------------------------

def schema() -> dict:
    text = importlib.resources.files("pytest_retrieval_eval.data").joinpath("questions.schema.json").read_text()
    return json.loads(text)


def test_every_cache_the_plugin_writes_or_ships_meets_the_schema(team):
    jsonschema = pytest.importorskip("jsonschema")  # a failure under CI
    write_csv(team.path / "labels.csv", TEN)
    assert cli(["label", "import", "labels.csv", "--corpus", "kb", "--questions", "imported.json"]) == 0
    for path in (QUESTIONS, REPO / "examples" / "helpdesk" / "labels.json", team.path / "imported.json"):
        jsonschema.validate(json.loads(Path(path).read_text()), schema())

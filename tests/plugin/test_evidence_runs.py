"""Evidence-level measures in a team's project: labels with quotes imported from a CSV, an engine
that returns passages (some of the right document, but not the one with the answer), another
that returns ids only; the run shows each measure beside its evidence-level twin, counts the
wrong passages as a miss cause, gates a twin, and ``report results.json`` prints the same."""

from __future__ import annotations

import json

from conftest import write_docs
from pytest_retrieval_eval.cli import main as cli

#: six documents of two passages each: the answer is in the second
DOCS = {f"doc{i}": (f"General notes number {i} about the service and its usual opening.",
                    f"The special fact {i} is that the fee for item{i} is {i * 7} euros per month.") for i in range(6)}
#: the questions whose passage comes back without its answer: the right document, the wrong passage
WRONG = ("doc1", "doc4")

CONFTEST = f"""
from pytest_retrieval_eval import Passage, adapters

DOCS = {DOCS!r}
WRONG = {WRONG!r}

def passages(query, k):
    doc = next(d for d in DOCS if d.replace("doc", "item") in query)
    other = next(d for d in DOCS if d != doc)
    mine = [Passage(doc, DOCS[doc][0])] + ([] if doc in WRONG else [Passage(doc, DOCS[doc][1])])
    return [mine[0], Passage(other, DOCS[other][1]), *mine[1:]]

def ids(query, k):
    return [d for d in DOCS if d.replace("doc", "item") in query]

def pytest_retrieval_engines(registry, config):
    registry.register("passages", lambda request: adapters.function(passages, name="passages"))
    registry.register("ids", lambda request: adapters.function(ids, name="ids"))
"""


def _project(make_project, tmp_path, capsys):
    kb = write_docs(tmp_path / "kb", [{"doc_id": d, "title": d, "content": "\n\n".join(p)} for d, p in DOCS.items()])
    labels = tmp_path / "labels.csv"
    labels.write_text("question,doc_id,evidence\n" + "".join(
        f"what is the monthly fee for item{i},doc{i},the fee for item{i} is {i * 7} euros\n" for i in range(6)))
    p = make_project(corpus=kb, questions=None, engines="passages ids", conftest=CONFTEST)
    cache = p.path / "questions.cache.json"
    assert cli(["label", "import", str(labels), "--corpus", str(kb), "--questions", str(cache)]) == 0
    capsys.readouterr()
    p.makeini(f"[pytest]\nretrieval_corpus = {kb}\nretrieval_questions = {cache}\nretrieval_engines = passages ids\n")
    return p


def test_the_right_document_with_the_wrong_passage_is_a_hit_for_documents_and_a_miss_for_evidence(
        make_project, tmp_path, capsys):
    p = _project(make_project, tmp_path, capsys)
    result = p.runpytest("-m", "retrieval", "--retrieval-report", "--retrieval-report-dir=out",
                         "--retrieval-html=out/page.html", "--retrieval-threshold=passages:hit@5+evidence>=0.9")
    text = result.stdout.str()
    assert result.ret == 1, text
    saved = json.loads((p.path / "out" / "results.json").read_text())
    [run] = [e for e in saved["evaluations"] if e["engine"] == "passages"]
    by_id = {q["question"]: q for q in run["queries"]}
    wrong = {q["id"] for q in run["queries"] if next(iter(q["relevant"])) in WRONG}
    assert len(wrong) == 2
    for q in run["queries"]:  # the wrong ones: their document at rank 1, no passage with the evidence
        assert q["first_passages"] == {next(iter(q["relevant"])): 1}
        assert q["passage_ranks"] == ({} if q["id"] in wrong else {next(iter(q["relevant"])): 3})
    assert len(by_id) == 6
    assert "passages with the evidence" in text
    assert "passages missed 2 of 6 at hit@5+evidence: 2 right document, wrong passage" in text
    assert "passages missed none of 6 at hit@5" in text.replace("at hit@5+evidence", "")
    assert text.count("evidence level unavailable for ids: it returns document ids, not") == 1
    rows = [line.split() for line in text.splitlines() if line.startswith("passages ")]
    assert rows[0][2:8] == ["1.000"] * 6  # hit@1..20 and mrr on documents: every question a hit at rank 1
    assert rows[1][:4] == ["passages", "with", "the", "evidence"]
    assert rows[2][2:8] == ["0.000", "0.667", "0.667", "0.667", "0.667", "0.222"]  # on passages: 4 of 6, at rank 3
    assert "FAIL retrieval gate: passages: hit@5+evidence = 0.6667, required >= 0.9" in text
    md, page = (p.path / "out" / "results.md").read_text(), (p.path / "out" / "page.html").read_text()
    for surface in (md, page):  # every report: the twins beside the measures, the wrong passages counted
        assert "hit@5+evidence" in surface and "2 right document, wrong passage" in surface
    # report results.json prints what the run printed: the twins, the causes, the unavailable line
    assert cli(["report", str(p.path / "out" / "results.json")]) == 1
    printed = capsys.readouterr().out
    for line in ("passages missed 2 of 6 at hit@5+evidence: 2 right document, wrong passage",
                 "evidence level unavailable for ids: it returns document ids, not"):
        assert line in printed


#: one passage per document, as a PDF extractor leaves it (decomposed accents), and one of the same
#: document about something else, using the quote's words here and there
EXTRACTED = """
import unicodedata

from pytest_retrieval_eval import Passage, adapters

DOCS = {"cafe": "À la cafétéria, la crème brûlée coûte 5 euros le midi.",
        "velo": "Le garage à vélos ouvre à 7 heures; le badge coûte 12 euros par an."}
OFF = {"cafe": "La crème du lait de la cafétéria brûlée hier: elle coûte cher, 5 fois rien, en euros.",
       "velo": "Le garage ferme; à vélos on ouvre la porte à 7 heures, un badge de plus coûte 12 euros par an."}

def doc_of(query):
    return "cafe" if "dessert" in query else "velo"

def pytest_retrieval_engines(registry, config):
    registry.register("extracted", lambda request: adapters.function(
        lambda q, k: [Passage(doc_of(q), unicodedata.normalize("NFD", DOCS[doc_of(q)]))], name="extracted"))
    registry.register("offtopic", lambda request: adapters.function(
        lambda q, k: [Passage(doc_of(q), OFF[doc_of(q)])], name="offtopic"))
"""


def test_a_decomposed_passage_carries_its_quote_and_a_passage_about_something_else_does_not(make_project, tmp_path,
                                                                                            capsys):
    kb = write_docs(tmp_path / "kb", [{"doc_id": "cafe", "title": "Cafétéria",
                                       "content": "À la cafétéria, la crème brûlée coûte 5 euros le midi."},
                                      {"doc_id": "velo", "title": "Vélos",
                                       "content": "Le garage à vélos ouvre à 7 heures; le badge coûte 12 euros par an."}])
    labels = tmp_path / "labels.csv"
    labels.write_text("question,doc_id,evidence\ncombien coûte le dessert,cafe,la crème brûlée coûte 5 euros\n"
                      "quand ouvre le garage,velo,le garage à vélos ouvre à 7 heures\n", encoding="utf-8")
    p = make_project(corpus=kb, questions=None, engines="extracted offtopic", conftest=EXTRACTED)
    cache = p.path / "questions.cache.json"
    assert cli(["label", "import", str(labels), "--corpus", str(kb), "--questions", str(cache)]) == 0
    capsys.readouterr()
    p.makeini(f"[pytest]\nretrieval_corpus = {kb}\nretrieval_questions = {cache}\n"
              "retrieval_engines = extracted offtopic\n")
    result = p.runpytest("-m", "retrieval", "--retrieval-report")
    text = result.stdout.str()
    assert result.ret == 0, text
    twins = text[text.index("passages with the evidence"):].splitlines()[1:5]  # each engine's row and its CI
    # the engine, its letter where a difference can be significant (not on 2 questions), then the values
    rows = {line.split()[0]: [x for x in line.split()[1:] if x[0].isdigit()] for line in twins
            if line.startswith(("extracted ", "offtopic "))}
    assert rows["extracted"][:6] == ["1.000"] * 6 and rows["offtopic"][:6] == ["0.000"] * 6, text
    assert "offtopic missed 2 of 2 at hit@5+evidence: 2 right document, wrong passage" in text
    assert "extracted missed none of 2 at hit@5+evidence" in text


def _strict(text: str):
    """JSON as Node's JSON.parse and a workflow's fromJSON read it: no NaN, no Infinity."""
    def refuse(constant):
        raise ValueError(f"{constant} is not JSON")
    return json.loads(text, parse_constant=refuse)


def test_an_identical_rerun_against_its_own_baseline_compares_only_the_measures_with_a_value(
        make_project, tmp_path, capsys):
    p = _project(make_project, tmp_path, capsys)
    first = p.runpytest("-m", "retrieval", "--retrieval-save-baseline=base.json", "--retrieval-report-dir=out")
    assert first.ret == 0, first.stdout.str()
    result = p.runpytest("-m", "retrieval", "--retrieval-baseline=base.json", "--retrieval-noise-aware",
                         "--retrieval-report", "--retrieval-report-dir=again", "--retrieval-html=again/page.html")
    text = result.stdout.str()
    assert result.ret == 0, text
    # ids has no +evidence value on either side: its 6 twins are no comparison; 6 + 12 compared, not 24
    assert "against the baseline (p corrected: Holm-Bonferroni over 18 comparisons):\n  no measure moved" in text
    assert "nan" not in text.split() and "nan ->" not in text
    evidence_table = text[text.index("passages with the evidence"):text.index("handed to a generator")]
    assert "ids" not in evidence_table  # no row of no values: the line under it says why
    assert "evidence level unavailable for ids: it returns document ids, not" in text
    for name in ("base.json", "out/results.json", "again/results.json"):  # strict JSON, null for no value
        saved = _strict((p.path / name).read_text())
        ids = next(e for e in saved["evaluations"] if e["engine"] == "ids")
        assert ids["summary"]["hit@5+evidence"] == {"mean": None, "ci95": None}
    saved = _strict((p.path / "again" / "results.json").read_text())
    assert len(saved["analysis"]["baseline"]["diffs"]) == 18
    md = (p.path / "again" / "results.md").read_text()
    ids_row = next(line for line in md.splitlines() if line.startswith("| ids"))
    assert ids_row.count("| — |") == 6 and "nan" not in md.split()  # the twins ids has no value of
    assert "— no value: ids (document ids returned, no passages)." in md
    page = (p.path / "again" / "page.html").read_text()
    assert ">nan<" not in page and "— no value: ids" in page
    capsys.readouterr()
    assert cli(["report", "comment", str(p.path / "again" / "results.json")]) == 0
    comment = capsys.readouterr().out
    assert "Against the baseline: no measure moved (18 compared)" in comment and "nan" not in comment.split()
    # report results.json prints what the run printed
    assert cli(["report", str(p.path / "again" / "results.json")]) == 0
    printed = capsys.readouterr().out
    assert "against the baseline (p corrected: Holm-Bonferroni over 18 comparisons):\n  no measure moved" in printed


def test_a_column_no_engine_has_a_value_of_is_left_out_said_once_and_a_rule_on_it_checks_nothing(
        make_project, tmp_path, capsys):
    p = _project(make_project, tmp_path, capsys)
    result = p.runpytest("-m", "retrieval", "--retrieval-engine=ids", "--retrieval-measures=hit@1,hit@5,hit@5+evidence",
                         "--retrieval-report", "--retrieval-report-dir=out", "--retrieval-html=out/page.html",
                         "--retrieval-threshold=hit@5+evidence>=0.5", "--junitxml=junit.xml")
    text = result.stdout.str()
    assert result.ret == 1, text
    said = "no value in any engine: hit@5+evidence (document ids returned, no passages)"
    assert text.count(said) == 1 and "passages with the evidence" not in text and "nan" not in text.split()
    assert ("FAIL retrieval gate: ids: hit@5+evidence has no value, so the rule hit@5+evidence>=0.5 checked nothing "
            "(from --retrieval-threshold; n=6; no evidence-level value:") in text
    md = (p.path / "out" / "results.md").read_text()
    header = next(line for line in md.splitlines() if line.startswith("| engine"))
    assert "hit@5+evidence" not in header and md.count(said[0].upper() + said[1:]) == 1
    assert said[0].upper() + said[1:] in (p.path / "out" / "page.html").read_text()
    capsys.readouterr()
    assert cli(["report", "comment", str(p.path / "out" / "results.json")]) == 1
    comment = capsys.readouterr().out
    scores = comment[comment.index("<summary>Scores"):]
    assert "| hit@5+evidence" not in scores and scores.count(said[0].upper() + said[1:]) == 1
    _strict((p.path / "out" / "results.json").read_text())
    xml = (p.path / "junit.xml").read_text()  # the headline figures: a measure without a value has no property
    assert 'name="retrieval.ids.hit@5" value="1.000000"' in xml and "retrieval.ids.hit@5+evidence" not in xml


#: passages for item0..item2, the document ids alone for the others
MIXED = """

def mixed(query, k):
    return passages(query, k) if any(f"item{i}" in query for i in range(3)) else ids(query, k)

def pytest_retrieval_engines(registry, config):
    registry.register("passages", lambda request: adapters.function(passages, name="passages"))
    registry.register("mixed", lambda request: adapters.function(mixed, name="mixed"))
"""


def test_an_engine_answering_some_questions_with_ids_has_no_twin_and_the_run_names_those_questions(
        make_project, tmp_path, capsys):
    p = _project(make_project, tmp_path, capsys)
    p.makeconftest(CONFTEST + MIXED)
    p.makeini(f"[pytest]\nretrieval_corpus = {tmp_path / 'kb'}\nretrieval_questions = "
              f"{p.path / 'questions.cache.json'}\nretrieval_engines = passages mixed\n")
    result = p.runpytest("-m", "retrieval", "--retrieval-report", "--retrieval-report-dir=out",
                         "--retrieval-threshold=mixed:hit@5+evidence>=0.5")
    text = result.stdout.str()
    flat = " ".join(text.split())
    assert result.ret == 1, text
    assert "mixed missed none of 6 at hit@5" in text and "mixed missed" not in text.replace("mixed missed none of 6 at hit@5\n", "")
    assert flat.count("evidence level unavailable for mixed: it answered 3 of 6 questions with document ids, not "
                      "passages ('what is the monthly fee for item3'") == 1
    assert "handed to a generator, word tokens of the top 5 passages (mean per question): passages " in flat
    assert "mixed 0" not in flat and "nan" not in text.split()
    assert ("FAIL retrieval gate: mixed: hit@5+evidence has no value, so the rule mixed:hit@5+evidence>=0.5 checked "
            "nothing") in text
    saved = json.loads((p.path / "out" / "results.json").read_text())
    mixed = next(e for e in saved["evaluations"] if e["engine"] == "mixed")
    assert mixed["summary"]["hit@5+evidence"] == {"mean": None, "ci95": None}
    assert {q["values"]["hit@5+evidence"] for q in mixed["queries"]} == {None}  # no question scored 0

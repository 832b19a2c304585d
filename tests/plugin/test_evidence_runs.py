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
    rows = {line.split()[0]: line.split()[2:] for line in twins if line.startswith(("extracted ", "offtopic "))}
    assert rows["extracted"][:6] == ["1.000"] * 6 and rows["offtopic"][:6] == ["0.000"] * 6, text
    assert "offtopic missed 2 of 2 at hit@5+evidence: 2 right document, wrong passage" in text
    assert "extracted missed none of 2 at hit@5+evidence" in text

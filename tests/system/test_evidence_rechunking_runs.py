"""Re-chunking needs no relabeling: one labeled set with evidence on the bundled corpus, the hybrid
engine at three chunkings (120, 200 and 400 words), each scored at the document and the evidence
level from the same labels, which stay fresh."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys

import pytest

from conftest import CORPUS, parse_table
from pytest_retrieval_eval.cli import main as cli

pytestmark = [pytest.mark.postgres]

#: bundled questions with the sentence of their gold document that answers them (the bundled
#: cache records the 400-word chunk each was written from, too long to be evidence)
LABELS = """id,question,doc_id,evidence
account-deletion.q1,I want to remove my profile completely; what do I need to sort out first?,account-deletion,once you have no active plan and no unpaid invoices
adaptive-bikes.q1,Do you have a three-wheeler for someone who cannot balance on two wheels?,adaptive-bikes,an electric tricycle with a low step-through frame
app-bluetooth-pairing.q1,My phone keeps scanning and never connects to the bike. What should I try?,app-bluetooth-pairing,first check that location access is allowed for the app
appendix-c.q1,There is a ticking sound that gets faster the harder I pedal. Where does it come from?,appendix-c,A rhythmic clicking that speeds up as you pedal faster usually comes from the pedals or the crank
battery-care.q1,What charge level should the pack sit at if I am not riding for the whole winter?,battery-care,"leave the pack at about half charge, remove it from the frame and keep it somewhere dry and cool"
billing-failed-payment.q1,My card expired and the monthly charge bounced; what happens next?,billing-failed-payment,"If the payment fails, we try again after three days and again after seven days"
cargo-bike-load-limits.q1,How heavy a load can I put in the front box of the family bike?,cargo-bike-load-limits,The Cargo model's front box takes up to eighty kilograms
child-seat-compatibility.q1,Can I carry my four-year-old on the back of the Sport model?,child-seat-compatibility,the Sport model has no rack mounts
delivery-windows.q1,"Can I change the time the van brings my bike the day before, and is there a fee for that?",delivery-windows,You can move the slot for free until noon on the day before; later changes cost fifteen euros
employer-cycle-scheme.q1,My company pays for the bike out of my gross pay. How much cheaper is that than paying for it myself?,employer-cycle-scheme,the net cost to the employee is typically between a quarter and two fifths lower than a private subscription
helmet-safety-standards.q1,When should I replace my head protection even if it looks undamaged?,helmet-safety-standards,"Replace a helmet after any crash, even if it looks fine, and in any case every five years"
lost-keys.q1,I have misplaced one of the two keys. How do I get another copy?,lost-keys,order a copy in the app using the number stamped on the remaining key
memo-2026-03.q1,Can I leave my battery to charge at the railway station while I am at the office?,memo-2026-03,You can leave the bike's battery in a locker while you are at work and collect it full in the evening
"""

CHUNKINGS = {"hybrid": 400, "hybrid-200": 200, "hybrid-120": 120}


def test_three_chunkings_are_scored_at_the_evidence_level_from_one_set_of_labels(pytester, sandbox_tmp,
                                                                                 shared_cache_dir, tmp_path, capsys):
    if __import__("importlib.util").util.find_spec("haystack") is None:
        pytest.skip("the hybrid extra is not installed")
    labels, cache = tmp_path / "labels.csv", pytester.path / "questions.cache.json"
    labels.write_text(LABELS)
    assert cli(["label", "import", str(labels), "--corpus", str(CORPUS), "--questions", str(cache)]) == 0
    before = cache.read_text()
    pytester.makeini(f"[pytest]\nretrieval_corpus = {CORPUS}\nretrieval_questions = {cache}\n"
                     f"retrieval_cache_dir = {shared_cache_dir}\nretrieval_engines = hybrid hybrid-200 hybrid-120\n"
                     "retrieval_embedder = hashing\n"  # chunkings and evidence are tested, not the model
                     "retrieval_variants =\n    hybrid-200: split_length=200 split_overlap=40\n"
                     "    hybrid-120: split_length=120 split_overlap=20\n")
    pytester.makepyfile("def test_x(retrieval_results):\n    pass\n")
    out = tmp_path / "out"
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--retrieval-report",
                           f"--retrieval-report-dir={out}"], cwd=pytester.path,
                          env={**os.environ, "TMPDIR": str(sandbox_tmp)}, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    text = done.stdout
    assert "passages with the evidence" in text and "evidence level unavailable" not in text
    saved = json.loads((out / "results.json").read_text())
    for e in saved["evaluations"]:
        from pytest_retrieval_eval.analysis.result import EvaluationResult

        result = EvaluationResult.from_dict(e)
        assert result.engine_info["split"].startswith(f"{CHUNKINGS[result.engine]} words"), result.engine_info
        doc, passage = result.score("hit@5"), result.score("hit@5+evidence")
        assert not math.isnan(passage) and passage <= doc, (result.engine, doc, passage)  # a passage rank is never
        assert all(r.passages for r in result.results)  # above its document's, so the evidence level is lower or equal
        print(f"{result.engine}: hit@5 {doc:.3f}, hit@5+evidence {passage:.3f}, "
              f"mrr {result.score('mrr'):.3f}, mrr+evidence {result.score('mrr+evidence'):.3f}")
    table = parse_table(text)
    assert set(table) == set(CHUNKINGS)
    # beside its quality, what each chunking hands a generator: smaller chunks, fewer tokens
    handed = {h["engine"]: h["tokens"] for h in saved["analysis"]["handed"]}
    assert handed["hybrid"] > handed["hybrid-200"] > handed["hybrid-120"] > 0, handed
    line = " ".join(text[text.index("handed to a generator"):].split("\n  ")[:3]).split("\n")[0]
    assert line.startswith("handed to a generator, word tokens of the top 5 passages (mean per question): ")
    for engine, tokens in handed.items():
        assert f"{engine} {tokens:.0f}" in line, line
    print(line)
    assert cache.read_text() == before  # no relabeling: the same labels for every chunking
    assert cli(["check", "--corpus", str(CORPUS), "--questions", str(cache)]) == 0

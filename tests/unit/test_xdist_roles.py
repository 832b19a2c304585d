"""What each process hands the reporting one under xdist (``plugin/roles.py``): its results
document, as results.json's text, and what it said beside it for the run, put together in worker
order (store lines by worker, a warning once whoever said it, the calls outside the engines summed,
the workers lost as the gate's failures)."""

from __future__ import annotations

import json

from pytest_retrieval_eval.archive.results_json import document_text
from pytest_retrieval_eval.plugin.roles import Controller, Gathered, Shipped

DOCUMENT = {"format": "pytest-retrieval-eval/results", "version": 1, "evaluations": [], "lint": [], "snippets": {}}


class Node:
    def __init__(self, wid, output):
        self.gateway = type("Gateway", (), {"id": wid})()
        self.workeroutput = output


def test_a_worker_hands_over_its_results_document_as_results_json_text_and_the_controller_reads_it_back():
    shipped = Shipped(DOCUMENT, ["chunks_1: ingested"], None, ["d1", "d1"], {"m": [1, 2, 3]}, ["drifted"])
    output = shipped.output()
    assert output["pytest_retrieval_eval"] == document_text(DOCUMENT)
    assert Shipped.received(json.loads(json.dumps(output))) == shipped  # what execnet carries: text
    controller = Controller()
    controller.node_down(Node("gw0", output), None)
    controller.node_down(Node("gw1", {}), None)
    controller.node_down(Node("gw2", output), "worker 'gw2' crashed\nnode down: Not properly terminated")
    gathered = controller.gather()
    assert [wid for wid, _ in gathered.shipped] == ["gw0"]
    assert gathered.lost == ["xdist worker gw1 (sent no retrieval results); its retrieval results are missing",
                             "xdist worker gw2 (crashed: node down: Not properly terminated); its retrieval "
                             "results are missing"]


def test_what_the_processes_said_is_put_together_in_worker_order():
    a = Shipped(DOCUMENT, ["ingested"], "ingest.yaml", [], {"m": [1, 10, 0]}, ["drifted"])
    b = Shipped(DOCUMENT, ["restored"], "ingest.yaml", ["d1", "d2"], {"m": [2, 5, 1]}, ["drifted"])
    gathered = Gathered([("gw0", a), ("gw1", b)])
    assert gathered.names == ["gw0", "gw1"] and gathered.documents == [DOCUMENT, DOCUMENT]
    assert gathered.workers_said == gathered.store == ["gw0: ingested", "gw1: restored"]
    assert gathered.chunk_docs == ["d1", "d2"] and gathered.usage == {"m": [3, 15, 1]}
    assert gathered.warnings(evaluated=True) == [
        "retrieval_ingest_pipeline ingest.yaml did not run: no engine reads what it ingests (name a query pipeline "
        "that does, retrieval_query_pipelines = NAME=PATH, or leave it out)", "drifted"]
    assert gathered.warnings(evaluated=False) == ["drifted"]
    alone = Gathered([("local", a)])
    assert alone.names == [None] and alone.workers_said == [] and alone.store == ["ingested"]
    assert alone.chunk_docs is None and alone.lost == []

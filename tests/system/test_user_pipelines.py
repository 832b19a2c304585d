"""A team's own Haystack pipelines as YAML on the plugin's ephemeral store: loading with errors
that name the file and the component, the stores pointed at the session's table, the embedders
answered from the cache, a query pipeline as an engine."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import requires_hybrid, write_docs

pytestmark = [requires_hybrid, pytest.mark.postgres]

DOCS = [
    {"doc_id": "vpn", "title": "VPN", "content": "Install the tunnel client and import your profile to reach the office network."},
    {"doc_id": "printer", "title": "Printers", "content": "Send print jobs to the follow-me queue and release them with your badge."},
    {"doc_id": "wifi", "title": "Guest wifi", "content": "Visitors get a daily code for the guest wireless network at reception."},
]
QUESTIONS = [
    {"id": "q-vpn", "question": "How do I get onto the office network from home?", "relevant": {"vpn": 1}},
    {"id": "q-print", "question": "Where do my print jobs go before I pick them up?", "relevant": {"printer": 1}},
    {"id": "q-wifi", "question": "What does a visitor need for the wireless?", "relevant": {"wifi": 1}},
]


def pipelines(folder: Path, *, document_embedder, text_embedder, split_length: int = 8) -> tuple[Path, Path]:
    """An ingestion and a query YAML written by Haystack itself (Pipeline.dumps)."""
    import os

    from haystack import Pipeline
    from haystack.components.preprocessors import DocumentSplitter
    from haystack.components.writers import DocumentWriter
    from haystack.document_stores.types import DuplicatePolicy
    from haystack_integrations.components.retrievers.pgvector import PgvectorEmbeddingRetriever
    from haystack_integrations.document_stores.pgvector import PgvectorDocumentStore

    os.environ.setdefault("PG_CONN_STR", "postgresql://unused")
    store = PgvectorDocumentStore(table_name="theirs", embedding_dimension=384, vector_function="cosine_similarity",
                                  search_strategy="exact_nearest_neighbor")
    ingest = Pipeline()
    ingest.add_component("splitter", DocumentSplitter(split_by="word", split_length=split_length, split_overlap=0))
    ingest.add_component("embedder", document_embedder)
    ingest.add_component("writer", DocumentWriter(document_store=store, policy=DuplicatePolicy.OVERWRITE))
    ingest.connect("splitter", "embedder")
    ingest.connect("embedder", "writer")
    query = Pipeline()
    query.add_component("embed", text_embedder)
    query.add_component("retriever", PgvectorEmbeddingRetriever(document_store=store, top_k=10))
    query.connect("embed.embedding", "retriever.query_embedding")
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "ingest.yaml").write_text(ingest.dumps())
    (folder / "query.yaml").write_text(query.dumps())
    return folder / "ingest.yaml", folder / "query.yaml"


@pytest.fixture
def project(pytester, tmp_path):
    corpus = write_docs(tmp_path / "kb", DOCS)
    (tmp_path / "q.json").write_text(json.dumps({"format": "pytest-retrieval-eval/questions", "version": 1,
                                                 "queries": QUESTIONS}))
    from pytest_retrieval_eval.cli import main as cli

    assert cli(["label", "stamp", "--corpus", str(corpus), "--questions", str(tmp_path / "q.json")]) == 0
    pytester.makepyfile("import pytest\n\n@pytest.mark.retrieval\ndef test_x(retrieval_results):\n"
                        "    assert retrieval_results.n_errored == 0\n")

    def ini(extra: str = "") -> None:
        pytester.makeini(f"[pytest]\nretrieval_corpus = {corpus}\nretrieval_questions = {tmp_path / 'q.json'}\n"
                         f"retrieval_cache_dir = {tmp_path / 'cache'}\n{extra}")

    pytester.ini = ini
    return pytester


ST = "haystack_integrations.components.embedders.sentence_transformers."


@pytest.mark.model
def test_sentence_transformers_embedders_in_a_teams_yaml_are_cached_and_queried(project, tmp_path):
    import yaml

    from pytest_retrieval_eval.hybrid.components import PluginDocumentEmbedder, PluginTextEmbedder
    from pytest_retrieval_eval.hybrid.embedders import packaged_minilm_path

    ingest, query = pipelines(tmp_path / "pipes", document_embedder=PluginDocumentEmbedder("minilm"),
                              text_embedder=PluginTextEmbedder("minilm"))
    model = str(packaged_minilm_path())  # as a team's YAML names its model (no torch in this process)
    for path, name, kind in ((ingest, "embedder", "sentence_transformers_document_embedder."
                                                  "SentenceTransformersDocumentEmbedder"),
                             (query, "embed", "sentence_transformers_text_embedder.SentenceTransformersTextEmbedder")):
        doc = yaml.safe_load(path.read_text())
        doc["components"][name] = {"type": ST + kind, "init_parameters": {"model": model, "progress_bar": False}}
        path.write_text(yaml.safe_dump(doc))
    project.ini(f"retrieval_ingest_pipeline = {ingest}\nretrieval_query_pipelines = theirs={query}\n")
    cold = project.runpytest_subprocess("-m", "retrieval", "--retrieval-report")
    assert cold.ret == 0, cold.stdout.str()
    cold.stdout.fnmatch_lines(["*ingested with ingest.yaml (6 chunks; embedded 6, 0 from the cache; embedders cached: "
                               "embedder, not cached: none)*"])
    from conftest import parse_table

    theirs = parse_table(cold.stdout.str())["theirs"]
    assert (theirs["n"], theirs["errored"], theirs["hit@5"]) == (3, 0, 1.0)  # hit@5 over 3 queries
    warm = project.runpytest_subprocess("-m", "retrieval", "--retrieval-report", "--retrieval-store-cache-mb=0", "-v")
    assert warm.ret == 0
    warm.stdout.fnmatch_lines(["*(6 chunks; embedded 0, 6 from the cache;*"])  # a second run embeds nothing
    assert "embedders_cached=embed" in " ".join(warm.stdout.str().split())
    restored = project.runpytest_subprocess("-m", "retrieval", "--retrieval-report")
    restored.stdout.fnmatch_lines(["*restored from snapshot (6 chunks of ingest.yaml; the pipeline did not run)*"])


@pytest.mark.model
def test_a_teams_yaml_is_linted_for_truncation_with_its_embedders_window(project, tmp_path):
    """The window comes from the YAML's own document embedder (here the plugin's MiniLM), so a
    team's ingestion is checked for truncation as the built-in one is (issue 27)."""
    from pytest_retrieval_eval.hybrid.components import PluginDocumentEmbedder, PluginTextEmbedder

    write_docs(tmp_path / "kb", [{"doc_id": "manual", "title": "Manual",
                                  "content": " ".join(f"step{i} of the manual" for i in range(100))}])
    ingest, query = pipelines(tmp_path / "pipes", document_embedder=PluginDocumentEmbedder("minilm"),
                              text_embedder=PluginTextEmbedder("minilm"), split_length=400)
    project.ini(f"retrieval_ingest_pipeline = {ingest}\nretrieval_query_pipelines = theirs={query}\n")
    result = project.runpytest_subprocess("-m", "retrieval", "--retrieval-report", "-v")
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(["*corpus lint, kb: 4 chunks, embedder window 256 tokens: truncated 1*",
                                 "*truncated: manual:0 (* tokens > 256*"])
    restored = project.runpytest_subprocess("-m", "retrieval", "--retrieval-report")
    restored.stdout.fnmatch_lines(["*restored from snapshot*", "*embedder window 256 tokens: truncated 1*"])


@pytest.mark.parametrize("edit, message", [
    (lambda y: y.replace("haystack.components.preprocessors.document_splitter.DocumentSplitter",
                         "team_tools.splitters.ClauseSplitter"),
     "ingest.yaml: field 'components.splitter.type': component 'splitter': cannot import "
     "team_tools.splitters.ClauseSplitter (ModuleNotFoundError"),
    (lambda y: y.replace("components:", "components: [", 1), "ingest.yaml:3: not a YAML pipeline"),
    (lambda y: y.replace("components:", "parts:", 1), "not a serialised Haystack pipeline (no 'components' mapping)"),
])
def test_a_yaml_that_does_not_load_names_the_file_and_the_component(project, tmp_path, edit, message):
    from pytest_retrieval_eval.hybrid.components import PluginDocumentEmbedder, PluginTextEmbedder

    ingest, query = pipelines(tmp_path / "pipes", document_embedder=PluginDocumentEmbedder("hashing"),
                              text_embedder=PluginTextEmbedder("hashing"))
    ingest.write_text(edit(ingest.read_text()))
    project.ini(f"retrieval_ingest_pipeline = {ingest}\nretrieval_query_pipelines = theirs={query}\n")
    result = project.runpytest("-m", "retrieval")
    assert result.ret != 0
    assert message in result.stdout.str(), result.stdout.str()


def test_wrong_wiring_is_said_plainly(project, tmp_path):
    from pytest_retrieval_eval.hybrid.components import PluginDocumentEmbedder, PluginTextEmbedder

    ingest, query = pipelines(tmp_path / "pipes", document_embedder=PluginDocumentEmbedder("hashing:384"),
                              text_embedder=PluginTextEmbedder("hashing:384"))
    project.ini(f"retrieval_ingest_pipeline = {ingest}\nretrieval_query_pipelines = theirs={query}\n"
                "retrieval_ingest_input = writer.documents\n")
    wrong_input = project.runpytest("-m", "retrieval")
    assert "input socket 'writer.documents' is not an open input of the pipeline (open: splitter.documents" in \
        wrong_input.stdout.str()
    project.ini(f"retrieval_ingest_pipeline = {ingest}\nretrieval_query_pipelines = theirs={query}\n"
                "retrieval_id_field = article\n")
    no_ids = project.runpytest("-m", "retrieval")
    assert "6 of 6 written documents lack the id meta field 'article'" in no_ids.stdout.str()
    query.write_text(query.read_text().replace("PgvectorDocumentStore", "NotAStore").replace(
        "haystack_integrations.document_stores.pgvector.document_store.NotAStore",
        "haystack.document_stores.in_memory.document_store.InMemoryDocumentStore"))
    project.ini(f"retrieval_ingest_pipeline = {ingest}\nretrieval_query_pipelines = theirs={query}\n")
    no_store = project.runpytest("-m", "retrieval")
    assert "query.yaml" in no_store.stdout.str()
    project.ini(f"retrieval_query_pipelines = theirs={query}\n")
    no_ingest = project.runpytest("-m", "retrieval")
    assert "a query pipeline reads what an ingestion pipeline wrote: set retrieval_ingest_pipeline" in \
        no_ingest.stdout.str()


def test_a_teams_query_yaml_is_measured_against_its_exact_search(project, tmp_path):
    """With --retrieval-exact-check the pipeline is asked again with its stores' index scans off."""
    from pytest_retrieval_eval.hybrid.components import PluginDocumentEmbedder, PluginTextEmbedder

    ingest, query = pipelines(tmp_path / "pipes", document_embedder=PluginDocumentEmbedder("hashing:384"),
                              text_embedder=PluginTextEmbedder("hashing:384"))
    query.write_text(query.read_text().replace("search_strategy: exact_nearest_neighbor", "search_strategy: hnsw"))
    project.ini(f"retrieval_ingest_pipeline = {ingest}\nretrieval_query_pipelines = theirs={query}\n"
                "retrieval_engines = theirs\n")
    result = project.runpytest_subprocess("-m", "retrieval", "--retrieval-report", "--retrieval-exact-check")
    said = " ".join(result.stdout.str().split())
    assert result.ret == 0 and "theirs: approximate vs exact recall@5 1.000 [" in said, said
    assert "over 3 questions: no gap" in said


def test_the_plugins_own_embedder_components_round_trip_through_yaml():
    from haystack import Pipeline

    from pytest_retrieval_eval.hybrid.components import PluginDocumentEmbedder, PluginTextEmbedder

    p = Pipeline()
    p.add_component("d", PluginDocumentEmbedder("hashing:16"))
    p.add_component("t", PluginTextEmbedder("hashing:16"))
    again = Pipeline.loads(p.dumps(), allowed_modules=["pytest_retrieval_eval.hybrid.components"])
    assert again.get_component("d").spec == "hashing:16"
    assert len(again.get_component("t").run(text="hello")["embedding"]) == 16


def test_the_builtin_pair_is_yaml_a_copy_runs_as_a_teams_pipeline_and_the_hybrid_row_is_unchanged(
        pytester, tmp_path, shared_cache_dir):
    """The built-in hybrid engine's pipelines ship as YAML, loaded by the same code as a team's;
    its bundled row (ingested afresh through the YAML) is the one it had when built in code, and
    a copy of the two files, run as a team's own pipelines, gives the same rankings."""
    import shutil

    from conftest import CORPUS, QUESTIONS, parse_table
    from pytest_retrieval_eval.data.pipeline_files import builtin

    for name in ("ingest.yaml", "query.yaml"):
        shutil.copy(builtin(name).path, tmp_path / name)
    # and a copy whose joiner keeps one chunk: its misses are the joiner's cut, read from its stages
    query = (tmp_path / "query.yaml").read_text()
    (tmp_path / "cut.yaml").write_text(query.replace("sort_by_score: true\n      top_k: 50", "sort_by_score: true\n      top_k: 1"))
    pytester.makeini(f"[pytest]\nretrieval_corpus = {CORPUS}\nretrieval_questions = {QUESTIONS}\n"
                     f"retrieval_cache_dir = {shared_cache_dir}\nretrieval_store_cache_mb = 0\n"
                     f"retrieval_ingest_pipeline = {tmp_path / 'ingest.yaml'}\n"
                     f"retrieval_query_pipelines =\n    copy={tmp_path / 'query.yaml'}\n    cut={tmp_path / 'cut.yaml'}\n"
                     "retrieval_engines = hybrid copy cut\n")
    pytester.makepyfile("import pytest\n\n@pytest.mark.retrieval\ndef test_x(retrieval_results):\n    pass\n")
    result = pytester.runpytest_subprocess("-m", "retrieval", "--retrieval-report")
    assert result.ret == 0, result.stdout.str()
    table = parse_table(result.stdout.str())
    # the row of the built-in engine when its pipelines were built in code (68 questions)
    assert [table["hybrid"][m] for m in ("hit@1", "hit@3", "hit@5", "hit@10", "hit@20", "mrr")] == \
        [0.809, 0.971, 0.971, 1.0, 1.0, 0.892]
    assert table["copy"] == table["hybrid"]
    assert "ingested with ingest.yaml (38 chunks;" in result.stdout.str()  # the copy's table: same chunks
    missed = round((1 - table["cut"]["hit@5"]) * 68)
    result.stdout.fnmatch_lines(["copy missed 2 of 68 at hit@5: 2 ranked 6",
                                 f"cut missed {missed} of 68 at hit@5: 3 beaten by a stale version, {missed - 3} cut by joiner"])
    assert missed > 2  # the same misses as the built-in engine's with fusion_top_k=1 (tests/system/test_causes_runs.py)


def test_an_ingestion_yaml_no_engine_reads_is_a_warning_naming_it(project, tmp_path):
    """Set, but no engine reads what it would ingest (no query pipeline, no fixture asking for
    it): it never runs, and the run says so, naming the file, rather than passing in silence."""
    from pytest_retrieval_eval.data.pipeline_files import builtin

    for name in ("ingest.yaml", "query.yaml"):  # the built-in pair on a 64-dimension hashing embedder
        (tmp_path / name).write_text(builtin(name).path.read_text().replace("spec: minilm", "spec: hashing:64")
                                     .replace("embedding_dimension: 384", "embedding_dimension: 64"))
    project.ini(f"retrieval_ingest_pipeline = {tmp_path / 'ingest.yaml'}\nretrieval_engines = keyword\n")
    result = project.runpytest_subprocess("-m", "retrieval", "--retrieval-report", "-v")
    assert result.ret == 0, result.stdout.str()
    [line] = [l for l in result.stdout.lines if "retrieval_ingest_pipeline" in l]
    assert line.startswith("warning: retrieval_ingest_pipeline ") and str(tmp_path / "ingest.yaml") in line
    assert "did not run: no engine reads what it ingests" in line and "retrieval_query_pipelines = NAME=PATH" in line
    project.ini(f"retrieval_ingest_pipeline = {tmp_path / 'ingest.yaml'}\nretrieval_embedder = hashing:64\n"
                f"retrieval_query_pipelines = copy={tmp_path / 'query.yaml'}\nretrieval_engines = keyword\n")
    assert "did not run" in project.runpytest_subprocess("-m", "retrieval", "-v").stdout.str()  # its engine not selected
    project.ini(f"retrieval_ingest_pipeline = {tmp_path / 'ingest.yaml'}\nretrieval_embedder = hashing:64\n"
                f"retrieval_query_pipelines = copy={tmp_path / 'query.yaml'}\nretrieval_engines = keyword copy\n")
    used = project.runpytest_subprocess("-m", "retrieval", "--retrieval-report")
    assert used.ret == 0 and "ingested with ingest.yaml" in used.stdout.str() and "did not run" not in used.stdout.str()

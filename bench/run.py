"""pytest-retrieval-eval benchmark: medians over repeated runs and ratios within one run.

    python bench/run.py                 # everything (about 30 minutes on 2 cores: SciFact cold on
                                        # both runtimes, 100,000 chunks)
    python bench/run.py --repeats 3 --no-scifact
    python bench/run.py --quick         # every section at small sizes, once (1.5 to 3 minutes)
    python bench/run.py --only scale --scale 5330,100000,1000000   # a million chunks (about 35 minutes)

Absolute times on shared machines are noise; the ratios printed next to them compare things
measured in the same run. Results: bench/results/results.json and bench/results/summary.md.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
#: where the test suite finds it too (tests/shared_datasets.py): RETRIEVAL_TESTS_DATASETS, by default
#: shared/datasets beside the checkout
SCIFACT = Path(os.environ.get("RETRIEVAL_TESTS_DATASETS") or REPO.parent / "shared" / "datasets") / "scifact"
RESULTS = REPO / "bench" / "results"
PYTEST = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:hypothesispytest", "-q"]
MEASURES = ["hit@5", "mrr", "ndcg@10", "recall@100", "precision@10", "map"]
#: the same measures in each peer's names, in MEASURES' order
TREC_NAMES = ["success.5", "recip_rank", "ndcg_cut.10", "recall.100", "P.10", "map"]
RANX_NAMES = ["hit_rate@5", "mrr", "ndcg@10", "recall@100", "precision@10", "map"]
#: trec_eval's measures beyond those six that pytrec-eval-terrier has too, ours then theirs
TREC_EXTRA = ["rprec", "bpref", "num_ret", "num_rel", "num_rel_ret", "set_precision", "set_recall", "set_f"]
TREC_EXTRA_NAMES = ["Rprec", "bpref", "num_ret", "num_rel", "num_rel_ret", "set_P", "set_recall", "set_F"]

rows: list[dict] = []

#: ``--quick``: every section at small sizes and one repetition; the figures mean nothing then
QUICK = False
#: tiny: smaller still, each section once as an ordinary test of the suite (tests/system/test_bench.py,
#: tests/plugin/test_bench_runs.py), so a change that breaks a section fails the suite; implies QUICK
TINY = False


def sized(normal, quick, tiny=None):
    return tiny if TINY and tiny is not None else quick if QUICK else normal


def set_mode(mode: str) -> None:
    """``full``, ``quick`` or ``tiny`` (the suite's)."""
    global QUICK, TINY
    QUICK, TINY = mode in ("quick", "tiny"), mode == "tiny"


def bundled_eval() -> list[str]:
    """The README's ``pytest -m retrieval`` from the repository's root; quick: the same tests named
    by their file, so each run skips collecting the rest of the suite (1.4 s a run here)."""
    return ["-m", "retrieval", *sized([], ["tests/system/test_bundled_eval.py"])]


def record(section: str, name: str, values: list[float], unit: str = "s", **extra) -> float:
    median = statistics.median(values)
    rows.append({"section": section, "name": name, "median": median, "unit": unit, "runs": values, **extra})
    print(f"  {name:58} {median:10.4f} {unit}  (n={len(values)})", flush=True)
    return median


def ratio(section: str, name: str, a: float, b: float, **extra) -> None:
    rows.append({"section": section, "name": name, "ratio": a / b, **extra})
    print(f"  {name:58} {a / b:10.2f}x", flush=True)


TIME = shutil.which("time") or "/usr/bin/time"


def child(cmd: list[str], env: dict | None = None, cwd: Path = REPO) -> tuple[float, int, str]:
    """Wall seconds and peak RSS (KB) of a child process, and its output. RSS comes from
    /usr/bin/time: a child forked from this (large) process would report the parent's pages."""
    wrapped = [TIME, "-f", "MAXRSS %M"] + cmd if os.path.exists(TIME) else cmd
    # as on a user's machine: bytecode is cached (these machines set PYTHONDONTWRITEBYTECODE,
    # which makes pytest assertion-rewrite every plugin module again on every run)
    # and not as CI, nor as one of the suite's xdist workers: the suite runs each section (tiny) under
    # CI=true, where the repository's own conftest turns a skip into a failure; the bench's children
    # are a user's runs
    base = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "CI", "PYTEST_CURRENT_TEST")
            and not k.startswith("PYTEST_XDIST")}
    start = time.perf_counter()
    done = subprocess.run(wrapped, cwd=cwd, env={**base, **(env or {})}, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({done.returncode}):\n{(done.stdout + done.stderr)[-3000:]}")
    rss = next((int(l.split()[1]) for l in done.stderr.splitlines()[::-1] if l.startswith("MAXRSS ")), 0)
    return seconds, rss, done.stdout


# --- evaluate() against pytrec-eval-terrier and ranx ------------------------------------------

def synthetic(nq: int, nd: int, seed: int = 1, ranked: bool = False) -> tuple[dict, dict]:
    """Graded qrels (5 judged per query) and a run of ``nd`` scored docs per query. As engines and
    TREC files give them: scores in random order with many ties (a quarter as many distinct
    values as docs), two judged docs retrieved per query; ``ranked``: strictly descending, the
    already-ranked case."""
    rng = random.Random(seed)
    qrels = {f"q{i}": {f"d{rng.randrange(20 * nd)}": rng.randint(1, 2) for _ in range(5)} for i in range(nq)}
    run = {}
    for q in qrels:
        docs = [f"d{d}" for d in rng.sample(range(20 * nd), nd)]
        docs[:2] = list(qrels[q])[:2]
        docs = list(dict.fromkeys(docs))
        if ranked:
            run[q] = {d: float(nd - j) for j, d in enumerate(docs)}
        else:
            rng.shuffle(docs)
            run[q] = {d: float(rng.randint(0, max(1, nd // 4))) for d in docs}
    return qrels, run


def write_trec_files(qrels: dict, run: dict, folder: Path) -> tuple[Path, Path]:
    from pytest_retrieval_eval import Qrels

    Qrels.from_dict(qrels).to_trec(folder / "qrels.txt")
    with open(folder / "run.trec", "w") as fh:
        fh.writelines(f"{q} Q0 {d} 0 {s} x\n" for q, docs in run.items() for d, s in docs.items())
    return folder / "qrels.txt", folder / "run.trec"


#: a fresh process's first call, from the same dicts to the same six means: the import, ranx's
#: numba compile, building each library's objects and evaluating (the JSON read is not timed)
COLD = {
    "ours": """
import json, sys, time
qrels, run = json.load(open(sys.argv[1]))
start = time.perf_counter()
from pytest_retrieval_eval import Qrels, Run, evaluate
out = evaluate(Qrels.from_dict(qrels), Run.from_dict(run), %r)
print(json.dumps({"seconds": time.perf_counter() - start, "values": list(out.values())}))
""" % MEASURES,
    "ranx": """
import json, sys, time
qrels, run = json.load(open(sys.argv[1]))
start = time.perf_counter()
from ranx import Qrels, Run, evaluate
out = evaluate(Qrels(qrels), Run(run), %r)
print(json.dumps({"seconds": time.perf_counter() - start, "values": [float(v) for v in out.values()]}))
""" % RANX_NAMES,
}

#: why ranx's values may differ from ours (and trec_eval's) on the same input
RANX_TIES = "ranx breaks score ties its own way, not as trec_eval does (the greater doc id first)"


def trec_summary(per: dict, names: list[str]) -> list[float]:
    """pytrec-eval-terrier's per-query values summarised as trec_eval and ours do: counts summed
    over the queries, every other measure averaged."""
    keys = [n.replace(".", "_") for n in names]
    return [sum(v[k] for v in per.values()) / (1 if k.startswith("num_") else len(per)) for k in keys]


def timed(fn):
    """A warm runner for ``compare``: (seconds, what ``fn`` returned)."""
    def run():
        start = time.perf_counter()
        out = fn()
        return time.perf_counter() - start, out
    return run


def fresh(script: str, path: str):
    """A cold runner for ``compare``: ``script`` in a fresh process; (its seconds, its values)."""
    def run():
        out = json.loads(child([sys.executable, "-c", script, path])[2].strip().splitlines()[-1])
        return out["seconds"], out["values"]
    return run


def compare(size: str, inputs: str, outputs: str, runners: dict, repeats: int, state: str = "warm") -> None:
    """Time ours against each peer on the same inputs to the same outputs, so a ratio means one
    thing. ``runners``: name -> (runner, why its values may differ, or None); "ours" first. Each
    runner returns (seconds, the summaries in MEASURES' order). Warm, every runner is called once
    untimed first (ranx's numba compile, lazy imports); the timed calls alternate, so drift hits
    all alike. A peer whose values differ from ours without a reason stops the bench: it would be
    timing other measures. The rows carry what was compared; tests/system/test_bench.py checks it."""
    if state == "warm":
        for run, _ in runners.values():
            run()
    times: dict[str, list[float]] = {name: [] for name in runners}
    values: dict[str, list[float]] = {}
    for _ in range(repeats):
        for name, (run, _) in runners.items():
            seconds, out = run()
            times[name].append(seconds)
            values.setdefault(name, [float(v) for v in out])
    like = {"inputs": inputs, "outputs": outputs, "state": state, "size": size}
    what = f"{inputs} -> {outputs}, {state}, {size}"
    ours = record("evaluate", f"ours, {what}", times["ours"], peer="ours", agree=True, differs=None, **like)
    for name, (_, why) in list(runners.items())[1:]:
        agree = len(values[name]) == len(values["ours"]) and all(
            math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9) for a, b in zip(values[name], values["ours"]))
        if not agree and not why:
            raise SystemExit(f"{name} and ours disagree on {what}: {values[name]} against {values['ours']}")
        theirs = record("evaluate", f"{name}, {what}", times[name], peer=name, agree=agree,
                        differs=None if agree else why, **like)
        ratio("evaluate", f"{name} / ours, {what}", theirs, ours, of=[f"{name}, {what}", f"ours, {what}"])
        if not agree:
            print(f"  ({name}'s values differ: {why})", flush=True)


def bench_evaluate(repeats: int) -> None:
    import pytrec_eval

    from pytest_retrieval_eval import Qrels, Run, evaluate

    try:
        import ranx
    except ImportError:
        ranx = None

    def ours(q, r, measures=MEASURES):
        return lambda: list(evaluate(Qrels.from_dict(q), Run.from_dict(r), measures).values())

    def trec(q, r, names=TREC_NAMES):
        return lambda: trec_summary(pytrec_eval.RelevanceEvaluator(q, set(names)).evaluate(r), names)

    def ranx_dicts(q, r):
        return lambda: list(ranx.evaluate(ranx.Qrels(q), ranx.Run(r), RANX_NAMES).values())

    print("evaluate(): ours against pytrec-eval-terrier and ranx, each from the same inputs to the same summaries; "
          "a ratio is their time / ours (> 1: ours is faster)", flush=True)
    if ranx is not None and os.environ.get("NUMBA_DISABLE_JIT", "0") not in ("", "0"):
        print("  NUMBA_DISABLE_JIT is set: ranx runs interpreted, its ratios mean nothing (the tests' quick run sets it)",
              flush=True)
    six, extra = "six means", "Rprec, bpref, num_*, set_*"
    for nq, nd in sized([(10_000, 100), (1_000, 1_000)], [(200, 50)], [(30, 20)]):
        size = f"{nq:,} queries x {nd:,} docs"
        qrels, run = synthetic(nq, nd)
        ranked_q, ranked_r = synthetic(nq, nd, ranked=True)
        dicts, ranked = "dicts with tied scores", "ranked dicts"
        peers = {"ours": (timed(ours(qrels, run)), None), "pytrec-eval-terrier": (timed(trec(qrels, run)), None)}
        if ranx is not None:  # ranx's Qrels and Run are built from the dicts inside the timed call
            peers["ranx"] = (timed(ranx_dicts(qrels, run)), RANX_TIES)
        compare(size, dicts, six, peers, repeats)
        compare(size, dicts, extra, {"ours": (timed(ours(qrels, run, TREC_EXTRA)), None),
                                     "pytrec-eval-terrier": (timed(trec(qrels, run, TREC_EXTRA_NAMES)), None)}, repeats)
        peers = {"ours": (timed(ours(ranked_q, ranked_r)), None),
                 "pytrec-eval-terrier": (timed(trec(ranked_q, ranked_r)), None)}
        if ranx is not None:
            peers["ranx"] = (timed(ranx_dicts(ranked_q, ranked_r)), None)
        compare(size, ranked, six, peers, repeats)
        if ranx is not None:  # each library's own objects, built once outside the timed calls
            our_q, our_r, their_q, their_r = Qrels.from_dict(qrels), Run.from_dict(run), ranx.Qrels(qrels), ranx.Run(run)
            compare(size, "prebuilt Qrels/Run (each library's own)", six,
                    {"ours": (timed(lambda: list(evaluate(our_q, our_r, MEASURES).values())), None),
                     "ranx": (timed(lambda: list(ranx.evaluate(their_q, their_r, RANX_NAMES).values())), RANX_TIES)},
                    repeats)
        folder = Path(tempfile.mkdtemp(prefix="retrieval-bench-trec-"))
        qrels_file, run_file = write_trec_files(qrels, run, folder)

        def pytrec_files():
            with open(qrels_file) as fq, open(run_file) as fr:
                evaluator = pytrec_eval.RelevanceEvaluator(pytrec_eval.parse_qrel(fq), set(TREC_NAMES))
                return trec_summary(evaluator.evaluate(pytrec_eval.parse_run(fr)), TREC_NAMES)

        # ours: Qrels.from_trec and Run.from_trec; pytrec-eval-terrier: parse_qrel and parse_run
        compare(size, "TREC files", six,
                {"ours": (timed(lambda: list(evaluate(Qrels.from_trec(qrels_file), Run.from_trec(run_file),
                                                      MEASURES).values())), None),
                 "pytrec-eval-terrier": (timed(pytrec_files), None)}, repeats)
        shutil.rmtree(folder, ignore_errors=True)
        if ranx is not None and not QUICK:  # a fresh ranx compiles with numba: 30 s a process
            with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as fh:
                json.dump([qrels, run], fh)
            compare(size, dicts, six, {"ours": (fresh(COLD["ours"], fh.name), None),
                                       "ranx": (fresh(COLD["ranx"], fh.name), RANX_TIES)},
                    min(repeats, 3), state="fresh process")
            os.unlink(fh.name)


def _time(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


# --- the bundled eval, cold and warm, against its floor ----------------------------------------

def prepare_floor(cache_dir: Path, path: Path) -> None:
    from pytest_retrieval_eval.data.corpus import JsonFolder
    from pytest_retrieval_eval.hybrid.embedders import Embedder, backend_for
    from pytest_retrieval_eval.hybrid.embedding_cache import EmbeddingCache
    from pytest_retrieval_eval.data.chunking import chunk_corpus
    from pytest_retrieval_eval.data.labeled import load_questions_cache

    corpus = JsonFolder(REPO / "corpus").load()
    chunks = chunk_corpus(corpus)
    questions = [q.question for q in load_questions_cache(REPO / "questions.cache.json")]
    embedder = Embedder(backend_for("minilm"), EmbeddingCache(cache_dir / "embeddings.sqlite3"))
    vectors = embedder.embed([c.text for c in chunks])
    qvectors = embedder.embed(questions)
    assert embedder.stats.computed == 0, "the floor needs every embedding cached"
    path.write_text(json.dumps({
        "dim": int(vectors.shape[1]),
        "chunks": [{"id": c.chunk_id, "doc_id": c.doc_id, "text": c.text, "vector": v.tolist()} for c, v in zip(chunks, vectors)],
        "questions": [{"text": q, "vector": v.tolist()} for q, v in zip(questions, qvectors)],
        "docs": [{"doc_id": d.doc_id, "content": d.content, "title": d.title, "description": d.description,
                  "filename": d.filename} for d in corpus],
    }))


def bench_bundled(repeats: int, cold_runs: int, warm_cache: Path | None = None) -> None:
    """``warm_cache``: where the warm runs' cache is left filled (the queries section reads it),
    by the first cold run, or by a run of its own when there is none."""
    print("bundled eval, end to end: pytest -m retrieval (both engines, 68 questions)", flush=True)
    tmp = Path(tempfile.mkdtemp(prefix="retrieval-bench-"))
    warm_cache = warm_cache or tmp / "warm"
    warm_cmd = PYTEST + bundled_eval() + [f"--retrieval-cache-dir={warm_cache}"]
    try:
        cold = []
        for i in range(cold_runs):
            cache = warm_cache if i == 0 else tmp / f"cold{i}"
            cold.append(child(PYTEST + bundled_eval() + [f"--retrieval-cache-dir={cache}"])[0])
        if not cold_runs:
            child(warm_cmd)  # fill it
        probe_run = (warm_cmd + ["-p", "bench_probe"], {"PYTHONPATH": str(REPO / "bench")})  # what a warm run imports
        # quick: the figures mean nothing, so the one warm run is the probe's; else the probe runs apart
        warm_runs = [child(*probe_run)] if QUICK else [child(warm_cmd) for _ in range(repeats)]
        prep = tmp / "floor.json"
        prepare_floor(warm_cache, prep)
        floor_runs = [child([sys.executable, str(REPO / "bench" / "floor.py"), str(prep)])[0] for _ in range(repeats)]
        collect_runs = [child(PYTEST + bundled_eval() + ["--collect-only"])[0] for _ in range(repeats)]
        warm = record("bundled", "warm run (every embedding cached), wall", [w for w, _, _ in warm_runs])
        record("bundled", "warm run, peak RSS", [r / 1024 for _, r, _ in warm_runs], unit="MB")
        floor = record("bundled", "floor: PG start + bulk write + raw SQL queries, wall", floor_runs)
        collect = record("bundled", "pytest start + collecting the same tests (--collect-only)", collect_runs)
        ratio("bundled", "warm / floor", warm, floor)
        ratio("bundled", "warm / (floor + pytest start and collection)", warm, floor + collect)
        if cold:
            c = record("bundled", "cold run (empty embedding cache, loads the model), wall", cold)
            ratio("bundled", "cold / warm", c, warm)
        probe = warm_runs[0][2] if QUICK else child(*probe_run)[2]
        imported = json.loads(probe.split("PROBE ", 1)[1].splitlines()[0])
        rows.append({"section": "bundled", "name": "warm run imports", **imported})
        print(f"  warm run imported torch: {imported['torch']}, sentence_transformers: {imported['sentence_transformers']}", flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


# --- ingestion, queries, plugin overhead, memory (in process) ---------------------------------

def bench_ingestion(repeats: int) -> None:
    import psycopg
    from psycopg import sql

    from pytest_retrieval_eval.data.corpus import BeirFolder, Corpus, JsonFolder
    from pytest_retrieval_eval.hybrid.embedders import Embedder, HashingBackend
    from pytest_retrieval_eval.hybrid.embedding_cache import EmbeddingCache
    from pytest_retrieval_eval.data.chunking import chunk_corpus, chunking_pipeline, sources
    from pytest_retrieval_eval.hybrid.ingest import IngestConfig, document_store, ingest
    from pytest_retrieval_eval.hybrid.store.embedded import EmbeddedPostgres

    if SCIFACT.is_dir() and not TINY:
        full = BeirFolder(SCIFACT).load()
        corpus = Corpus(full.docs[:sized(2000, 100)], name=f"scifact-{sized(2000, 100)}")
    else:
        corpus = JsonFolder(REPO / "corpus").load()
    print(f"ingestion: {corpus.name}, {len(corpus)} documents (hashing vectors, cached: this measures writing)", flush=True)
    tmp = Path(tempfile.mkdtemp(prefix="retrieval-bench-"))
    store = EmbeddedPostgres()
    store.start()
    try:
        embedder = Embedder(HashingBackend(384), EmbeddingCache(tmp / "e.sqlite3"))
        chunks = chunk_corpus(corpus)
        vectors = embedder.embed([c.text for c in chunks])  # fills the cache
        n = len(chunks)
        ours, copy, before, write = [], [], [], []
        from haystack import Document

        from pytest_retrieval_eval.hybrid.haystack_internals import copy_documents
        from pytest_retrieval_eval.hybrid.ingest import _prepare_load, _vacuum

        documents = [Document(id=c.chunk_id, content=c.text, embedding=v.tolist(), meta=dict(c.meta))
                     for c, v in zip(chunks, vectors)]
        for i in range(repeats):
            config = IngestConfig(org_id=f"bench{i}")
            ours.append(ingest(corpus, store, embedder, config).seconds)
            # the plugin's write step alone, from the same embedded chunks the floor starts from
            start = time.perf_counter()
            target = document_store(store, f"write_only_{i}", 384, "english", hnsw=False)
            target.count_documents()
            _prepare_load(store, f"write_only_{i}")
            copy_documents(target, documents)
            target.close()
            indexed = document_store(store, f"write_only_{i}", 384, "english", hnsw=True)
            indexed.count_documents()  # builds the HNSW index
            _vacuum(store, f"write_only_{i}")
            indexed.close()
            write.append(time.perf_counter() - start)
            with psycopg.connect(store.dsn, autocommit=True) as conn:
                t = sql.Identifier(store.schema, f"bulk{i}")
                start = time.perf_counter()
                conn.execute(sql.SQL("CREATE TABLE {} (id text PRIMARY KEY, embedding vector(384), content text, meta jsonb)").format(t))
                with conn.cursor().copy(sql.SQL("COPY {} (id, embedding, content, meta) FROM STDIN").format(t)) as cp:
                    for c, v in zip(chunks, vectors):
                        cp.write_row((c.chunk_id, "[" + ",".join(f"{x:.7g}" for x in v) + "]", c.text, json.dumps(dict(c.meta))))
                conn.execute(sql.SQL("CREATE INDEX ON {} USING GIN (to_tsvector('english', content))").format(t))
                conn.execute(sql.SQL("CREATE INDEX ON {} USING hnsw (embedding vector_cosine_ops)").format(t))
                conn.execute(sql.SQL("VACUUM ANALYZE {}").format(t))
                copy.append(time.perf_counter() - start)
            # the same Haystack path, but with the HNSW index in place while writing
            from haystack.components.writers import DocumentWriter
            from haystack.document_stores.types import DuplicatePolicy

            from pytest_retrieval_eval.hybrid.components import PluginDocumentEmbedder

            start = time.perf_counter()
            writer = document_store(store, f"hnsw_first_{i}", 384, "english", hnsw=True)
            pipeline = chunking_pipeline(IngestConfig(), corpus.name)
            step = PluginDocumentEmbedder()
            step.use(embedder)
            pipeline.add_component("embedder", step)
            pipeline.add_component("writer", DocumentWriter(writer, policy=DuplicatePolicy.OVERWRITE))
            pipeline.connect("identity.documents", "embedder.documents")
            pipeline.connect("embedder.documents", "writer.documents")
            pipeline.run({"cleaner": {"documents": sources(corpus)}})
            before.append(time.perf_counter() - start)
        o = record("ingestion", f"plugin's Haystack path, HNSW built after the load ({n} chunks)", [n / s for s in ours], unit="chunks/s")
        w = record("ingestion", "plugin's write step alone (COPY writer, then the same indexes)", [n / s for s in write],
                   unit="chunks/s")
        c = record("ingestion", "bulk COPY of the same vectors + the same indexes", [n / s for s in copy], unit="chunks/s")
        ratio("ingestion", "plugin's write step / bulk COPY floor (throughput)", w, c)
        b = record("ingestion", "Haystack path with the HNSW index in place while writing", [n / s for s in before], unit="chunks/s")
        ratio("ingestion", "bulk COPY / plugin path (throughput)", c, o)
        ratio("ingestion", "plugin path (index after) / index before (throughput)", o, b)
    finally:
        store.stop()
        shutil.rmtree(tmp, ignore_errors=True)


def bench_queries(repeats: int, cache_dir: Path) -> None:
    from pytest_retrieval_eval.data.corpus import JsonFolder
    from pytest_retrieval_eval.hybrid.embedders import Embedder, backend_for
    from pytest_retrieval_eval.hybrid.embedding_cache import EmbeddingCache
    from pytest_retrieval_eval.engines.hybrid import HybridEngine
    from pytest_retrieval_eval.engines.keyword import KeywordEngine
    from pytest_retrieval_eval.evaluation.evaluate import evaluate_engine
    from pytest_retrieval_eval.hybrid.ingest import ingest
    from pytest_retrieval_eval.data.labeled import load_questions_cache
    from pytest_retrieval_eval.evaluation.results import RunResults
    from pytest_retrieval_eval.hybrid.store.embedded import EmbeddedPostgres
    from pytest_retrieval_eval.gate.verdict import verdict_of

    print("queries (bundled corpus), question embedding, plugin overhead", flush=True)
    corpus = JsonFolder(REPO / "corpus").load()
    labeled = load_questions_cache(REPO / "questions.cache.json")
    questions = [q.question for q in labeled]
    model = Embedder(backend_for("minilm"), None)  # no cache: real model calls
    model.embed(["warm up"])
    one = [_time(lambda: [model.embed([q]) for q in questions]) for _ in range(repeats)]
    batch = [_time(lambda: model.embed(questions)) for _ in range(repeats)]
    o = record("queries", f"embed {len(questions)} questions one call each (MiniLM)", one)
    b = record("queries", f"embed {len(questions)} questions in one batch (MiniLM)", batch)
    ratio("queries", "one at a time / batched", o, b)
    store = EmbeddedPostgres()
    store.start()
    try:
        index = ingest(corpus, store, Embedder(backend_for("minilm"), EmbeddingCache(cache_dir / "embeddings.sqlite3")))
        keyword = KeywordEngine(corpus)
        hybrid = HybridEngine(index)
        for name, engine in (("keyword", keyword), ("hybrid", hybrid)):
            results = [evaluate_engine(engine, labeled) for _ in range(repeats)]
            qps = [len(questions) / sum(r.seconds for r in res.results) for res in results]
            record("queries", f"{name} engine, questions prepared", qps, unit="queries/s")
        # the same two retrievals and the fusion in raw SQL: what the Haystack components cost on top
        hybrid.prepare(questions)
        raw = raw_hybrid(store.dsn, index.table, {q: hybrid._vector_of(q) for q in questions})
        through = record("queries", "hybrid through Haystack's retriever components, per query",
                         [_time(lambda: [hybrid.retrieve(q, 100) for q in questions]) / len(questions)
                          for _ in range(repeats)], unit="s")
        direct = record("queries", "the same two retrievals + RRF in raw SQL, per query",
                        [_time(lambda: [raw(q) for q in questions]) / len(questions) for _ in range(repeats)], unit="s")
        ratio("queries", "Haystack components / raw SQL (per query)", through, direct)
        # plugin overhead: everything around the engines' own calls (retrieve(), and prepare(),
        # which embeds the questions: the engine's work), timed by the plugin's own clock
        evals, inside, total, around = [], [], [], {"keyword": [], "hybrid": []}
        for _ in range(repeats):
            start = time.perf_counter()
            evals = []
            for name, e in (("keyword", keyword), ("hybrid", hybrid)):
                began = time.perf_counter()
                evals.append(evaluate_engine(e, labeled, known_ids=corpus,
                                             context={"corpus": corpus.name, "corpus_fingerprint": corpus.fingerprint}))
                took = time.perf_counter() - began
                own = sum(r.seconds for r in evals[-1].results) + evals[-1].measured["prepare_seconds"]
                around[name].append((took - own) / took)
            run = RunResults(evals)
            verdict_of(run, measures=["hit@1", "hit@3", "hit@5", "hit@10", "hit@20", "mrr"])
            total.append(time.perf_counter() - start)
            inside.append(sum(sum(r.seconds for r in e.results) + e.measured["prepare_seconds"] for e in evals))
        t = record("overhead", "evaluate + score + CIs + significance, both engines", total)
        i = record("overhead", "of which inside the engines' prepare() and retrieve()", inside)
        rows.append({"section": "overhead", "name": "plugin share of evaluation time (scoring included)",
                     "ratio": (t - i) / t})
        print(f"  {'plugin share of evaluation time (scoring included)':58} {100 * (t - i) / t:9.1f} %", flush=True)
        for name, shares in around.items():
            share = statistics.median(shares)
            label = f"plugin share of evaluating {name} (around its calls)"
            rows.append({"section": "overhead", "name": label, "ratio": share})
            print(f"  {label:58} {100 * share:9.1f} %", flush=True)
    finally:
        store.stop()


def raw_hybrid(dsn: str, table: str, vectors: dict):
    """Keyword (plainto_tsquery, ts_rank_cd) and vector (cosine) top 50 with the same org/dataset
    filter, fused by reciprocal rank: the floor under the hybrid engine's query path."""
    import numpy as np
    import psycopg
    from pgvector.psycopg import register_vector

    conn = psycopg.connect(dsn, autocommit=True)
    register_vector(conn)
    qualified = f'retrieval_eval."{table}"'
    where = "meta->>'org_id' = 'eval' AND meta->>'dataset' = 'corpus'"
    keyword = (f"SELECT id, meta->>'doc_id' FROM {qualified}, plainto_tsquery('english', %s) query WHERE "
               f"to_tsvector('english', content) @@ query AND {where} ORDER BY "
               "ts_rank_cd(to_tsvector('english', content), query) DESC LIMIT 50")
    vector = f"SELECT id, meta->>'doc_id' FROM {qualified} WHERE {where} ORDER BY embedding <=> %s LIMIT 50"
    arrays = {q: np.asarray(v, dtype=np.float32) for q, v in vectors.items()}

    def run(query: str) -> list[str]:
        scores: dict[str, float] = {}
        docs: dict[str, str] = {}
        for rows in (conn.execute(keyword, (query,)).fetchall(), conn.execute(vector, (arrays[query],)).fetchall()):
            for rank, (chunk, doc) in enumerate(rows):
                scores[chunk] = scores.get(chunk, 0.0) + 1.0 / (61 + rank)
                docs[chunk] = doc
        return list(dict.fromkeys(docs[c] for c in sorted(scores, key=lambda c: -scores[c])))

    return run


def bench_memory() -> None:
    from pytest_retrieval_eval.data.corpus import JsonFolder
    from pytest_retrieval_eval.engines.keyword import KeywordEngine
    from pytest_retrieval_eval.analysis.result import EvaluationResult
    from pytest_retrieval_eval.evaluation.evaluate import evaluate_engine
    from pytest_retrieval_eval.data.labeled import LabeledSet
    from pytest_retrieval_eval.types import LabeledQuery

    print("memory: keyword engine + metrics, growth per query", flush=True)
    corpus = JsonFolder(REPO / "corpus").load()
    engine = KeywordEngine(corpus)
    words = " ".join(d.title for d in corpus).split()
    rng = random.Random(3)
    peaks = {}
    small, large = sized((2_000, 20_000), (200, 2_000), (50, 500))
    for n in (small, large):
        labeled = LabeledSet(tuple(LabeledQuery(f"q{i}", " ".join(rng.sample(words, 6)), {corpus.docs[i % len(corpus)].doc_id: 1})
                                   for i in range(n)))
        tracemalloc.start()
        result = EvaluationResult.of(evaluate_engine(engine, labeled, depth=20))  # what a test asserts on
        result.hit_at(5), result.mrr()
        peaks[n] = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    per_query = (peaks[large] - peaks[small]) / (large - small)
    label = f"peak traced bytes per query ({small:,} -> {large:,} queries, depth 20)"
    rows.append({"section": "memory", "name": label, "median": per_query, "unit": "B", "peaks": peaks})
    print(f"  {label:58} {per_query:10.0f} B", flush=True)


def user_project(folder: Path, floor: float = 0.2) -> Path:
    """A team's project as the README shows one: a test file, nothing else."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "test_retrieval.py").write_text(
        "import pytest\n\n\n@pytest.mark.retrieval\ndef test_quality(retrieval_results):\n"
        f"    assert retrieval_results.hit_at(5) >= {floor}\n")
    return folder


def bench_scifact(cold_runs: int, repeats: int, cache: Path | None = None, folder: Path = SCIFACT) -> None:
    """SciFact end to end, from a user's project: cold, on ONNX Runtime and on the torch path
    (``--retrieval-embedder minilm:torch``) alternating; warm restoring the store snapshot; warm
    with snapshots off (every session re-ingests, as the first landing's code did: that code can
    no longer read today's embedding cache, whose vectors carry checksums); the hybrid setup in
    process against its floor
    (PostgreSQL start + snapshot restore); and -n 2 with the queries sharded over the workers.
    ``folder``: another BEIR folder (``--quick`` gives a small synthetic one)."""
    if not folder.is_dir():
        print(f"SciFact: skipped, {folder} not found", flush=True)
        rows.append({"section": "scifact", "name": "skipped", "reason": f"{folder} not found"})
        return
    print(f"BEIR {folder.name}: keyword + hybrid engines, from a project of one test file", flush=True)
    tmp = Path(tempfile.mkdtemp(prefix="retrieval-bench-"))
    project = user_project(tmp / "project", floor=sized(0.2, 0.0))  # a synthetic folder's keyword engine finds little
    cmd = PYTEST + ["-p", "no:langsmith_plugin", "-m", "retrieval", f"--retrieval-corpus={folder}", "--retrieval-report"]
    try:
        cold, cold_torch = [], []
        for i in range(cold_runs):  # alternating: the machine's drift falls on both
            cold.append(child(cmd + [f"--retrieval-cache-dir={tmp / f'c{i}'}"], cwd=project))
            if not QUICK:  # quick: the embedding section has run a cold torch process already (26 s saved)
                cold_torch.append(child(cmd + [f"--retrieval-cache-dir={tmp / f't{i}'}",
                                               "--retrieval-embedder=minilm:torch"], cwd=project))
        cache = cache or tmp / "c0"
        if not cold:
            child(cmd + [f"--retrieval-cache-dir={cache}"], cwd=project)  # embeddings and the snapshot
        warm = [child(cmd + [f"--retrieval-cache-dir={cache}"], cwd=project) for _ in range(repeats)]
        w = record("scifact", "warm run, store restored from its snapshot, wall", [x[0] for x in warm])
        record("scifact", "warm run, peak RSS", [x[1] / 1024 for x in warm], unit="MB")
        reingest = [child(cmd + [f"--retrieval-cache-dir={cache}", "--retrieval-store-cache-mb=0"], cwd=project)
                    for _ in range(repeats)]
        r = record("scifact", "warm run re-ingesting (today's code, snapshots off), wall", [x[0] for x in reingest])
        ratio("scifact", "re-ingesting / restoring (warm, end to end)", r, w)
        if cold:
            c = record("scifact", "cold run, MiniLM on ONNX Runtime (the export made once before), wall",
                       [x[0] for x in cold])
            record("scifact", "cold run, peak RSS", [x[1] / 1024 for x in cold], unit="MB")
            if cold_torch:
                t = record("scifact", "cold run, MiniLM on torch (--retrieval-embedder minilm:torch), wall",
                           [x[0] for x in cold_torch])
                record("scifact", "cold run on torch, peak RSS", [x[1] / 1024 for x in cold_torch], unit="MB")
                ratio("scifact", "cold on torch / cold on ONNX Runtime", t, c)
            ratio("scifact", "cold / warm", c, w)
            for name, runs in (("cold table, ONNX Runtime", cold), ("cold table, torch", cold_torch)):
                if not runs:
                    continue
                lines = [l for l in runs[-1][2].splitlines() if l.startswith(("engine", "hybrid", "keyword"))]
                rows.append({"section": "scifact", "name": name, "lines": lines})
                print(f"  {name}:\n" + "\n".join("    " + l for l in lines), flush=True)
        setup, floor = _scifact_setup(cache, repeats, folder)
        a = record("scifact", "hybrid setup in process: store start + restore + index ready", setup)
        b = record("scifact", "floor: PostgreSQL start + snapshot restore", floor)
        ratio("scifact", "hybrid setup / floor", a, b)
        sharded = [child(cmd + [f"--retrieval-cache-dir={cache}", "-n", "2", "--retrieval-shard"], cwd=project)
                   for _ in range(repeats)]
        n2 = record("scifact", "warm run, -n 2 --retrieval-shard, wall", [x[0] for x in sharded])
        ratio("scifact", "-n 0 / -n 2 sharded (warm)", w, n2)
        table = [l for l in warm[-1][2].splitlines() if l.startswith(("engine", "hybrid", "keyword"))]
        rows.append({"section": "scifact", "name": "table", "lines": table})
        print("\n".join("  " + l for l in table), flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _scifact_setup(cache: Path, repeats: int, folder: Path = SCIFACT) -> tuple[list[float], list[float]]:
    """In process: what the session does to have a hybrid index, against its floor."""
    from pytest_retrieval_eval.data.corpus import open_corpus
    from pytest_retrieval_eval.hybrid.embedders import Embedder, backend_for
    from pytest_retrieval_eval.hybrid.embedding_cache import EmbeddingCache
    from pytest_retrieval_eval.hybrid.ingest import IngestConfig, restore_index, table_name
    from pytest_retrieval_eval.hybrid.snapshots import Snapshots, snapshot_key
    from pytest_retrieval_eval.hybrid.store.embedded import EmbeddedPostgres

    corpus = open_corpus(folder).load()
    embedder = Embedder(backend_for("minilm"), EmbeddingCache(cache / "embeddings.sqlite3"))
    config = IngestConfig()
    table = table_name(corpus, config, embedder)
    snapshots = Snapshots(cache / "snapshots", 1 << 20)
    setup, floor = [], []
    for _ in range(repeats):
        store = EmbeddedPostgres()
        start = time.perf_counter()
        store.start()
        found = snapshots.find(snapshot_key(table, store.version))
        store.restart_from(found.data)
        floor.append(time.perf_counter() - start)
        store.stop()
        store = EmbeddedPostgres()
        start = time.perf_counter()
        store.start()
        found = snapshots.find(snapshot_key(table, store.version))
        store.restart_from(found.data)
        entry = found.manifest()["tables"][table]
        restore_index(corpus, store, embedder, config, table, found.chunks(table), entry.get("lint"), found.key)
        setup.append(time.perf_counter() - start)
        store.stop()
    return setup, floor


EMBED_CHILD = """
import json, sys, time
start = time.perf_counter()
from pathlib import Path
import numpy as np
from pytest_retrieval_eval.hybrid.embedders import backend_for
texts = json.loads(Path(sys.argv[2]).read_text())
backend = backend_for(sys.argv[1], model_cache=Path(sys.argv[3]))
backend.embed(texts[:1])
loaded = time.perf_counter()
vectors = backend.embed(texts)
done = time.perf_counter()
np.save(sys.argv[4], vectors)
print(json.dumps({"load": loaded - start, "embed": done - loaded, "torch": "torch" in sys.modules,
                  "identity": backend.identity}))
"""


def bench_embedding(repeats: int, texts_wanted: int = 400) -> None:
    """The built-in MiniLM cold, from a fresh process to the vectors: on ONNX Runtime (the
    export made once beforehand, as a machine has it after its first run) against the torch
    path, in the same run, alternating; each one's steady throughput too, and every vector's
    cosine to torch's. Two sets of texts: what a cold run of the bundled eval embeds (its 38
    chunks and 68 questions), and SciFact's first documents chunked as the plugin chunks them."""
    from pytest_retrieval_eval.data.chunking import chunk_corpus
    from pytest_retrieval_eval.data.corpus import BeirFolder, Corpus, JsonFolder
    from pytest_retrieval_eval.data.labeled import load_questions_cache
    from pytest_retrieval_eval.hybrid.onnx_embedder import default_model_cache

    import numpy as np

    bundled = ([c.text for c in chunk_corpus(JsonFolder(REPO / "corpus").load())]
               + [q.question for q in load_questions_cache(REPO / "questions.cache.json")])
    sets = [(f"bundled eval ({len(bundled)} texts)", bundled[:sized(len(bundled), 16, 8)])]
    if SCIFACT.is_dir() and not QUICK:
        corpus = Corpus(BeirFolder(SCIFACT).load().docs[:texts_wanted], name="scifact")
        sets.append((f"SciFact ({texts_wanted} chunks)", [c.text for c in chunk_corpus(corpus)][:texts_wanted]))
    print("embedding: the built-in MiniLM, cold (a fresh process each), ONNX Runtime against torch", flush=True)
    tmp = Path(tempfile.mkdtemp(prefix="retrieval-bench-embed-"))
    try:
        models = tmp / "models" if not QUICK else default_model_cache()  # quick: the machine's export, if made

        def run(spec: str, texts: Path, out: str) -> tuple[float, dict]:
            seconds, _, stdout = child([sys.executable, "-c", EMBED_CHILD, spec, str(texts), str(models), str(tmp / out)])
            return seconds, json.loads(stdout.strip().splitlines()[-1])

        for label, texts in sets:
            (tmp / "texts.json").write_text(json.dumps(texts))
            if label == sets[0][0]:
                export, _ = run("minilm:onnx", tmp / "texts.json", "export.npy")  # the one-time export, then the texts
                record("embedding", "ONNX export once per machine (torch + optimum), then the same texts"
                       + (" (quick: the machine's export, made earlier if at all)" if QUICK else ""), [export])
            cold = {"minilm:torch": [], "minilm:onnx": []}
            steady = {"minilm:torch": [], "minilm:onnx": []}
            imported = {}
            for _ in range(repeats):
                for spec in cold:
                    seconds, info = run(spec, tmp / "texts.json", f"{spec.split(':')[1]}.npy")
                    cold[spec].append(len(texts) / seconds)
                    steady[spec].append(len(texts) / info["embed"])
                    imported[spec] = info["torch"]
            t = record("embedding", f"{label}: torch path (sentence-transformers), cold: process start to vectors",
                       cold["minilm:torch"], unit="texts/s")
            o = record("embedding", f"{label}: ONNX Runtime, cold (torch imported: {imported['minilm:onnx']})",
                       cold["minilm:onnx"], unit="texts/s")
            ratio("embedding", f"{label}: cold throughput, ONNX / torch", o, t)
            ts = record("embedding", f"{label}: torch path, steady (model loaded)", steady["minilm:torch"], unit="texts/s")
            os_ = record("embedding", f"{label}: ONNX Runtime, steady (model loaded)", steady["minilm:onnx"],
                         unit="texts/s")
            ratio("embedding", f"{label}: steady throughput, ONNX / torch", os_, ts)
            a, b = np.load(tmp / "torch.npy"), np.load(tmp / "onnx.npy")
            cosines = (a * b).sum(axis=1)
            name = f"{label}: cosine of each ONNX vector to torch's"
            rows.append({"section": "embedding", "name": name, "min": float(cosines.min()), "mean": float(cosines.mean())})
            print(f"  {name + ': min':58} {cosines.min():10.7f}  mean {cosines.mean():.7f}", flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def bench_scaling(repeats: int) -> None:
    """Cost against corpus size: writing and querying 1k and 5k SciFact documents (hashing
    vectors, so the embedding model's share is left out: it is linear in chunks, see cold runs)."""
    if not SCIFACT.is_dir():
        return
    from pytest_retrieval_eval.data.corpus import BeirFolder, Corpus
    from pytest_retrieval_eval.hybrid.embedders import Embedder, HashingBackend
    from pytest_retrieval_eval.hybrid.embedding_cache import EmbeddingCache
    from pytest_retrieval_eval.engines.hybrid import HybridEngine
    from pytest_retrieval_eval.engines.keyword import KeywordEngine
    from pytest_retrieval_eval.evaluation.evaluate import evaluate_engine
    from pytest_retrieval_eval.hybrid.ingest import IngestConfig, ingest
    from pytest_retrieval_eval.hybrid.store.embedded import EmbeddedPostgres

    provider = BeirFolder(SCIFACT)
    full, labeled = provider.load(), provider.labeled()
    if QUICK:  # a fifth of the queries: each section only has to run
        labeled = dataclasses.replace(labeled, queries=labeled.queries[:sized(300, 60, 15)])
    print(f"scaling: SciFact subsets, {len(labeled)} test queries", flush=True)
    tmp = Path(tempfile.mkdtemp(prefix="retrieval-bench-"))
    store = EmbeddedPostgres()
    store.start()
    try:
        embedder = Embedder(HashingBackend(384), EmbeddingCache(tmp / "e.sqlite3"))
        for n in sized((1000, len(full)), (100, 300), (30, 60)):
            corpus = Corpus(full.docs[:n], name=f"scifact-{n}")
            ingest(corpus, store, embedder, IngestConfig(org_id="warmup"))  # fill the vector cache
            writes = [ingest(corpus, store, embedder, IngestConfig(org_id=f"s{n}-{i}")) for i in range(repeats)]
            record("scaling", f"{n} docs: ingest ({len(writes[0].chunks)} chunks)", [w.seconds for w in writes])
            hybrid, keyword = HybridEngine(writes[0]), KeywordEngine(corpus)
            for name, engine in (("hybrid", hybrid), ("keyword", keyword)):
                res = [evaluate_engine(engine, labeled) for _ in range(repeats)]
                record("scaling", f"{n} docs: {name}, {len(labeled)} queries", [sum(r.seconds for r in x.results) for x in res])
    finally:
        store.stop()
        shutil.rmtree(tmp, ignore_errors=True)


def synthetic_beir(folder: Path, docs: int, queries: int = 300, seed: int = 7) -> Path:
    """A BEIR folder of ``docs`` documents of 60 to 180 words (one chunk each at the default
    400-word windows) drawn from SciFact's word frequencies (the bundled corpus's without
    SciFact), and ``queries`` questions of six words taken from one document each, that document
    judged relevant. Written as it is made: memory does not grow with ``docs``."""
    import re
    from collections import Counter

    import numpy as np

    if SCIFACT.is_dir():
        texts = (json.loads(line)["text"] for line in (SCIFACT / "corpus.jsonl").open(encoding="utf-8"))
    else:
        texts = (json.loads(p.read_text())["content"] for p in (REPO / "corpus").glob("*.json"))
    counts = Counter(w for t in texts for w in re.findall(r"[a-z]{3,}", t.lower()))
    words = np.array(sorted(counts))
    weights = np.array([counts[w] for w in words], dtype=np.float64)
    weights /= weights.sum()
    rng = np.random.default_rng(seed)
    asked = set(rng.choice(docs, size=min(queries, docs), replace=False).tolist())
    (folder / "qrels").mkdir(parents=True, exist_ok=True)
    questions = []
    with (folder / "corpus.jsonl").open("w", encoding="utf-8") as out:
        for start in range(0, docs, 10_000):
            block = min(10_000, docs - start)
            lengths = rng.integers(60, 181, size=block)
            drawn = rng.choice(len(words), size=int(lengths.sum()) + 6 * block, p=weights)
            at = 0
            for i in range(block):
                body = words[drawn[at:at + lengths[i]]]
                title = words[drawn[at + lengths[i]:at + lengths[i] + 6]]
                at += lengths[i] + 6
                doc_id = f"s{start + i}"
                out.write(json.dumps({"_id": doc_id, "title": " ".join(title), "text": " ".join(body)}) + "\n")
                if start + i in asked:
                    questions.append((doc_id, " ".join(rng.choice(body, size=6, replace=False))))
    with (folder / "queries.jsonl").open("w", encoding="utf-8") as out:
        for n, (_, text) in enumerate(questions):
            out.write(json.dumps({"_id": f"q{n}", "text": text}) + "\n")
    with (folder / "qrels" / "test.tsv").open("w", encoding="utf-8") as out:
        out.write("query-id\tcorpus-id\tscore\n")
        for n, (doc_id, _) in enumerate(questions):
            out.write(f"q{n}\t{doc_id}\t1\n")
    return folder


SCALE_TEST = ("import pytest\n\n\n@pytest.mark.retrieval\ndef test_quality(retrieval_results):\n"
              "    assert retrieval_results.hit_at(5) >= 0.0\n")


def _growth(sizes: list[int], values: list[float]) -> str:
    """How a figure grows between the two largest sizes: the exponent of n, named."""
    import math

    if len(sizes) < 2 or not min(values[-2:]) > 0:  # nan too
        return "-"

    b = math.log(values[-1] / values[-2]) / math.log(sizes[-1] / sizes[-2])
    name = ("flat" if b < 0.25 else "sublinear" if b < 0.85 else "linear" if b < 1.15 else "n log n" if b < 1.35
            else "superlinear")
    return f"n^{b:.2f} ({name})"


def bench_scale(sizes: list[int]) -> None:
    """The plugin at corpus sizes a real knowledge base has: a team's project evaluating a
    synthetic BEIR folder of N one-chunk documents (``synthetic_beir``) with the keyword and
    hybrid engines, hashing vectors so the model is out of the figure. Cold (ingestion, indexes,
    snapshot kept) then warm (snapshot restored), each a fresh pytest session: wall, the
    session's peak RSS, ingestion and index times as the session prints them, the snapshot's
    size, p50/p95 per query per engine (``--retrieval-latency``), results.json bytes a query.
    Each figure's growth between the two largest sizes is named."""
    import re

    print(f"scale: synthetic BEIR folders of {', '.join(f'{n:,}' for n in sizes)} chunks, keyword + hybrid, "
          "hashing vectors", flush=True)
    figures: dict[str, list[float]] = {}
    tmp = Path(tempfile.mkdtemp(prefix="retrieval-bench-scale-"))
    try:
        for n in sizes:
            folder = synthetic_beir(tmp / f"beir-{n}", n, queries=sized(300, 60, 10))
            project = tmp / f"project-{n}"
            project.mkdir()
            (project / "test_retrieval.py").write_text(SCALE_TEST)
            cache = tmp / f"cache-{n}"
            cmd = PYTEST + ["-p", "no:langsmith_plugin", "-m", "retrieval", f"--retrieval-corpus={folder}",
                            "--retrieval-embedder=hashing", f"--retrieval-cache-dir={cache}", "--retrieval-latency",
                            "--retrieval-report", f"--retrieval-report-dir={project / 'report'}",
                            "--retrieval-store-cache-mb=100000"]
            cold_wall, cold_rss, out = child(cmd, cwd=project)
            written = re.search(r"written (\d+) chunks in ([\d.]+) s; indexes built in ([\d.]+) s", out)
            results = json.loads((project / "report" / "results.json").read_text())
            snapshot = sum(p.stat().st_size for p in (cache / "snapshots").rglob("*") if p.is_file())
            warm_wall, warm_rss, _ = child(cmd, cwd=project)
            latency = {e["engine"]: e.get("latency", {}).get("seconds", {}) for e in results["evaluations"]}
            per_query = len((project / "report" / "results.json").read_bytes()) / sum(
                len(e.get("queries", [])) or 1 for e in results["evaluations"])
            row = {"cold wall (s)": cold_wall, "cold peak RSS (MB)": cold_rss / 1024,
                   "ingestion: write (s)": float(written.group(2)) if written else float("nan"),
                   "ingestion: indexes (s)": float(written.group(3)) if written else float("nan"),
                   "snapshot (MB)": snapshot / 2 ** 20, "warm wall (s)": warm_wall, "warm peak RSS (MB)": warm_rss / 1024,
                   "hybrid p50 (ms)": 1000 * latency.get("hybrid", {}).get("p50", float("nan")),
                   "hybrid p95 (ms)": 1000 * latency.get("hybrid", {}).get("p95", float("nan")),
                   "keyword p50 (ms)": 1000 * latency.get("keyword", {}).get("p50", float("nan")),
                   "keyword p95 (ms)": 1000 * latency.get("keyword", {}).get("p95", float("nan")),
                   "results.json bytes a query": per_query}
            for name, value in row.items():
                figures.setdefault(name, []).append(value)
            print(f"  {n:>9,} chunks: " + ", ".join(f"{k} {v:.1f}" for k, v in row.items()), flush=True)
            shutil.rmtree(cache, ignore_errors=True)
            shutil.rmtree(folder, ignore_errors=True)
        header = ["figure"] + [f"{n:,}" for n in sizes] + ["growth"]
        table = [header] + [[name] + [f"{v:.1f}" for v in values] + [_growth(sizes, values)]
                            for name, values in figures.items()]
        widths = [max(len(r[i]) for r in table) for i in range(len(header))]
        lines = ["  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths))) for r in table]
        print("\n".join("  " + line for line in lines), flush=True)
        rows.append({"section": "scale", "name": "table", "lines": lines})
        for name, values in figures.items():
            rows.append({"section": "scale", "name": name, "sizes": sizes, "values": values,
                         "growth": _growth(sizes, values)})
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


#: the dormant section's plain suite: FILES test files of TESTS plain tests each
DORMANT_FILES, DORMANT_TESTS = 10, 20
#: the module the dormant section's last row loads with -p in place of the plugin
EMPTY_PLUGIN = "retrieval_bench_empty_plugin"
#: a conftest that does nothing retrieval-related: a fixture, an autouse fixture and a hook
PLAIN_CONFTEST = """import pytest

@pytest.fixture
def numbers():
    return list(range(10))

@pytest.fixture(autouse=True)
def fresh_env(monkeypatch):
    monkeypatch.setenv("APP_MODE", "test")

def pytest_collection_modifyitems(items):
    items.sort(key=lambda item: item.nodeid)
"""


def _plain_project(prefix: str, conftest: str = "", ini: str = "") -> Path:
    """A project whose tests never ask for retrieval: DORMANT_FILES x DORMANT_TESTS plain tests
    (tiny: 2 x 5)."""
    folder = Path(tempfile.mkdtemp(prefix=prefix))
    files, tests = sized((DORMANT_FILES, DORMANT_TESTS), (DORMANT_FILES, DORMANT_TESTS), (2, 5))
    for f in range(files):
        (folder / f"test_plain_{f}.py").write_text("".join(
            f"def test_sum_{t}():\n    assert sum(range({t})) == {t * (t - 1) // 2}\n\n" for t in range(tests)))
    if conftest:
        (folder / "conftest.py").write_text(conftest)
    if ini:
        (folder / "pytest.ini").write_text(ini)
    return folder


def _timed_child(cmd: list[str], cwd: Path, env: dict) -> tuple[float, float]:
    """Wall seconds and CPU seconds (user + system) of one child run."""
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, check=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def bench_dormant(repeats: int) -> None:
    """What installing the plugin costs a project whose tests never ask for it (issue 43: at most
    1.05x): 200 plain tests run with the plugin and with ``-p no:retrieval_eval``, interleaved, in
    fresh processes; the same with a conftest of the project's own, with the plugin configured in
    the ini file (settings checked at start, the plugin still asleep), and collection alone
    (``--co``). Then pytest alone (plugin autoload off) against pytest + the plugin (``-p``): the
    strictest denominator, with no other plugin's start to hide in; and the same against an empty
    module loaded by ``-p``, which takes pytest's own cost of loading any plugin that way out."""
    print(f"dormant plugin: {DORMANT_FILES * DORMANT_TESTS} plain tests, plugin on / off", flush=True)
    ini = "[pytest]\nretrieval_corpus = corpus\nretrieval_thresholds =\n    hit@5>=0.8\n    errors<=0\n"
    projects = {"plain": _plain_project("retrieval-bench-dormant-"),
                "conftest": _plain_project("retrieval-bench-dormant-conftest-", conftest=PLAIN_CONFTEST),
                "ini": _plain_project("retrieval-bench-dormant-ini-", ini=ini)}
    base = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    # as a user's shell runs it: bytecode cached (see ``child``), not under CI, no plugin settings
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONDONTWRITEBYTECODE", "CI") and not k.startswith(("RETRIEVAL_EVAL_", "PYTEST_"))}
    alone = {**env, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    #: (name, project, extra args, environment) with the plugin off and on
    cases = [
        ("200 plain tests", "plain", [], env, ["-p", "no:retrieval_eval"], []),
        ("the same, a conftest of the project's own", "conftest", [], env, ["-p", "no:retrieval_eval"], []),
        ("the same, plugin configured in pytest.ini", "ini", [], env, ["-p", "no:retrieval_eval"], []),
        ("collection only (--co)", "plain", ["--co"], env, ["-p", "no:retrieval_eval"], []),
        ("pytest alone (autoload off) / + the plugin (-p)", "plain", [], alone, [], ["-p", "pytest_retrieval_eval.plugin"]),
        ("the same, collection only (--co)", "plain", ["--co"], alone, [], ["-p", "pytest_retrieval_eval.plugin"]),
    ]
    # pytest's own handling of a -p plugin (an entry-point scan, registration) costs an empty module as
    # much as this plugin (9.5 ms against 9.7 ms, medians of 21 on 2026-12-03): that row takes it out
    (projects["plain"] / f"{EMPTY_PLUGIN}.py").write_text('"""A plugin that does nothing."""\n')
    cases.append(("the same, against an empty plugin (-p): the plugin's own cost", "plain", [], alone,
                  ["-p", EMPTY_PLUGIN], ["-p", "pytest_retrieval_eval.plugin"]))
    if TINY:  # one case with autoload, one with -p: the loop below is the same for each
        cases = [cases[1], cases[-1]]
    times = {(name, side): ([], []) for name, *_ in cases for side in ("off", "on")}
    try:
        for round_ in range(sized(max(15, repeats), repeats)):
            for name, project, extra, environment, off, on in cases:
                sides = (("off", off), ("on", on)) if round_ % 2 == 0 else (("on", on), ("off", off))
                for side, flags in sides:
                    wall, cpu = _timed_child(base + extra + flags, projects[project], environment)
                    times[(name, side)][0].append(wall)
                    times[(name, side)][1].append(cpu)
    finally:
        for folder in projects.values():
            shutil.rmtree(folder, ignore_errors=True)
    for name, *_ in cases:
        (off_wall, off_cpu), (on_wall, on_cpu) = times[(name, "off")], times[(name, "on")]
        b = record("dormant", f"{name}: plugin off, wall", off_wall)
        a = record("dormant", f"{name}: plugin on, wall", on_wall)
        ratio("dormant", f"{name}: on / off, wall (medians)", a, b)
        ratio("dormant", f"{name}: on / off, wall (minima)", min(on_wall), min(off_wall))
        ratio("dormant", f"{name}: on / off, CPU (medians)", statistics.median(on_cpu), statistics.median(off_cpu))


def json_server(answer, delay: float = 0.05):
    """A local server on 127.0.0.1 that answers every GET and POST with ``answer(path, body)``
    as JSON after ``delay`` seconds (a remote service's latency); (the server, its base URL)."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def reply(self, body):
            time.sleep(delay)
            data = json.dumps(answer(self.path, body)).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            self.reply(None)

        def do_POST(self):
            self.reply(json.loads(self.rfile.read(int(self.headers["content-length"]))))

    class Server(ThreadingHTTPServer):
        daemon_threads = True
        request_queue_size = 128

    server = Server(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


def bench_http_concurrency(repeats: int) -> None:
    """An engine behind HTTP answering in 50 ms: 300 queries serial against 16 at a time, the
    whole user path (adapter, evaluation, results.json), results compared byte for byte."""
    from urllib.parse import parse_qs, urlparse

    from pytest_retrieval_eval import adapters
    from pytest_retrieval_eval.data.labeled import LabeledSet
    from pytest_retrieval_eval.evaluation.evaluate import evaluate_engine
    from pytest_retrieval_eval.evaluation.results import RunResults
    from pytest_retrieval_eval.archive.saved import results_json
    from pytest_retrieval_eval.gate.verdict import verdict_of
    from pytest_retrieval_eval.types import LabeledQuery

    n = sized(300, 40, 12)
    print(f"HTTP engine: {n} queries, 50 ms per call, serial vs --retrieval-concurrency 16", flush=True)

    def search(path: str, body: object) -> dict:
        n = int(parse_qs(urlparse(path).query)["q"][0].split()[-1])
        return {"hits": [{"id": f"d{(n * 7 + i) % 500}"} for i in range(10)]}

    server, root = json_server(search)
    url = f"{root}/search?q={{query}}&k={{k}}"
    labeled = LabeledSet(tuple(LabeledQuery(f"q{i}", f"question number {i}", {f"d{(i * 7) % 500}": 1})
                               for i in range(n)), name="synthetic")
    outputs, times = {}, {1: [], 16: []}
    try:
        for _ in range(max(1, repeats // 2)):
            for width in (1, 16):
                engine = adapters.http(url, name="search-api", ids="hits[].id", concurrency=width)
                start = time.perf_counter()
                result = evaluate_engine(engine, labeled)
                result.engine_info = {k: v for k, v in result.engine_info.items() if k != "concurrency"}
                outputs[width] = results_json(verdict_of(RunResults([result])))
                times[width].append(time.perf_counter() - start)
    finally:
        server.shutdown()
    a = record("http", f"{n} queries, one at a time", times[1])
    b = record("http", f"{n} queries, 16 at a time", times[16])
    ratio("http", "serial / concurrent", a, b)
    same = outputs[1] == outputs[16]
    rows.append({"section": "http", "name": "results.json identical", "value": same})
    print(f"  {'results.json identical':58} {same}", flush=True)
    if not same:
        raise SystemExit("concurrent results differ from the serial run's")

    # a team's OpenAI-compatible embedding server answering each batch in 50 ms
    from pytest_retrieval_eval.hybrid.embedders import Embedder, OpenAIBackend

    def embeddings(path: str, body: dict) -> dict:
        return {"data": [{"index": i, "embedding": [float(len(t) % 7), 1.0, float(i % 3)]}
                         for i, t in enumerate(body["input"])]}

    batches = sized(40, 16, 4)
    texts = [f"passage {i} " + "word " * (i % 13) for i in range(64 * batches)]
    server, root = json_server(embeddings)
    taken, vectors = {1: [], 8: []}, {}
    try:
        for _ in range(max(1, repeats // 2)):
            for width in (1, 8):
                embedder = Embedder(OpenAIBackend("m", url=root, concurrency=width), None)
                embedder.embed(["warm"])  # the client is made once
                start = time.perf_counter()
                vectors[width] = embedder.embed(texts)
                taken[width].append(time.perf_counter() - start)
    finally:
        server.shutdown()
    a = record("http", f"embedder, {batches} batches of 64, one at a time", taken[1])
    b = record("http", f"embedder, {batches} batches of 64, 8 in flight", taken[8])
    ratio("http", "embedder serial / 8 in flight", a, b)
    if not (vectors[1] == vectors[8]).all():
        raise SystemExit("the concurrent embedder's vectors differ from the serial run's")


def bench_canary(repeats: int) -> None:
    """The drift canaries' cost in a warm run: the bundled eval on an OpenAI-compatible embedding
    server answering in 50 ms (every embedding cached), against the canary check alone, timed in
    process as a new session makes it (a new cache connection, a new client: one request of the
    five canary texts, the reference read, compared)."""
    import threading

    from pytest_retrieval_eval.hybrid.canaries import check
    from pytest_retrieval_eval.hybrid.embedders import OpenAIBackend, backend_for
    from pytest_retrieval_eval.hybrid.embedding_cache import EmbeddingCache

    model, lock = backend_for("minilm"), threading.Lock()  # the server runs the built-in MiniLM: the eval passes

    def embeddings(path: str, body: dict) -> dict:
        with lock:
            vectors = model.embed(body["input"])
        return {"data": [{"index": i, "embedding": v.tolist()} for i, v in enumerate(vectors)]}

    print("drift canaries: the bundled eval, warm, embedder openai:m at a MiniLM server answering in 50 ms+", flush=True)
    server, root = json_server(embeddings)
    tmp = Path(tempfile.mkdtemp(prefix="retrieval-bench-canary-"))
    cmd = PYTEST + bundled_eval() + [f"--retrieval-cache-dir={tmp}", "--retrieval-embedder=openai:m"]
    env = {"RETRIEVAL_EVAL_BASE_URL": f"{root}/v1", "RETRIEVAL_EVAL_API_KEY": ""}
    try:
        child(cmd, env=env)  # cold: fills the cache and stores the canaries
        runs = [child(cmd, env=env) for _ in range(repeats)]
        if any("drifted" in out or "ingested" in out for _, _, out in runs):
            raise SystemExit("a warm run against an unchanged server drifted or ingested again")
        warm = record("canary", "warm run (openai embedder, every vector cached), wall", [w for w, _, _ in runs])
        checks = []
        for _ in range(max(3, repeats)):
            cache = EmbeddingCache(tmp / "embeddings.sqlite3")
            start = time.perf_counter()
            found = check(OpenAIBackend("m", url=f"{root}/v1"), cache)
            checks.append(time.perf_counter() - start)
            cache.close()
            if found.drifted or found.cosine != 1.0:
                raise SystemExit(f"an unchanged server must match its canaries exactly: {found}")
        canary = record("canary", "the canary check (one request of 5 texts, 50 ms server)", checks)
        ratio("canary", "canary check / warm run (must-show: under 0.05)", canary, warm)
        print(f"  {'the canary check, share of the warm run':58} {canary / warm:10.2%}", flush=True)
    finally:
        server.shutdown()
        shutil.rmtree(tmp, ignore_errors=True)


def bench_judging(repeats: int) -> None:
    """The judge: 1,000 (question, document) pairs graded against a chat-completions server that
    answers in 50 ms, one call at a time against 8 at a time (``--judge-concurrency``), each run
    from the pairs to a written judgments file; then the same pairs again, all in the file."""
    from pytest_retrieval_eval.data.judge import JudgeConfig, Pair, judge_pairs
    from pytest_retrieval_eval.data.judgments import Judgments

    n = sized(1000, 80, 16)
    print(f"judge: {n:,} pairs, 50 ms per call, serial vs 8 at a time", flush=True)

    def grade(path: str, body: dict) -> dict:
        score = len(body["messages"][-1]["content"]) % 4
        return {"choices": [{"message": {"role": "assistant", "content": f"##final score: {score}"}}]}

    server, root = json_server(grade)
    url = f"{root}/v1"
    pairs = [Pair(f"q{i // 10}", f"question {i // 10} about topic {i % 37}?", f"d{i}", f"passage {i} " * 30, f"sha{i}")
             for i in range(n)]
    folder = Path(tempfile.mkdtemp(prefix="retrieval-bench-judge-"))
    times: dict[int, list[float]] = {1: [], 8: []}
    again: list[float] = []
    try:
        for r in range(max(1, repeats // 5)):
            files = {}
            for width in (1, 8):
                files[width] = folder / f"j{width}-{r}.jsonl"
                start = time.perf_counter()
                report = judge_pairs(pairs, files[width], JudgeConfig(model="bench", url=url, concurrency=width))
                times[width].append(time.perf_counter() - start)
                if report.asked != n:
                    raise SystemExit(f"judged {report.asked} of {n} at concurrency {width}: {report.summary()}")
            start = time.perf_counter()
            if judge_pairs(pairs, files[8], JudgeConfig(model="bench", url=url)).asked:
                raise SystemExit("pairs in the file were asked again")
            again.append(time.perf_counter() - start)
            grades = [{(j.query_id, j.doc_id): j.grade for j in Judgments.load(files[w])} for w in (1, 8)]
            if grades[0] != grades[1]:
                raise SystemExit("concurrent grades differ from the serial run's")
    finally:
        server.shutdown()
        shutil.rmtree(folder, ignore_errors=True)
    a = record("judge", f"{n:,} judgments, one call at a time", times[1])
    b = record("judge", f"{n:,} judgments, 8 at a time", times[8])
    c = record("judge", f"the same {n:,} again (all in the file: nothing asked)", again)
    ratio("judge", "serial / 8 at a time", a, b)
    ratio("judge", "first judging / again from the file", b, c)


def bench_own_engine(repeats: int, warm_cache: Path | None = None) -> None:
    """A project with one engine of its own on the bundled corpus: its run alone, against the
    same project naming the built-ins too (keyword, and hybrid: PostgreSQL and the model; its
    embeddings cached by a first run, as in a warm CI). ``warm_cache``: a cache the bundled eval
    filled already (the whole bench passes the bundled section's; ``--only own`` fills its own)."""
    print("a project's own engine: alone vs beside the built-ins (warm)", flush=True)
    project = Path(tempfile.mkdtemp(prefix="retrieval-bench-own-"))
    cache = warm_cache or project / "cache"
    (project / "conftest.py").write_text(
        "class Mine:\n    name = 'mine'\n    def retrieve(self, query, k):\n        return ['battery-care']\n\n"
        "def pytest_retrieval_engines(registry, config):\n    registry.register('mine', lambda request: Mine())\n")
    (project / "test_quality.py").write_text(
        "import pytest\n\n@pytest.mark.retrieval\ndef test_runs(retrieval_results):\n    assert retrieval_results.n == 68\n")
    (project / "pytest.ini").write_text(f"[pytest]\nretrieval_corpus = {REPO / 'corpus'}\n"
                                        f"retrieval_questions = {REPO / 'questions.cache.json'}\nretrieval_cache_dir = {cache}\n")
    cmd = PYTEST + ["-m", "retrieval", "--retrieval-report"]
    all_three = ["--retrieval-engine", "mine", "--retrieval-engine", "keyword", "--retrieval-engine", "hybrid"]
    try:
        if warm_cache is None:
            child(cmd + all_three, cwd=project)  # fills the embedding cache
        alone, beside = [], []
        for _ in range(sized(max(3, repeats), repeats)):
            alone.append(child(cmd, cwd=project)[0])
            beside.append(child(cmd + all_three, cwd=project)[0])
    finally:
        shutil.rmtree(project, ignore_errors=True)
    a = record("own engine", "own engine alone (built-ins not named)", alone)
    b = record("own engine", "own engine + keyword + hybrid (warm)", beside)
    ratio("own engine", "with the built-ins / alone", b, a)


def write_results() -> None:
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "results.json").write_text(json.dumps({"machine": {"cpus": os.cpu_count(), "python": sys.version.split()[0]},
                                                      "rows": rows}, indent=1) + "\n")
    lines = ["# Benchmark summary", "", f"{os.cpu_count()} CPUs, Python {sys.version.split()[0]}; medians over repeated runs.", ""]
    section = None
    for r in rows:
        if r["section"] != section:
            section = r["section"]
            lines += ["", f"## {section}", "", "| what | value |", "|---|---|"]
        if "ratio" in r:
            lines.append(f"| {r['name']} | **{r['ratio']:.2f}x** |" if "share" not in r["name"] else f"| {r['name']} | {100 * r['ratio']:.1f} % |")
        elif "median" in r:
            lines.append(f"| {r['name']} | {r['median']:.4g} {r['unit']} |")
        elif "lines" in r:
            lines += [f"| {r['name']} | <pre>{'<br>'.join(r['lines'])}</pre> |"]
        else:
            lines.append(f"| {r['name']} | {', '.join(f'{k}={v}' for k, v in r.items() if k not in ('section', 'name'))} |")
    (RESULTS / "summary.md").write_text("\n".join(lines) + "\n")
    print(f"\nwrote {RESULTS / 'results.json'} and {RESULTS / 'summary.md'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--cold", type=int, default=2, help="cold runs of the bundled eval (each loads the model)")
    parser.add_argument("--no-scifact", action="store_true")
    parser.add_argument("--scifact-cold", type=int, default=None,
                        help="cold SciFact runs on each runtime (each embeds 5,330 chunks; default 1, 0 with --only)")
    parser.add_argument("--cache", default=None, help="for SciFact: a cache dir whose embeddings are filled already")
    parser.add_argument("--quick", action="store_true",
                        help="every section at small sizes, once (checks that each runs; the figures mean nothing)")
    parser.add_argument("--results", default=None, help="the folder results.json and summary.md go to (default bench/results)")
    parser.add_argument("--scale", default="5330,100000",
                        help="corpus sizes (chunks) of the scale section, comma-separated; 1000000 takes about 35 minutes")
    parser.add_argument("--only", choices=["dormant", "http", "canary", "judge", "own", "evaluate", "queries", "scifact", "bundled",
                                           "scaling", "ingestion", "memory", "embedding", "scale"],
                        help="run one section and print it (results files untouched)")
    args = parser.parse_args()
    sizes = [int(n) for n in args.scale.split(",") if n.strip()]
    global QUICK, RESULTS
    if args.results:
        RESULTS = Path(args.results)
    if args.quick:
        QUICK = True
        args.repeats, args.cold, args.scifact_cold = 1, 1, 1
        sizes = [300, 600]
    os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")
    if args.only:
        {"dormant": bench_dormant, "http": bench_http_concurrency, "canary": bench_canary, "judge": bench_judging, "own": bench_own_engine,
         "evaluate": bench_evaluate,
         "queries": lambda r: bench_queries(r, Path(tempfile.mkdtemp(prefix="retrieval-bench-cache-"))),
         "scifact": lambda r: bench_scifact(args.scifact_cold or 0, r, Path(args.cache) if args.cache else None),
         "bundled": lambda r: bench_bundled(r, 0), "scaling": bench_scaling, "ingestion": bench_ingestion,
         "memory": lambda r: bench_memory(), "embedding": bench_embedding,
         "scale": lambda r: bench_scale(sizes)}[args.only](args.repeats)
        return
    bench_dormant(args.repeats)
    bench_http_concurrency(args.repeats)
    bench_canary(args.repeats)
    bench_judging(args.repeats)
    bench_evaluate(args.repeats)
    cache = Path(tempfile.mkdtemp(prefix="retrieval-bench-cache-"))
    bench_bundled(args.repeats, args.cold, cache)  # leaves the bundled eval's cache filled for the queries
    bench_own_engine(args.repeats, cache)  # warm from it: no run of its own to fill one
    bench_queries(args.repeats, cache)
    shutil.rmtree(cache, ignore_errors=True)
    bench_ingestion(max(1, args.repeats // 2))
    bench_embedding(max(1, args.repeats // 2))
    bench_memory()
    bench_scale(sizes)
    if QUICK:  # SciFact's path on a small synthetic BEIR folder
        folder = synthetic_beir(Path(tempfile.mkdtemp(prefix="retrieval-bench-beir-")), 60, queries=20)
        bench_scaling(1)
        bench_scifact(1, 1, None, folder)
        shutil.rmtree(folder, ignore_errors=True)
    elif not args.no_scifact:
        bench_scaling(max(1, args.repeats // 2))
        bench_scifact(1 if args.scifact_cold is None else args.scifact_cold, max(1, args.repeats // 2),
                      Path(args.cache) if args.cache else None)
    write_results()


if __name__ == "__main__":
    main()

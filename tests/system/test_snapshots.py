"""Ingest once per corpus version: an embedded store's ingested data dir is kept at a clean stop
and restored by the next session with the same ingestion; never after the corpus, the chunking
or the embedder changed; never half-written; bounded."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from conftest import CORPUS, QUESTIONS, parse_table, requires_hybrid

pytestmark = [requires_hybrid, pytest.mark.postgres]

TESTS = """
    import pytest

    @pytest.mark.retrieval
    def test_q(retrieval_results):
        assert retrieval_results.n == 68
"""


@pytest.fixture
def project(pytester, tmp_path, sandbox_tmp):
    corpus = shutil.copytree(CORPUS, tmp_path / "corpus")
    pytester.makeini(f"[pytest]\nretrieval_corpus = {corpus}\nretrieval_questions = {QUESTIONS}\n"
                     f"retrieval_engines = hybrid\nretrieval_cache_dir = {tmp_path / 'cache'}\n"
                     "retrieval_embedder = hashing:64\nretrieval_stale = warn\n")
    pytester.makepyfile(TESTS)
    pytester.sandbox = sandbox_tmp
    return pytester


def run(project, *args):
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_") or k == "PYTEST_ADDOPTS"}
    env["TMPDIR"] = str(project.sandbox)
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-s", "--retrieval-report",
                           "-W", "ignore::UserWarning", *args], cwd=project.path, env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_the_second_run_restores_what_the_first_ingested(project, tmp_path):
    first = run(project, f"--retrieval-report-dir={tmp_path / 'a'}")
    assert ": ingested (38 chunks)" in first and "restored from snapshot" not in first
    snapshots = list((tmp_path / "cache" / "snapshots").iterdir())
    assert len(snapshots) == 1 and (snapshots[0] / "manifest.json").is_file()
    second = run(project, f"--retrieval-report-dir={tmp_path / 'b'}")
    assert f"restored from snapshot {snapshots[0].name}" in second and ": ingested" not in second
    assert parse_table(first) == parse_table(second)
    for name in ("results.json", "per_query.jsonl", "runs/hybrid.trec"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name
    timing = json.loads((tmp_path / "b" / "timing.json").read_text())
    assert timing["store"] == [f"{json.loads((tmp_path / 'b' / 'results.json').read_text())['evaluations'][0]['engine_info']['table']}: restored from snapshot {snapshots[0].name}"]


def test_a_one_word_corpus_edit_or_another_embedder_is_ingested_afresh(project, tmp_path):
    run(project)
    doc = tmp_path / "corpus" / "battery-care.json"
    record = json.loads(doc.read_text())
    record["content"] = record["content"].replace("battery", "batteries", 1)
    doc.write_text(json.dumps(record))
    edited = run(project)
    assert ": ingested (38 chunks)" in edited and "restored from snapshot" not in edited
    other = run(project, "--retrieval-embedder", "hashing:32")
    assert ": ingested (38 chunks)" in other and "restored from snapshot" not in other
    assert len(list((tmp_path / "cache" / "snapshots").iterdir())) == 3  # one per ingestion key
    assert "restored from snapshot" in run(project)  # the edited corpus, hashing:64: kept by the second run


def test_snapshots_off_keeps_nothing(project, tmp_path):
    out = run(project, "--retrieval-store-cache-mb", "0")
    assert ": ingested" in out and not (tmp_path / "cache" / "snapshots").exists()


def test_a_half_written_snapshot_is_never_restored_and_is_swept(project, tmp_path):
    root = tmp_path / "cache" / "snapshots"
    run(project)
    [kept] = list(root.iterdir())
    (kept / "manifest.json").unlink()  # as if the writer died before its last step
    out = run(project)
    assert ": ingested" in out and "restored from snapshot" not in out
    assert (kept / "manifest.json").is_file()  # the damaged one was removed and a whole one kept
    assert "restored from snapshot" in run(project)


def test_under_xdist_the_workers_share_one_snapshot(project, tmp_path):
    project.makepyfile(test_more="import pytest\n\n@pytest.mark.retrieval\ndef test_r(retrieval_results):\n    pass\n")
    first = run(project, "-n", "2")
    assert len(list((tmp_path / "cache" / "snapshots").iterdir())) == 1
    assert parse_table(first) == parse_table(run(project, "-n", "2"))


def test_the_bound_evicts_the_least_recently_used(tmp_path):
    from pytest_retrieval_eval.hybrid.snapshots import Snapshots

    root = tmp_path / "snapshots"
    for i, name in enumerate(["old", "mid", "new"]):
        (root / name / "data").mkdir(parents=True)
        (root / name / "data" / "blob").write_bytes(b"x" * 600_000)
        os.utime(root / name, (1_000_000 + i, 1_000_000 + i))
    removed = Snapshots(root, limit_mb=1.2).evict(keep="old")
    assert removed == ["mid"] and sorted(p.name for p in root.iterdir()) == ["new", "old"]


def test_kept_tables_on_an_existing_server_are_reused_by_the_next_session(project, tmp_path, server):
    import psycopg

    args = ["--retrieval-store", "dsn", f"--retrieval-dsn={server.dsn}", "--retrieval-dsn-keep"]
    first = run(project, *args, f"--retrieval-report-dir={tmp_path / 'a'}")
    assert "ingested and kept in schema retrieval_eval_kept" in first
    second = run(project, *args, f"--retrieval-report-dir={tmp_path / 'b'}")
    assert "reused the kept table in schema retrieval_eval_kept" in second and "ingested and kept" not in second
    assert parse_table(first) == parse_table(second)
    assert (tmp_path / "a" / "per_query.jsonl").read_bytes() == (tmp_path / "b" / "per_query.jsonl").read_bytes()
    with psycopg.connect(server.dsn) as conn:
        schemas = {r[0] for r in conn.execute("SELECT nspname FROM pg_namespace WHERE nspname LIKE 'retrieval_eval%'")}
    assert schemas == {"retrieval_eval", "retrieval_eval_kept"}  # the sessions' own schemas were dropped
    without = run(project, "--retrieval-store", "dsn", f"--retrieval-dsn={server.dsn}")
    assert ": ingested (38 chunks)" in without  # not opted in: a session of its own, as before


def test_a_change_to_a_teams_yaml_leaves_the_built_in_tables_snapshot_alone(project, tmp_path):
    """The built-in ingestion and a team's YAML kept in one store: after the team edits its YAML,
    only its table is ingested again, whichever engine the session asks for first, and the next
    session restores both."""
    from pytest_retrieval_eval.data.pipeline_files import builtin

    for name in ("ingest.yaml", "query.yaml"):
        (tmp_path / name).write_text(builtin(name).path.read_text().replace("spec: minilm", "spec: hashing:64")
                                     .replace("embedding_dimension: 384", "embedding_dimension: 64"))

    def session(engines: str, name: str) -> dict[str, str]:
        project.makeini(f"[pytest]\nretrieval_corpus = {tmp_path / 'corpus'}\nretrieval_questions = {QUESTIONS}\n"
                        f"retrieval_cache_dir = {tmp_path / 'cache'}\nretrieval_embedder = hashing:64\n"
                        f"retrieval_stale = warn\nretrieval_ingest_pipeline = {tmp_path / 'ingest.yaml'}\n"
                        f"retrieval_query_pipelines = teams={tmp_path / 'query.yaml'}\nretrieval_engines = {engines}\n")
        run(project, f"--retrieval-report-dir={tmp_path / name}")
        [builtin_table] = [e["engine_info"]["table"] for e in
                           json.loads((tmp_path / name / "results.json").read_text())["evaluations"]
                           if e["engine"] == "hybrid"]
        events = json.loads((tmp_path / name / "timing.json").read_text())["store"]
        assert len(events) == 2, events  # one line per table: the built-in's and the team's
        said = {"hybrid" if e.split(": ")[0] == builtin_table else "teams": e for e in events}
        return ({engine: "restored" if "restored from snapshot" in e else e.split(": ")[1].split(" ")[0]
                 for engine, e in said.items()}, [e.split(": ")[0] for e in events])

    assert session("hybrid teams", "a")[0] == {"hybrid": "ingested", "teams": "ingested"}
    yaml = tmp_path / "ingest.yaml"
    yaml.write_text(yaml.read_text().replace("split_length: 400", "split_length: 300"))
    assert session("teams hybrid", "c")[0] == {"hybrid": "restored", "teams": "ingested"}  # the team's first
    assert session("teams hybrid", "d")[0] == {"hybrid": "restored", "teams": "restored"}
    yaml.write_text(yaml.read_text().replace("split_length: 300", "split_length: 200"))
    said, tables = session("hybrid teams", "e")
    assert said == {"hybrid": "restored", "teams": "ingested"}  # the built-in's first
    kept = [json.loads((p / "manifest.json").read_text()) for p in (tmp_path / "cache" / "snapshots").iterdir()
            if not p.name.startswith(".")]
    assert any(sorted(m["tables"]) == sorted(tables) for m in kept)  # what the last session used, only


def _kept(tmp_path):
    from pytest_retrieval_eval.hybrid.snapshots import Snapshots

    data = tmp_path / "data"
    (data / "base").mkdir(parents=True)
    (data / "base" / "1").write_bytes(b"pages" * 1000)
    root = tmp_path / "snapshots"
    for key in ("intact", "damaged"):
        Snapshots(root, limit_mb=10).save(key, data, {"t": {"chunks": []}}, "pg")
    (root / "damaged" / "data" / "base" / "1").write_bytes(b"PAGES" * 1000)
    return root


def test_a_snapshot_in_a_read_only_folder_is_restored_when_it_proves_itself_and_never_when_not(tmp_path, read_only):
    """A read-only cache folder (a mounted image, a shared cache): the intact snapshot is used
    where it is (its recently-used stamp cannot be written: no matter), the damaged one is not,
    and the warning says it stays where it is rather than that it was set aside."""
    import warnings

    from pytest_retrieval_eval.hybrid.snapshots import Snapshots, SnapshotWarning

    root = read_only(_kept(tmp_path))
    snapshots = Snapshots(root, limit_mb=10)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        found = snapshots.find("intact")
    assert found is not None and found.path == root / "intact"
    with pytest.warns(SnapshotWarning) as said:
        assert snapshots.find("damaged") is None
    assert [str(w.message) for w in said] == [
        "store snapshot damaged not used: its file data/base/1 does not match its checksum; it cannot be set "
        "aside (Read-only file system) and stays where it is; the corpus is ingested afresh"]
    assert (root / "damaged").is_dir()

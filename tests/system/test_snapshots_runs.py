"""A restored snapshot must never score the wrong store. A damaged, truncated or
unreadable snapshot, or one whose tables do not answer as its manifest says, is set aside with
one warning and the corpus is ingested afresh (the run scores as a fresh one); the key changes
with everything that reaches the store or the engine's filters (the corpus folder's name, the
document fields a YAML ingestion reads, a model folder's content); a killed writer's temp dir
is swept and counted; a damaged embedding cache never answers garbage; 3,072-dimension vectors
are indexed (halfvec); warnings are one capped line."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import warnings
from pathlib import Path

import pytest

from conftest import CORPUS, QUESTIONS, parse_table, requires_hybrid

pytestmark = [requires_hybrid, pytest.mark.postgres]

TESTS = """
    import pytest

    @pytest.mark.retrieval
    def test_q(retrieval_results):
        assert retrieval_results.n == 68 and retrieval_results.n_errored == 0
"""


@pytest.fixture
def project(pytester, tmp_path, sandbox_tmp):
    def ini(corpus: Path, embedder: str = "hashing:64") -> None:
        pytester.makeini(f"[pytest]\nretrieval_corpus = {corpus}\nretrieval_questions = {QUESTIONS}\n"
                         f"retrieval_engines = hybrid\nretrieval_cache_dir = {tmp_path / 'cache'}\n"
                         f"retrieval_embedder = {embedder}\nretrieval_stale = warn\n")

    ini(shutil.copytree(CORPUS, tmp_path / "corpus"))
    pytester.makepyfile(TESTS)
    pytester.ini = ini
    pytester.sandbox = sandbox_tmp
    return pytester


def run(project, *args, ok: bool = True) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_") or k == "PYTEST_ADDOPTS"}
    env["TMPDIR"] = str(project.sandbox)
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-s", "--retrieval-report",
                           "-W", "ignore::DeprecationWarning", *args], cwd=project.path, env=env,
                          capture_output=True, text=True, timeout=300)
    if ok:
        assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout + done.stderr


def warning_lines(output: str, kind: str = "SnapshotWarning") -> list[str]:
    return [line for line in output.splitlines() if f"{kind}:" in line]


def the_snapshot(tmp_path) -> Path:
    [kept] = [p for p in (tmp_path / "cache" / "snapshots").iterdir() if not p.name.startswith(".")]
    return kept


def table_file(snapshot: Path) -> Path:
    """The heap file of the chunks table: of those holding its first row's id (its primary key
    index too), the largest."""
    [entry] = json.loads((snapshot / "manifest.json").read_text())["tables"].values()
    needle = entry["probe"]["first_id"].encode()
    return max((p for p in (snapshot / "data" / "base").rglob("*") if p.is_file() and needle in p.read_bytes()),
               key=lambda p: p.stat().st_size)


def truncate_table_file(snapshot: Path) -> None:
    target = table_file(snapshot)
    target.write_bytes(target.read_bytes()[: target.stat().st_size // 2])


def flip_a_byte_of_the_table_file(snapshot: Path) -> None:
    target = table_file(snapshot)
    data = bytearray(target.read_bytes())
    data[len(data) // 3] ^= 0xFF
    target.write_bytes(bytes(data))


def remove_table_file(snapshot: Path) -> None:
    table_file(snapshot).unlink()


def garbage_manifest(snapshot: Path) -> None:
    (snapshot / "manifest.json").write_bytes(b"\x00\xff not json at all")


def truncated_manifest(snapshot: Path) -> None:
    text = (snapshot / "manifest.json").read_bytes()
    (snapshot / "manifest.json").write_bytes(text[: len(text) // 2])


def older_format_manifest(snapshot: Path) -> None:
    manifest = json.loads((snapshot / "manifest.json").read_text())
    manifest["format"] = 3  # the layout before file checksums: rebuilt, never misread
    del manifest["files"]
    (snapshot / "manifest.json").write_text(json.dumps(manifest))


def tables_disagree(snapshot: Path) -> None:
    """Every file matches, but the manifest's tables are not what the store holds."""
    manifest = json.loads((snapshot / "manifest.json").read_text())
    [entry] = manifest["tables"].values()
    entry["probe"]["first_id"] = "not-a-chunk:0"
    (snapshot / "manifest.json").write_text(json.dumps(manifest))


@pytest.fixture(scope="module")
def fresh(tmp_path_factory) -> tuple[Path, str]:
    """One fresh ingestion of the bundled corpus, laid out as the project fixture lays it out,
    made once for the damage cases: (its cache dir, holding the snapshot; its output). Each case
    damages a copy: the first run of every case would be this same run."""
    from types import SimpleNamespace

    root = tmp_path_factory.mktemp("fresh")
    shutil.copytree(CORPUS, root / "corpus")
    (root / "pytest.ini").write_text(f"[pytest]\nretrieval_corpus = {root / 'corpus'}\nretrieval_questions = {QUESTIONS}\n"
                                     f"retrieval_engines = hybrid\nretrieval_cache_dir = {root / 'cache'}\n"
                                     "retrieval_embedder = hashing:64\nretrieval_stale = warn\n")
    (root / "test_fresh.py").write_text(textwrap.dedent(TESTS))
    sandbox = Path(tempfile.mkdtemp(prefix="retrieval-sandbox-"))  # as sandbox_tmp: reachable by the server user
    sandbox.chmod(0o755)
    try:
        out = run(SimpleNamespace(path=root, sandbox=sandbox))
    finally:
        shutil.rmtree(sandbox, ignore_errors=True)
    assert ": ingested (38 chunks)" in out and not warning_lines(out)
    return root / "cache", out


#: damage the snapshot's own files and manifest show before any server starts
FILE_DAMAGE = [
    (truncate_table_file, "is * bytes, the manifest says"),
    (flip_a_byte_of_the_table_file, "does not match its checksum"),
    (remove_table_file, "is missing"),
    (garbage_manifest, "its manifest is unreadable"),
    (truncated_manifest, "its manifest is unreadable"),
    (older_format_manifest, "not a format-4 manifest"),
]


@pytest.mark.parametrize("damage, cause", FILE_DAMAGE)
def test_a_snapshot_whose_files_do_not_prove_themselves_is_set_aside_with_one_warning(tmp_path, fresh, damage,
                                                                                     cause):
    """Each kind of file damage, on a real snapshot, as the session's lookup meets it (the run
    that follows is the same for every kind: the next test runs it for one of them)."""
    import fnmatch

    from pytest_retrieval_eval.hybrid.snapshots import SnapshotWarning, Snapshots

    cache, _ = fresh
    shutil.copytree(cache, tmp_path / "cache")
    snapshot = the_snapshot(tmp_path)
    damage(snapshot)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert Snapshots(tmp_path / "cache" / "snapshots", 2048).find(snapshot.name) is None
    [warning] = [w for w in caught if issubclass(w.category, SnapshotWarning)]
    line = str(warning.message)
    assert fnmatch.fnmatch(line, f"store snapshot {snapshot.name} set aside: *{cause}*; the corpus is ingested afresh")
    assert len(line) < 400 and "\n" not in line
    assert not snapshot.exists() and not [p for p in snapshot.parent.iterdir() if p.name.startswith(".aside-")]


@pytest.mark.parametrize("damage, cause", [
    FILE_DAMAGE[1],
    (tables_disagree, "answers 38 rows (first id *), the manifest says 38 (first id 'not-a-chunk:0'*"),
])
def test_a_damaged_snapshot_is_set_aside_with_one_warning_and_the_run_scores_as_fresh(project, tmp_path, fresh,
                                                                                    damage, cause):
    import fnmatch

    cache, fresh = fresh
    shutil.copytree(cache, tmp_path / "cache")  # as a first run of this project leaves it
    snapshot = the_snapshot(tmp_path)
    damage(snapshot)
    out = run(project)
    [line] = warning_lines(out)
    assert fnmatch.fnmatch(line, f"*store snapshot {snapshot.name} set aside: *{cause}*; the corpus is ingested afresh")
    assert len(line) < 400 and "Traceback" not in out
    assert ": ingested (38 chunks)" in out and "restored from snapshot" not in out
    assert parse_table(out) == parse_table(fresh) and parse_table(out)["hybrid"]
    assert "restored from snapshot" in (third := run(project)) and not warning_lines(third)  # kept whole again
    assert parse_table(third) == parse_table(fresh)


def test_a_renamed_corpus_folder_is_ingested_afresh_not_restored_onto_the_old_name(project, tmp_path):
    """Every row carries the folder's name (meta.dataset) and the engine filters on it: restored
    under the new name, every vector query would come back empty (hybrid 0.000, 0 errored)."""
    first = run(project)
    project.ini(shutil.copytree(tmp_path / "corpus", tmp_path / "renamed"))
    out = run(project)
    assert ": ingested (38 chunks)" in out and "restored from snapshot" not in out
    assert parse_table(out) == parse_table(first)


WRITER = """
import sys, time
from pathlib import Path
from pytest_retrieval_eval.hybrid.store.embedded import atomic_dir as _atomic_dir

def build(tmp):
    tmp.mkdir()
    (tmp / "data").mkdir()
    (tmp / "data" / "half-copied").write_bytes(b"x" * 300_000)
    print("writing", flush=True)
    time.sleep(600)

_atomic_dir(Path(sys.argv[1]) / "k", build)
"""


def test_a_writer_killed_with_sigkill_leaves_a_temp_dir_the_next_start_sweeps(tmp_path):
    from pytest_retrieval_eval.hybrid.snapshots import Snapshots

    root = tmp_path / "snapshots"
    root.mkdir()
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(root)], stdout=subprocess.PIPE, text=True)
    assert writer.stdout.readline().strip() == "writing"
    [temp] = root.glob(".k.*")
    live = root / f".other.{os.getpid()}.cafe"  # a writer that still runs (another xdist worker)
    (live / "data").mkdir(parents=True)
    os.kill(writer.pid, signal.SIGKILL)
    writer.wait(10)
    assert temp.is_dir()
    assert Snapshots(root, 2048).find("k") is None
    assert not temp.exists() and live.is_dir()


def test_a_kept_table_on_an_existing_server_that_lost_rows_is_built_again_not_reused(project, server):
    import psycopg

    args = ["--retrieval-store", "dsn", f"--retrieval-dsn={server.dsn}", "--retrieval-dsn-keep"]
    first = run(project, *args)
    assert "ingested and kept in schema retrieval_eval_kept" in first
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        [table] = [r[0] for r in conn.execute("SELECT name FROM retrieval_eval_kept.retrieval_eval_manifests")]
        conn.execute(f"DELETE FROM retrieval_eval_kept.{table} WHERE id IN "
                     f"(SELECT id FROM retrieval_eval_kept.{table} ORDER BY id DESC LIMIT 5)")
    out = run(project, *args)
    [line] = warning_lines(out)
    assert f"kept table retrieval_eval_kept.{table} is built again: it holds 33 rows" in line
    assert "ingested and kept in schema retrieval_eval_kept" in out and parse_table(out) == parse_table(first)
    assert "reused the kept table" in run(project, *args)


# --- more dimensions than HNSW's vector index takes ----------------------------------------------

DIMS = """
    import pytest

    def test_dims(ingested_index, pgvector_store):
        import psycopg

        with psycopg.connect(pgvector_store.dsn) as conn:
            kind = conn.execute(
                "SELECT format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = %s::regclass "
                "AND attname = 'embedding'", (f"{pgvector_store.schema}.{ingested_index.table}",)).fetchone()[0]
            index = conn.execute("SELECT indexdef FROM pg_indexes WHERE indexname = %s",
                                 (f"{ingested_index.table}_hnsw",)).fetchone()[0]
        print("COLUMN", kind, "INDEX", index)

    @pytest.mark.retrieval
    def test_q(retrieval_results):
        assert retrieval_results.n == 68 and retrieval_results.n_errored == 0
"""


def test_3072_dimension_vectors_are_indexed_as_halfvec_on_the_real_store(project):
    project.ini(CORPUS, "hashing:3072")
    project.makepyfile(DIMS)
    out = run(project)
    assert "COLUMN halfvec(3072) INDEX" in out and "USING hnsw (embedding halfvec_cosine_ops)" in out
    hybrid = parse_table(out)["hybrid"]
    assert hybrid["errored"] == 0 and hybrid["mrr"] > 0.4 and hybrid["hit@20"] > 0.9  # it ranks
    assert "restored from snapshot" in run(project)


def test_more_dimensions_than_halfvec_takes_is_one_line_naming_the_limit_and_the_embedder(project):
    project.ini(CORPUS, "hashing:4096")
    out = run(project, ok=False)
    assert "embedder hashing:v1:4096 gives 4096-dimension vectors; pgvector's HNSW index takes at most 4,000" in out
    assert "Traceback" not in out and "psycopg" not in out


# --- warnings are one capped line ---------------------------------------------------------------


def stop_warnings(store) -> list[str]:
    from pytest_retrieval_eval.hybrid.snapshots import SnapshotWarning

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        store.stop()
    return [str(w.message) for w in caught if issubclass(w.category, SnapshotWarning)]


def test_a_snapshot_save_that_fails_with_a_huge_message_warns_in_one_capped_line(server):
    from pytest_retrieval_eval._secrets import register_secret

    register_secret("hunter2-secret-password")

    def full_disk(data):
        raise shutil.Error([(f"{data}/base/{i}", f"/cache/{i}", "[Errno 28] No space left on device: "
                             "postgresql://u:hunter2-secret-password@h/db") for i in range(3000)])

    server.keep_on_stop = full_disk
    [message] = stop_warnings(server)
    assert message.startswith("the store snapshot was not kept: 3000 file(s) could not be copied, the first: "
                              "[Errno 28] No space left on device: postgresql://u:***@h/db")
    assert len(message) <= 330 and "\n" not in message and "hunter2" not in message


@pytest.fixture
def tiny_disk(tmp_path):
    target = tmp_path / "tiny"
    target.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(target)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"not applicable: cannot mount a tmpfs here ({done.stderr.decode().strip()})")
    yield target
    subprocess.run(["umount", str(target)], capture_output=True)


def test_a_snapshot_save_onto_a_full_disk_warns_in_one_line_and_leaves_nothing(server, tiny_disk):
    from pytest_retrieval_eval.hybrid.snapshots import Snapshots

    snapshots = Snapshots(tiny_disk / "snapshots", 2048)
    server.keep_on_stop = lambda data: snapshots.save("k", data, {})
    [message] = stop_warnings(server)
    assert message.startswith("the store snapshot was not kept: ") and "No space left on device" in message
    assert len(message) <= 330 and "\n" not in message
    assert list((tiny_disk / "snapshots").iterdir()) == []  # no half-written snapshot, no temp dir

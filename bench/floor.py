"""The floor of the bundled eval: the same work with nothing in between.

Starts the embedded PostgreSQL, bulk-loads the chunks with their (already computed) vectors,
builds the same indexes, and runs every question through both engines' work with raw SQL
(keyword tsquery + vector kNN + reciprocal-rank fusion) and the keyword scorer, then stops the
server. No pytest, no Haystack, no model: what any implementation must at least spend.

    python bench/floor.py PREPARED.json     # written by bench/run.py
"""

from __future__ import annotations

import json
import sys
import time

start = time.perf_counter()

import psycopg  # noqa: E402
from psycopg import sql  # noqa: E402

from pytest_retrieval_eval.engines.keyword import KeywordEngine  # noqa: E402
from pytest_retrieval_eval.hybrid.store.embedded import EmbeddedPostgres  # noqa: E402
from pytest_retrieval_eval.types import Doc  # noqa: E402

TOP_K = 50


def vec(v: list[float]) -> str:
    return "[" + ",".join(f"{x:.7g}" for x in v) + "]"


def main(path: str) -> None:
    prep = json.loads(open(path).read())
    store = EmbeddedPostgres()
    store.start()
    try:
        with psycopg.connect(store.dsn, autocommit=True) as conn:
            t = sql.Identifier(store.schema, "floor")
            conn.execute(sql.SQL("CREATE TABLE {} (id text PRIMARY KEY, doc_id text, content text, embedding vector({}))")
                         .format(t, sql.Literal(prep["dim"])))
            with conn.cursor().copy(sql.SQL("COPY {} (id, doc_id, content, embedding) FROM STDIN").format(t)) as copy:
                for c in prep["chunks"]:
                    copy.write_row((c["id"], c["doc_id"], c["text"], vec(c["vector"])))
            conn.execute(sql.SQL("CREATE INDEX ON {} USING GIN (to_tsvector('english', content))").format(t))
            conn.execute(sql.SQL("CREATE INDEX ON {} USING hnsw (embedding vector_cosine_ops)").format(t))
            conn.execute(sql.SQL("VACUUM ANALYZE {}").format(t))
            keyword_sql = sql.SQL("SELECT id, doc_id FROM {}, plainto_tsquery('english', %s) q "
                                  "WHERE to_tsvector('english', content) @@ q "
                                  "ORDER BY ts_rank_cd(to_tsvector('english', content), q) DESC LIMIT %s").format(t)
            vector_sql = sql.SQL("SELECT id, doc_id FROM {} ORDER BY embedding <=> %s::vector LIMIT %s").format(t)
            for q in prep["questions"]:
                scores: dict[str, float] = {}
                parent: dict[str, str] = {}
                for rows in (conn.execute(keyword_sql, (q["text"], TOP_K)).fetchall(),
                             conn.execute(vector_sql, (vec(q["vector"]), TOP_K)).fetchall()):
                    for rank, (cid, doc) in enumerate(rows):
                        scores[cid] = scores.get(cid, 0.0) + 1.0 / (61 + rank)
                        parent[cid] = doc
                ranked = sorted(scores, key=scores.get, reverse=True)[:TOP_K]
                list(dict.fromkeys(parent[c] for c in ranked))
        keyword = KeywordEngine([Doc(**d) for d in prep["docs"]])
        for q in prep["questions"]:
            keyword.retrieve(q["text"], 100)
    finally:
        store.stop()


if __name__ == "__main__":
    main(sys.argv[1])
    print(json.dumps({"seconds": time.perf_counter() - start}))

"""The data side's Haystack component (imported lazily: importing this imports Haystack).

No ``from __future__ import annotations`` here: Haystack reads ``run()``'s annotations as types
to check pipeline connections, and postponed (string) annotations fail that check.
"""

from .._lazy_torch import import_haystack

import_haystack()  # before Haystack's first import: no torch until a model must run

from haystack import Document, component  # noqa: E402

from ..errors import RetrievalEvalError  # noqa: E402
from .chunking import MAX_CHUNK_ID  # noqa: E402


@component
class ChunkIdentity:
    """Stable chunk ids ``doc_id:index`` and the metadata that retrieval filters on."""

    def __init__(self, org_id: str, dataset: str) -> None:
        self.org_id, self.dataset = org_id, dataset

    @component.output_types(documents=list[Document])
    def run(self, documents: list[Document]) -> dict:
        out = []
        for d in documents:
            doc_id, index = d.meta["doc_id"], int(d.meta["split_id"])
            chunk_id = f"{doc_id}:{index}"
            if len(chunk_id) > MAX_CHUNK_ID:
                raise RetrievalEvalError(f"chunk id {chunk_id[:40]}... is longer than the store's {MAX_CHUNK_ID} "
                                         "characters", field="doc_id")
            meta = {"doc_id": doc_id, "org_id": self.org_id, "dataset": self.dataset, "chunk_index": index,
                    "title": d.meta.get("title", "")}
            out.append(Document(id=chunk_id, content=d.content, meta=meta))
        return {"documents": out}

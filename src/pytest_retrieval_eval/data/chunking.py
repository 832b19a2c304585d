"""How documents become chunks: the settings, and the Haystack clean > split > identify pipeline
that ingestion runs and question generation shares, so a question's source chunk id is the id
the store holds.

Word windows: sentence-boundary splitting needs NLTK's punkt data, which is downloaded at run
time and so unavailable offline. Haystack is imported only when a pipeline is built.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from .._defaults import SPLIT_LENGTH, SPLIT_OVERLAP
from ..errors import RetrievalEvalError

if TYPE_CHECKING:
    from ..types import Chunk
    from .corpus import Corpus

#: chunk ids are the store's primary keys: PgvectorDocumentStore's id column holds 128 characters
MAX_CHUNK_ID = 128


@dataclass(frozen=True)
class Chunking:
    """Word windows of ``split_length`` words overlapping by ``split_overlap``; every chunk is
    tagged with ``org_id`` and its dataset, the metadata retrieval filters on."""

    split_length: int = SPLIT_LENGTH
    split_overlap: int = SPLIT_OVERLAP
    org_id: str = "eval"

    def __post_init__(self) -> None:
        if self.split_length < 1 or not 0 <= self.split_overlap < self.split_length:
            raise RetrievalEvalError(
                f"split settings need split_length >= 1 and 0 <= split_overlap < split_length "
                f"(got {self.split_length} and {self.split_overlap})"
            )

    def describe(self) -> dict:
        """What the questions cache records of the chunking its questions were written against."""
        return {"split_by": "word", "split_length": self.split_length, "split_overlap": self.split_overlap}


def sources(corpus: "Corpus", start: int = 0, stop: int | None = None) -> list:
    """One Haystack Document per source document (``corpus.docs[start:stop]``): title and
    description lead the text."""
    from .._lazy_torch import import_haystack

    import_haystack()
    from haystack import Document

    return [
        Document(id=d.doc_id, content="\n\n".join(p for p in (d.title, d.description, d.content) if p),
                 meta={"doc_id": d.doc_id, "title": d.title})
        for d in corpus.docs[start:stop]
    ]


#: the steps of the built-in ingestion (``pipelines/ingest.yaml``) that make the chunks
CHUNKING_STEPS = ("cleaner", "splitter", "identity")


def chunking_settings(chunking: Chunking, dataset: str) -> dict:
    """The session's settings over the built-in ingestion YAML's chunking steps."""
    return {"splitter": {"split_by": "word", "split_length": chunking.split_length,
                         "split_overlap": chunking.split_overlap},
            "identity": {"org_id": chunking.org_id, "dataset": dataset}}


def chunking_pipeline(chunking: Chunking, dataset: str):
    """clean > split > identify: the first steps of the built-in ingestion YAML, which ingestion
    runs whole and question generation runs alone, so a question's chunk id is the store's."""
    from .pipeline_files import build, builtin, subset, with_settings

    file = builtin("ingest.yaml")
    return build(with_settings(subset(file.data(), CHUNKING_STEPS), chunking_settings(chunking, dataset)), file)


def chunks_of(documents) -> tuple[Chunk, ...]:
    """The plugin's ``Chunk`` records of the pipeline's output documents."""
    from ..types import Chunk

    return tuple(Chunk(d.meta["doc_id"], d.meta["chunk_index"], d.content or "", dict(d.meta)) for d in documents)


def chunk_corpus(corpus: "Corpus", chunking: Chunking = Chunking()) -> tuple[Chunk, ...]:
    """The chunks ingestion would write, without a store or an embedder."""
    result = chunking_pipeline(chunking, corpus.name).run({"cleaner": {"documents": sources(corpus)}})
    return chunks_of(result["identity"]["documents"])

"""A component of the team's own, used by its ingestion pipeline (pipelines/ingest.yaml)."""

import dataclasses

from haystack import Document, component


@component
class TagAudience:
    """Marks each chunk with who it is for, from words in its text: the metadata the team filters on."""

    def __init__(self, field: str = "audience") -> None:
        self.field = field

    @component.output_types(documents=list[Document])
    def run(self, documents: list[Document]) -> dict:
        out = []
        for d in documents:
            text = (d.content or "").lower()
            audience = "contractors" if "contractor" in text else "staff"
            out.append(dataclasses.replace(d, meta={**d.meta, self.field: audience}))
        return {"documents": out}

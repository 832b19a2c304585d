"""Corpus providers: a folder of JSON documents, a folder of Markdown, text and HTML files, or a
BEIR folder (which also brings its labels).

A provider is anything with ``load() -> Corpus``; ``open_corpus(path)`` picks one by the folder's
shape. Loading validates everything up front and names the file, line and field of a bad record.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Iterator, Protocol

from .._textfiles import json_lines, read_text
from ..errors import RetrievalEvalError
from .labeled import LabeledSet, query_problem
from ..ir.qrels import Qrels
from ..types import Doc, LabeledQuery, canonical_json, id_problem, sha256_text, text_problem
from .chunking import MAX_CHUNK_ID
from .files import SHOWN_KINDS, convert, folder_note, read_file, text_files, title_of
from .freshness import check_references, field_problem

#: a document id leaves room for ``:index`` within the store's chunk-id column
MAX_DOC_ID = MAX_CHUNK_ID - 8

DOC_FIELDS = ("doc_id", "title", "description", "filename", "content")
#: Larger documents are refused, not ingested for hours: at 400-word chunks a 50 MB text is
#: some 20,000 chunks to embed. ``--retrieval-max-doc-mb`` raises the limit.
MAX_DOC_MB = 10.0


def check_size(doc_id: str, text: str, limit_mb: float, *, path, line, field: str) -> None:
    limit = int(limit_mb * 1024 * 1024)
    if len(text) * 4 > limit and len(text.encode("utf-8")) > limit:
        size = len(text.encode("utf-8")) / 1024 / 1024
        raise RetrievalEvalError(
            f"document '{doc_id}' is {size:.1f} MB, over the {limit_mb:g} MB limit; split it, or raise the limit "
            "with --retrieval-max-doc-mb", path=path, line=line, field=field)


@dataclass(frozen=True)
class Corpus:
    docs: tuple[Doc, ...]
    name: str = "corpus"
    source: str | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_by_id", {d.doc_id: d for d in self.docs})

    def __len__(self) -> int:
        return len(self.docs)

    def __iter__(self) -> Iterator[Doc]:
        return iter(self.docs)

    def __contains__(self, doc_id: object) -> bool:
        return doc_id in self._by_id  # type: ignore[attr-defined]

    @property
    def id_set(self):
        """The doc ids as a set-like view: membership without a Python call per id (a run's ids are many)."""
        return self._by_id.keys()  # type: ignore[attr-defined]

    def get(self, doc_id: str) -> Doc | None:
        return self._by_id.get(doc_id)  # type: ignore[attr-defined]

    @property
    def doc_ids(self) -> tuple[str, ...]:
        return tuple(d.doc_id for d in self.docs)

    @cached_property
    def fingerprint(self) -> str:
        """Computed once (the corpus is frozen): staleness, table names and reports all ask."""
        return sha256_text(canonical_json(sorted((d.doc_id, d.fingerprint) for d in self.docs)))


class CorpusProvider(Protocol):
    def load(self) -> Corpus: ...


def _line_of(text: str, needle: str) -> int | None:
    pos = text.find(needle)
    return None if pos < 0 else text.count("\n", 0, pos) + 1


def _doc_from_record(record: Any, *, path: Path, line: int | None, where: str, max_mb: float = MAX_DOC_MB) -> Doc:
    if not isinstance(record, dict):
        raise RetrievalEvalError(f"{where}: expected a JSON object, got {type(record).__name__}", path=path, line=line)
    doc_id = record.get("doc_id")
    if not isinstance(doc_id, str) or not doc_id.strip():
        raise RetrievalEvalError(f"{where}: required, a non-empty string", path=path, line=line, field="doc_id")
    problem = id_problem(doc_id, max_length=MAX_DOC_ID)
    if problem:
        raise RetrievalEvalError(f"{where}: {problem}", path=path, line=line, field="doc_id")
    for name in ("title", "description", "filename", "content"):
        value = record.get(name, "")
        if not isinstance(value, str):
            raise RetrievalEvalError(
                f"document '{doc_id}': must be a string, got {type(value).__name__}", path=path, line=line, field=name
            )
        problem = text_problem(value)
        if problem:
            raise RetrievalEvalError(f"document '{doc_id}': {problem}", path=path, line=line, field=name)
    content = record.get("content")
    if content is None:
        raise RetrievalEvalError(f"document '{doc_id}': required field is missing", path=path, line=line, field="content")
    if not content.strip():
        raise RetrievalEvalError(f"document '{doc_id}': is empty", path=path, line=line, field="content")
    check_size(doc_id, content, max_mb, path=path, line=line, field="content")
    meta = {k: v for k, v in record.items() if k not in DOC_FIELDS}
    bad = field_problem(meta)
    if bad:
        raise RetrievalEvalError(f"document '{doc_id}': {bad[1]}", path=path, line=line, field=bad[0])
    return Doc(
        doc_id=doc_id,
        content=content,
        title=record.get("title", ""),
        description=record.get("description", ""),
        filename=record.get("filename", ""),
        meta=meta,
    )


@dataclass(frozen=True)
class JsonFolder:
    """``*.json`` files (one document object, or a list of them) and ``*.jsonl`` files (one
    document per line) anywhere under ``path``. Fields: ``doc_id``, ``content`` (required),
    ``title``, ``description``, ``filename``; any other field is kept as metadata. A folder with
    no JSON but Markdown, text or HTML files is a ``TextFolder``; one with both kinds is refused,
    save the folder's own notes beside its JSON documents (``folder_note``: a README, a licence)."""

    path: Path
    max_doc_mb: float = MAX_DOC_MB

    def load(self) -> Corpus:
        root = _folder(self.path)
        docs: list[Doc] = []
        origin: dict[str, str] = {}
        files = sorted(p for p in root.rglob("*") if p.suffix in (".json", ".jsonl") and p.is_file())
        others = [p for p in text_files(root) if not (files and folder_note(root, p))]
        if files and others:
            raise RetrievalEvalError(
                f"holds JSON documents ({files[0].relative_to(root).as_posix()}{_more(files)}) and Markdown, text "
                f"or HTML files ({others[0].relative_to(root).as_posix()}{_more(others)}); a corpus folder holds "
                "one kind: move the others out, or name a folder of one kind", path=root)
        if others:
            return TextFolder(root, self.max_doc_mb).read(root, others)  # the folder walked once
        for file in files:
            for doc, line in self._read(file, self.max_doc_mb):
                if doc.doc_id in origin:
                    raise RetrievalEvalError(
                        f"duplicate doc_id '{doc.doc_id}' (also in {origin[doc.doc_id]})",
                        path=file,
                        line=line,
                        field="doc_id",
                    )
                origin[doc.doc_id] = str(file) if line is None else f"{file}:{line}"
                docs.append(doc)
        if not docs:
            raise RetrievalEvalError(f"no documents found (expected *.json or *.jsonl files, or {SHOWN_KINDS})", path=root)
        check_references(docs, source=str(root), origin=origin)
        return Corpus(tuple(docs), name=root.name, source=str(root))

    @staticmethod
    def _read(file: Path, max_mb: float) -> Iterator[tuple[Doc, int | None]]:
        if file.suffix == ".jsonl":
            for number, record in json_lines(file):
                yield _doc_from_record(record, path=file, line=number, where="line", max_mb=max_mb), number
            return
        text = read_text(file)
        try:
            raw = json.loads(text)
        except json.JSONDecodeError as exc:
            raise RetrievalEvalError(f"not valid JSON: {exc.msg} (column {exc.colno})", path=file, line=exc.lineno) from None
        records = raw if isinstance(raw, list) else [raw]
        for i, record in enumerate(records):
            doc_id = record.get("doc_id") if isinstance(record, dict) else None
            line = _line_of(text, json.dumps(doc_id)) if isinstance(doc_id, str) else (1 if len(records) == 1 else None)
            where = "document" if len(records) == 1 else f"document [{i}]"
            yield _doc_from_record(record, path=file, line=line, where=where, max_mb=max_mb), line


def _folder(path: Path) -> Path:
    """A corpus folder's path, refused in one line when no folder is there."""
    root = Path(path)
    if not root.is_dir():
        raise RetrievalEvalError("corpus folder not found", path=root)
    return root


def _more(files: list[Path]) -> str:
    return f" and {len(files) - 1} more" if len(files) > 1 else ""


#: front-matter keys a file cannot set: its id is its path, its content its text
FILE_OWN = ("doc_id", "filename", "content")


@dataclass(frozen=True)
class TextFolder:
    """Markdown, text and HTML files anywhere under ``path`` (``data/files.py``), converted by
    Haystack's converters: the id is the path below the folder without its extension, the title
    the front matter's or the first heading's, the front matter's other keys metadata.
    ``JsonFolder`` reads such a folder with this when it holds no JSON documents."""

    path: Path
    max_doc_mb: float = MAX_DOC_MB

    def load(self) -> Corpus:
        root = _folder(self.path)
        return self.read(root, text_files(root))

    def read(self, root: Path, files: list[Path]) -> Corpus:
        """The corpus of ``files``, the Markdown, text and HTML files below ``root`` (``text_files``)."""
        reads, origin = [], {}
        for file in files:
            read = read_file(root, file)
            if read.doc_id in origin:
                raise RetrievalEvalError(f"duplicate doc_id '{read.doc_id}' (also in {origin[read.doc_id]})",
                                         path=file, field="doc_id")
            for key in FILE_OWN:
                if key in read.fields:
                    raise RetrievalEvalError(f"a front matter cannot set '{key}': a file's id is its path, its "
                                             "content its text; remove the key", path=file, field=key)
            check_size(read.doc_id, read.text, self.max_doc_mb, path=file, line=None, field="content")
            origin[read.doc_id] = str(file)
            reads.append(read)
        if not reads:
            raise RetrievalEvalError(f"no documents found (expected {SHOWN_KINDS})", path=root)
        texts = convert(reads)
        docs = []
        for read in reads:
            record = {**read.fields, "doc_id": read.doc_id, "title": title_of(read),
                      "filename": read.file.relative_to(root).as_posix(), "content": texts[read.file]}
            docs.append(_doc_from_record(record, path=read.file, line=None, where=f"document '{read.doc_id}'",
                                         max_mb=self.max_doc_mb))
        check_references(docs, source=str(root), origin=origin)
        return Corpus(tuple(docs), name=root.name, source=str(root))


@dataclass(frozen=True)
class BeirFolder:
    """A BEIR dataset folder: ``corpus.jsonl``, ``queries.jsonl``, ``qrels/<split>.tsv``."""

    path: Path
    split: str = "test"
    max_doc_mb: float = MAX_DOC_MB

    def load(self) -> Corpus:
        file = Path(self.path) / "corpus.jsonl"
        docs: list[Doc] = []
        seen: dict[str, int] = {}
        for number, record in json_lines(file):
            if not isinstance(record, dict):
                raise RetrievalEvalError("expected a JSON object", path=file, line=number)
            doc_id = record.get("_id")
            if not isinstance(doc_id, str) or not doc_id:
                raise RetrievalEvalError("required, a non-empty string", path=file, line=number, field="_id")
            if doc_id in seen:
                raise RetrievalEvalError(f"duplicate _id '{doc_id}' (first on line {seen[doc_id]})", path=file, line=number, field="_id")
            seen[doc_id] = number
            title = record.get("title") or ""
            text = record.get("text") or ""
            if not isinstance(title, str) or not isinstance(text, str):
                raise RetrievalEvalError(f"document '{doc_id}': title and text must be strings", path=file, line=number)
            problem = id_problem(doc_id, max_length=MAX_DOC_ID)
            if problem:
                raise RetrievalEvalError(problem, path=file, line=number, field="_id")
            for name, value in (("title", title), ("text", text)):
                if text_problem(value):
                    raise RetrievalEvalError(f"document '{doc_id}': {text_problem(value)}", path=file, line=number,
                                             field=name)
            if not (text.strip() or title.strip()):
                raise RetrievalEvalError(f"document '{doc_id}': title and text are both empty", path=file, line=number, field="text")
            check_size(doc_id, text, self.max_doc_mb, path=file, line=number, field="text")
            meta = record.get("metadata") or {}
            if not isinstance(meta, dict):
                raise RetrievalEvalError(f"document '{doc_id}': must be an object", path=file, line=number, field="metadata")
            # freshness fields may sit beside the standard ones, as in a JSON corpus
            meta = {**{k: v for k, v in record.items() if k not in ("_id", "title", "text", "metadata")}, **meta}
            bad = field_problem(meta)
            if bad:
                raise RetrievalEvalError(f"document '{doc_id}': {bad[1]}", path=file, line=number, field=bad[0])
            docs.append(Doc(doc_id=doc_id, content=text or title, title=title, meta=meta))
        check_references(docs, source=str(file))
        return Corpus(tuple(docs), name=Path(self.path).name, source=str(self.path))

    def qrels(self) -> Qrels:
        return Qrels.from_beir_tsv(Path(self.path) / "qrels" / f"{self.split}.tsv")

    def labeled(self) -> LabeledSet:
        """The split's judged queries with their texts, in qrels order."""
        qrels = self.qrels()
        file = Path(self.path) / "queries.jsonl"
        texts: dict[str, str] = {}
        for number, record in json_lines(file):
            qid = record.get("_id") if isinstance(record, dict) else None
            text = record.get("text") if isinstance(record, dict) else None
            if not isinstance(qid, str) or not isinstance(text, str):
                raise RetrievalEvalError("each line needs string fields '_id' and 'text'", path=file, line=number)
            problem = query_problem(qid, text, {})
            if problem:
                raise RetrievalEvalError(problem[0], path=file, line=number, field={"id": "_id", "question": "text"}[problem[1]])
            texts[qid] = text
        missing = [q for q in qrels if q not in texts]
        if missing:
            raise RetrievalEvalError(
                f"{len(missing)} query id(s) in qrels/{self.split}.tsv have no text in queries.jsonl, "
                f"e.g. {', '.join(missing[:5])}",
                path=file,
            )
        queries = tuple(LabeledQuery(q, texts[q], dict(qrels[q])) for q in qrels)
        return LabeledSet(
            queries,
            name=f"{Path(self.path).name}/{self.split}",
            provenance={"generator": {"method": "beir-qrels"}, "path": str(self.path), "split": self.split},
        )


def is_beir_folder(path: str | Path) -> bool:
    return (Path(path) / "corpus.jsonl").is_file() and (Path(path) / "qrels").is_dir()


def open_corpus(path: str | Path, *, split: str = "test", max_doc_mb: float = MAX_DOC_MB) -> CorpusProvider:
    """A BEIR folder when it has ``corpus.jsonl`` and ``qrels/``, else a JSON document folder."""
    if is_beir_folder(path):
        return BeirFolder(Path(path), split, max_doc_mb)
    return JsonFolder(Path(path), max_doc_mb)

"""Markdown, text and HTML files as documents, converted by Haystack's own converters
(``MarkdownToDocument``, ``TextFileToDocument``, ``HTMLToDocument``), which are imported only
when a corpus folder holds such files: a team's help center is read as its files stand, with no
converter of its own to write first.

A document's id is its path below the folder (forward slashes, no extension); its title the
``title`` of a leading ``---`` YAML block (Markdown), else its first level-1 heading (``# ...``;
``<title>``, else ``<h1>`` in HTML), else the file's name; the block's ``description`` is the
description and its other keys are metadata, as a JSON document's other fields are.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from typing import Any, Iterable

from .._textfiles import read_text
from ..errors import RetrievalEvalError

#: suffix -> kind of file; every other file is not read
KINDS = {".md": "markdown", ".markdown": "markdown", ".txt": "text", ".html": "html", ".htm": "html"}
SHOWN_KINDS = "Markdown (*.md), text (*.txt) or HTML (*.html) files"
INSTALL = 'pip install "pytest-retrieval-eval[files]"'

#: a leading YAML block, as Haystack's MarkdownToDocument finds one
FRONT_MATTER = re.compile(r"\A---[ \t]*\r?\n(?P<block>.*?)\r?\n---[ \t]*(?:\r?\n|\Z)", re.DOTALL)


def text_files(root: Path) -> list[Path]:
    """The Markdown, text and HTML files below ``root``, in path order; hidden files and folders
    (``.github/``, ``.obsidian/``) are not a help center's articles."""
    return sorted(p for p in root.rglob("*") if p.suffix.lower() in KINDS and p.is_file()
                  and not any(part.startswith(".") for part in p.relative_to(root).parts))


#: the names (without extension) of the files that describe a folder rather than belong to it
FOLDER_NOTES = frozenset({"readme", "license", "licence", "changelog", "notice", "contributing", "authors"})


def folder_note(root: Path, path: Path) -> bool:
    """Whether ``path`` is the folder's own note (``README.md``, ``LICENSE.txt`` at its top): beside
    JSON documents such a file describes them and is no document; a corpus of Markdown articles
    reads it as one of them."""
    return path.parent == root and path.stem.lower() in FOLDER_NOTES


@dataclass(frozen=True)
class Read:
    """One file before conversion: its id, the text to convert and what its front matter said."""

    file: Path
    doc_id: str
    kind: str
    text: str
    fields: dict[str, Any]


def read_file(root: Path, file: Path) -> Read:
    """The file's id and text, its front matter taken off and checked (a bad block is an error
    naming its line, not a block kept as text, as Haystack's converter would keep it)."""
    rel = file.relative_to(root)
    if any(part.split() != [part] for part in rel.parts):
        raise RetrievalEvalError("its path holds whitespace, which a document id (the path) cannot: rename the file",
                                 path=file)
    text = read_text(file)
    kind = KINDS[file.suffix.lower()]
    fields: dict[str, Any] = {}
    match = FRONT_MATTER.match(text) if kind == "markdown" else None
    if match:
        fields = front_matter(match.group("block"), file)
        text = text[match.end():]
    return Read(file, rel.with_suffix("").as_posix(), kind, text, fields)


def front_matter(block: str, file: Path) -> dict[str, Any]:
    import yaml  # Haystack's own dependency: here only where Haystack reads the files

    try:
        value = yaml.safe_load(block)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise RetrievalEvalError(f"not valid YAML: {problem}", path=file, field="front matter",
                                 line=2 + (mark.line if mark is not None else 0)) from None
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise RetrievalEvalError(f"expected keys and values (title: ...), got {type(value).__name__}", path=file,
                                 line=2, field="front matter")
    value = json.loads(json.dumps(value, default=str))  # dates as ISO text, as Haystack's converter keeps them
    for name in ("title", "description"):
        if isinstance(value.get(name), (dict, list)):
            raise RetrievalEvalError(f"must be a string, got {type(value[name]).__name__}", path=file,
                                     line=_line_of_key(block, name), field=name)
        if value.get(name) is not None:
            value[name] = str(value[name])
    return value


def _line_of_key(block: str, key: str) -> int:
    for number, line in enumerate(block.splitlines(), start=2):
        if line.startswith(f"{key}:"):
            return number
    return 2


def convert(reads: Iterable[Read]) -> dict[Path, str]:
    """Each file's text as Haystack's converter for its kind gives it (``""`` where the converter
    found none); files are converted one kind at a time."""
    by_kind: dict[str, list[Read]] = {}
    for r in reads:
        by_kind.setdefault(r.kind, []).append(r)
    out: dict[Path, str] = {}
    for kind, group in by_kind.items():
        converter = _converter(kind, group[0].file)
        from haystack.dataclasses import ByteStream

        sources = [ByteStream(r.text.encode("utf-8"), meta={"pytest_retrieval_eval_file": str(r.file)}) for r in group]
        documents = converter.run(sources=sources)["documents"]
        got = {d.meta.get("pytest_retrieval_eval_file"): d.content or "" for d in documents}
        out.update({r.file: got.get(str(r.file), "") for r in group})
    return out


def _converter(kind: str, file: Path) -> Any:
    """Haystack's converter for ``kind``; a missing package is an error saying what to install."""
    from .._lazy_torch import import_haystack

    try:
        import_haystack()
        if kind == "markdown":
            from haystack.components.converters.markdown import MarkdownToDocument

            return MarkdownToDocument(progress_bar=False, encoding="utf-8")
        if kind == "html":
            from haystack.components.converters.html import HTMLToDocument

            return HTMLToDocument(encoding="utf-8")
        from haystack.components.converters.txt import TextFileToDocument

        return TextFileToDocument(encoding="utf-8")
    except ImportError as exc:
        raise RetrievalEvalError(f"reading {kind} files needs Haystack's converters and their packages, and "
                                 f"{_missing(exc)} is not installed: {INSTALL}", path=file) from None


def _missing(exc: ImportError) -> str:
    """The package an import error is about: its module, or what Haystack's message says to install."""
    if exc.name:
        return exc.name.split(".")[0]
    found = re.search(r"pip install ([\w\- ]+)'", str(exc))
    return found.group(1) if found else "a package"


def title_of(read: Read) -> str:
    """The front matter's title, else the first level-1 heading, else the file's name."""
    title = read.fields.get("title")
    if isinstance(title, str) and title.strip():
        return " ".join(title.split())
    heading = {"markdown": _markdown_heading, "html": _html_title}.get(read.kind, lambda text: "")(read.text)
    return heading or read.file.stem


def _markdown_heading(text: str) -> str:
    """The first ``# heading`` (or ``===``-underlined one) as plain text; a ``#`` line inside a
    code block is no heading, which is why the text is parsed, not searched."""
    from markdown_it import MarkdownIt  # the package MarkdownToDocument renders with

    tokens = MarkdownIt("commonmark").parse(text)
    for i, token in enumerate(tokens):
        if token.type == "heading_open" and token.tag == "h1" and i + 1 < len(tokens):
            return " ".join(_plain(tokens[i + 1].children or []).split())
    return ""


def _plain(children: list[Any]) -> str:
    parts = []
    for child in children:
        if child.type in ("text", "code_inline"):
            parts.append(child.content)
        elif child.type in ("softbreak", "hardbreak"):
            parts.append(" ")
        elif child.type == "image":
            parts.append(_plain(child.children or []))
    return "".join(parts)


class _Titles(HTMLParser):
    """The text of a page's first ``<title>`` and of its first ``<h1>``."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.found: dict[str, str] = {}
        self.inside: str | None = None
        self.parts: list[str] = []

    def handle_starttag(self, tag: str, attrs: Any) -> None:
        if tag in ("title", "h1") and tag not in self.found and self.inside is None:
            self.inside, self.parts = tag, []

    def handle_endtag(self, tag: str) -> None:
        if tag == self.inside:
            self.found[tag] = " ".join("".join(self.parts).split())
            self.inside = None

    def handle_data(self, data: str) -> None:
        if self.inside is not None:
            self.parts.append(data)


def _html_title(text: str) -> str:
    parser = _Titles()
    parser.feed(text)
    parser.close()
    return parser.found.get("title") or parser.found.get("h1") or ""

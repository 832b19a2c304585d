"""Corpus loaders: JSON folders, folders of Markdown, text and HTML files, and BEIR folders, and the
errors they give on bad input."""

import json

import pytest

from conftest import CORPUS, requires_files, write_docs
from projects import HELP_CENTER, make_beir, make_help_center
from shared_datasets import dataset_path
from pytest_retrieval_eval import RetrievalEvalError
from pytest_retrieval_eval.data.corpus import BeirFolder, JsonFolder, open_corpus


def test_bundled_corpus_shape():
    corpus = JsonFolder(CORPUS).load()
    assert 20 <= len(corpus) <= 30
    words = {d.doc_id: len(d.content.split()) for d in corpus}
    assert sum(w >= 600 for w in words.values()) >= 3  # long, multi-chunk policy pages
    for d in corpus:
        assert d.title and d.description and d.filename and d.content


def test_fingerprint_changes_with_content_and_not_with_file_order(tmp_path):
    a = write_docs(tmp_path / "a", [{"doc_id": "x", "content": "one"}, {"doc_id": "y", "content": "two"}])
    fp = JsonFolder(a).load().fingerprint
    (a / "y.json").write_text(json.dumps({"doc_id": "y", "content": "two!"}))
    assert JsonFolder(a).load().fingerprint != fp


def test_list_files_and_jsonl_and_extra_fields_as_meta(tmp_path):
    (tmp_path / "many.json").write_text(json.dumps([{"doc_id": "a", "content": "x", "lang": "en"}, {"doc_id": "b", "content": "y"}]))
    (tmp_path / "more.jsonl").write_text('{"doc_id": "c", "content": "z"}\n\n{"doc_id": "d", "content": "w"}\n')
    corpus = JsonFolder(tmp_path).load()
    assert corpus.doc_ids == ("a", "b", "c", "d")
    assert corpus.get("a").meta == {"lang": "en"}


@pytest.mark.parametrize(
    "files, message",
    [
        ({"a.json": '{"doc_id": "a",\n "content": "x",\n}'}, r"a.json:3: not valid JSON"),
        ({"a.json": '{"doc_id": "a", "title": "t"}'}, r"a.json:1: field 'content': document 'a': required field is missing"),
        ({"a.json": '{"doc_id": "a", "content": "   "}'}, r"a.json:1: field 'content': document 'a': is empty"),
        ({"a.json": '{"content": "x"}'}, r"a.json:1: field 'doc_id': document: required"),
        ({"a.json": '{"doc_id": "a", "content": "x", "title": 3}'}, r"field 'title': document 'a': must be a string"),
        ({"a.jsonl": '{"doc_id": "a", "content": "x"}\n{"doc_id": "b"}\n'}, r"a.jsonl:2: field 'content'"),
        ({"a.json": '{"doc_id": "a", "content": "x"}', "b.json": '{"doc_id": "a", "content": "y"}'},
         r"b.json:1: field 'doc_id': duplicate doc_id 'a' \(also in .*a.json"),
    ],
)
def test_bad_documents_name_file_line_and_field(tmp_path, files, message):
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    with pytest.raises(RetrievalEvalError, match=message):
        JsonFolder(tmp_path).load()


def test_non_utf8_bytes_name_the_line(tmp_path):
    (tmp_path / "a.json").write_bytes(b'{"doc_id": "a",\n"content": "caf\xe9"}')
    with pytest.raises(RetrievalEvalError, match=r"a.json:2: not valid UTF-8"):
        JsonFolder(tmp_path).load()


def test_empty_or_missing_folder(tmp_path):
    with pytest.raises(RetrievalEvalError, match="no documents found"):
        JsonFolder(tmp_path).load()
    with pytest.raises(RetrievalEvalError, match="corpus folder not found"):
        JsonFolder(tmp_path / "nope").load()


def test_beir_folder_with_crlf_bom_header_and_blank_lines(tmp_path):
    root = make_beir(tmp_path / "beir")
    provider = open_corpus(root)
    assert isinstance(provider, BeirFolder)
    corpus = provider.load()
    assert corpus.doc_ids == ("d1", "d2")
    labeled = provider.labeled()
    assert [q.query_id for q in labeled] == ["q1", "q2"]
    assert labeled.by_id()["q1"].relevant == {"d1": 2, "d2": 0}
    assert labeled.by_id()["q1"].question == "does vitamin d help bones"


def test_beir_query_without_text_is_an_error(tmp_path):
    root = make_beir(tmp_path / "beir", crlf=False, bom=False)
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq9\td1\t1\n")
    with pytest.raises(RetrievalEvalError, match=r"queries.jsonl: 1 query id\(s\) in qrels/test.tsv have no text"):
        BeirFolder(root).labeled()


@pytest.mark.dataset("scifact")
def test_scifact_loads_when_present():
    provider = BeirFolder(dataset_path("scifact"))
    assert len(provider.load()) == 5183
    labeled = provider.labeled()
    assert len(labeled) == 300
    assert sum(len(q.relevant) for q in labeled) == 339


# --- a folder of Markdown, text and HTML files ---------------------------------------------------


@requires_files
def test_a_folder_of_markdown_text_and_html_files_is_a_corpus(tmp_path):
    corpus = open_corpus(make_help_center(tmp_path / "articles")).load()
    # ids: the path below the folder, with forward slashes and no extension; hidden folders and
    # files of other kinds are not read
    assert corpus.doc_ids == ("account/close", "account/reset-password", "billing/invoices", "billing/refunds",
                              "getting-started", "notes")
    docs = {d.doc_id: d for d in corpus}
    assert {i: d.title for i, d in docs.items()} == {
        "account/close": "Close your account",  # no <title>: the first <h1>
        "account/reset-password": "Reset your password",  # <title> before <h1>
        "billing/invoices": "invoices",  # plain text: the file's name
        "billing/refunds": "Refunds and returns",  # the first heading, without its markup
        "getting-started": "Getting started with Acme",  # front matter before the heading
        "notes": "notes",
    }
    assert docs["getting-started"].description == "Your first steps."
    assert docs["getting-started"].meta == {"valid_from": "2024-01-01", "tags": ["onboarding"]}
    assert docs["billing/refunds"].filename == "billing/refunds.md"
    # contents: the text a reader sees, without markup, front matter, scripts or styles
    assert docs["getting-started"].content.startswith("Welcome")
    assert "Create an account with your work email" in docs["getting-started"].content
    assert "title:" not in docs["getting-started"].content and "---" not in docs["getting-started"].content
    assert "We refund a yearly plan within 30 days of purchase." in docs["billing/refunds"].content
    assert "*" not in docs["billing/refunds"].content
    assert "acme refund --last" in docs["billing/refunds"].content  # code stays text
    assert docs["billing/invoices"].content == HELP_CENTER["billing/invoices.txt"]
    page = docs["account/reset-password"].content
    assert "Click Forgot password on the sign-in page and follow the link we email you." in page
    assert "<" not in page and "tracking" not in page and "color" not in page
    assert "Open the settings, choose Close account and confirm by email." in docs["account/close"].content
    assert corpus.name == "articles"


@requires_files
def test_a_text_files_corpus_is_the_same_corpus_each_time_it_is_read(tmp_path):
    folder = make_help_center(tmp_path / "articles")
    first = open_corpus(folder).load()
    assert open_corpus(folder).load().fingerprint == first.fingerprint
    (folder / "notes.md").write_text("Opening hours: support answers from 8 to 17 on weekdays.\n")
    assert open_corpus(folder).load().fingerprint != first.fingerprint


@requires_files
@pytest.mark.parametrize(
    "files, message",
    [
        ({"Reset password.md": "# Reset\n\ntext\n"},
         r"^\S*Reset password.md: its path holds whitespace, which a document id \(the path\) cannot: rename the file$"),
        ({"a.md": "# A\n\ntext\n", "b.json": '{"doc_id": "b", "content": "x"}'},
         r"^\S*articles: holds JSON documents \(b.json\) and Markdown, text or HTML files \(a.md\)"),
        ({"a.md": "---\ntitle: [unclosed\n---\n# A\n"},
         r"^\S*a.md:2: field 'front matter': not valid YAML: "),
        ({"a.md": "---\n- a list\n---\n# A\n"}, r"^\S*a.md:2: field 'front matter': expected keys and values"),
        ({"a.md": "---\ntitle: [1, 2]\n---\n# A\n"}, r"^\S*a.md:2: field 'title': must be a string, got list"),
        ({"a.md": "# A\n\ntext\n", "a.html": "<h1>A</h1><p>text</p>"},
         r"^\S*a.md: field 'doc_id': duplicate doc_id 'a' \(also in \S*a.html\)$"),
        ({"a.md": "---\ntitle: Empty\n---\n\n"}, r"^\S*a.md: field 'content': document 'a': is empty$"),
        ({"a.html": "<html><head><title>Nothing</title></head><body></body></html>"},
         r"^\S*a.html: field 'content': document 'a': is empty"),
        ({"a.md": "---\nsuperseded_by: nowhere\n---\n# A\n\ntext\n"},
         r"^\S*a.md: field 'superseded_by': document 'a': superseded_by names 'nowhere'"),
        ({"a.md": "---\ndoc_id: b\n---\n# A\n\ntext\n"},
         r"^\S*a.md: field 'doc_id': a front matter cannot set 'doc_id': a file's id is its path"),
    ],
    ids=["whitespace", "mixed", "bad-yaml", "not-a-mapping", "title-list", "duplicate", "empty", "empty-html",
         "superseded", "own-id"],
)
def test_bad_text_files_name_file_line_and_field(tmp_path, files, message):
    folder = tmp_path / "articles"
    folder.mkdir()
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")
    with pytest.raises(RetrievalEvalError, match=message) as caught:
        open_corpus(folder).load()
    assert "\n" not in str(caught.value)


@requires_files
def test_a_text_file_that_is_not_utf8_names_its_line(tmp_path):
    (tmp_path / "a.md").write_bytes(b"# Caf\xc3\xa9\n\nOpen from 9 to 5, caf\xe9 included.\n")
    with pytest.raises(RetrievalEvalError, match=r"a.md:3: not valid UTF-8"):
        open_corpus(tmp_path).load()


def test_an_empty_folder_names_every_kind_it_reads(tmp_path):
    with pytest.raises(RetrievalEvalError, match=r"no documents found \(expected \*.json or \*.jsonl files, or "
                                                 r"Markdown \(\*.md\), text \(\*.txt\) or HTML \(\*.html\) files\)"):
        open_corpus(tmp_path).load()


def test_a_readme_or_licence_beside_json_documents_describes_the_folder_and_is_no_document(tmp_path):
    folder = write_docs(tmp_path / "kb", [{"doc_id": "vpn", "content": "Install the client."}])
    (folder / "README.md").write_text("# Our knowledge base\n\nExported nightly.\n")
    (folder / "LICENSE.txt").write_text("CC-BY 4.0\n")
    assert open_corpus(folder).load().doc_ids == ("vpn",)  # read as before the folder took text files
    (folder / "howto.md").write_text("# How to\n\ntext\n")  # an article is still one kind too many
    with pytest.raises(RetrievalEvalError, match=r"holds JSON documents \(vpn.json\) and Markdown, text or HTML "
                                                  r"files \(howto.md\)"):
        open_corpus(folder).load()

"""The labeled set's checks against the corpus alone: near-duplicate questions grouped, questions
leaking their document's title or copying a passage, near-copies of training questions; each
finding names its questions; a committed file accepts findings, each with a reason."""

from __future__ import annotations

import json

import pytest

from conftest import CORPUS, QUESTIONS, REPO, write_docs
from pytest_retrieval_eval.cli import main as cli
from pytest_retrieval_eval.data.corpus import open_corpus
from pytest_retrieval_eval.data.labeled import LabeledSet, load_questions_cache
from pytest_retrieval_eval.data.set_checks import (check_set, leak, leakage, near_duplicates, read_training,
                                                   similarity, training_copies)
from pytest_retrieval_eval.errors import RetrievalEvalError
from pytest_retrieval_eval.types import Doc, LabeledQuery


def test_questions_asking_the_same_thing_are_one_group_naming_each():
    questions = [("a", "How do I reset my password?"), ("b", "how do I reset my PASSWORD"),
                 ("c", "Where is the printer on floor two?"), ("d", "How do i  reset my password!")]
    found = near_duplicates(questions)
    assert [f.query_ids for f in found] == [("a", "b", "d")]
    assert "3 questions, the same question" in found[0].detail


def test_content_words_alike_past_the_threshold_are_near_duplicates_and_below_it_not():
    a = "What are the steps to reset a forgotten account password?"
    b = "What are steps to reset forgotten account password quickly?"  # 5 of 6 content words shared
    c = "What are the steps to change an account email address?"
    assert similarity(a, b) == pytest.approx(5 / 6)
    assert [f.query_ids for f in near_duplicates([("a", a), ("b", b), ("c", c)])] == [("a", "b")]
    assert near_duplicates([("a", a), ("b", b)], threshold=0.9) == []


def test_a_short_question_is_only_a_duplicate_of_its_own_text():
    assert similarity("printer jam", "printer jammed") == 0.0
    assert similarity("Printer jam?", "printer jam") == 1.0


def doc(doc_id, title, content, filename=""):
    return Doc(doc_id, content, title=title, filename=filename)


DOCS = {d.doc_id: d for d in [
    doc("vpn", "Connecting to the VPN", "Install the client.\n\nOpen the client and sign in with your badge "
        "number and the one-time code from the authenticator app."),
    doc("reset", "Notes", "Passwords expire every ninety days.", filename="reset_password.py"),
]}


def q(qid, text, gold):
    return LabeledQuery(qid, text, {gold: 1})


def test_a_question_naming_its_documents_title_or_file_leaks_it():
    found = leakage([q("t", "How do I start connecting to the VPN?", "vpn"),
                     q("f", "Where is reset_password defined?", "reset")], DOCS)
    assert [(f.kind, f.query_ids) for f in found] == [("leaks_title", ("t",)), ("leaks_title", ("f",))]
    assert "title of vpn" in found[0].detail and "67%" in found[0].detail  # start, connecting, vpn
    assert "67%" in found[1].detail  # reset, password of reset, password, defined


def test_a_question_copying_a_passage_leaks_it_and_a_paraphrase_does_not():
    copying = q("c", "Sign in with your badge number and the one-time code from the authenticator app?", "vpn")
    paraphrase = q("p", "What do I type when the remote access software asks who I am?", "vpn")
    found = leakage([copying, paraphrase], DOCS)
    assert [(f.kind, f.query_ids) for f in found] == [("leaks_passage", ("c",))]
    assert "word trigrams verbatim" in found[0].detail and "a passage of vpn" in found[0].detail


def test_leak_takes_any_passage_so_labeled_evidence_can_stand_in_for_the_document():
    question = "which authenticator app is the one-time code for the badge sign in from"
    assert leak(question, "the one-time code from the authenticator app and your badge to sign in") is not None
    assert leak(question, "Install the client.") is None


def test_training_questions_near_copied_by_the_set_are_named_with_the_one_copied():
    questions = [("a", "How do I reset my password?"), ("b", "Where is the printer on floor two?")]
    found = training_copies(questions, ["where is the printer on floor two", "Something else entirely here"])
    assert [(f.kind, f.query_ids) for f in found] == [("training_copy", ("b",))]
    assert 'the same as training question "where is the printer on floor two"' in found[0].detail


def test_a_training_file_is_read_as_lines_or_jsonl_and_a_bad_line_is_named(tmp_path):
    (tmp_path / "t.txt").write_text("one question?\n\n two questions? \n")
    assert read_training(tmp_path / "t.txt") == ["one question?", "two questions?"]
    (tmp_path / "t.jsonl").write_text('{"question": "a?"}\n{"query": "b?"}\n{"text": "c?"}\n')
    with pytest.raises(RetrievalEvalError, match=r"t\.jsonl:3.*field 'question'|t\.jsonl:3"):
        read_training(tmp_path / "t.jsonl")
    (tmp_path / "u.jsonl").write_text('{"question": "a?"}\nnot json\n')
    with pytest.raises(RetrievalEvalError, match=r"u\.jsonl:2"):
        read_training(tmp_path / "u.jsonl")


def test_the_bundled_hand_written_set_has_no_finding_until_a_copy_and_a_repeat_are_added():
    corpus = open_corpus(CORPUS).load()
    labeled = load_questions_cache(QUESTIONS)
    assert check_set(labeled, corpus.docs) == []
    first = labeled.queries[0]
    gold = corpus.by_id()[first.gold[0]] if hasattr(corpus, "by_id") else next(
        d for d in corpus.docs if d.doc_id == first.gold[0])
    sentence = " ".join(gold.content.split()[:14])
    more = LabeledSet((*labeled.queries, LabeledQuery("again", first.question.upper(), dict(first.relevant)),
                       LabeledQuery("copy", sentence + "?", dict(first.relevant))), name=labeled.name)
    found = check_set(more, corpus.docs, ["nothing like any question here at all"])
    assert [(f.kind, f.query_ids) for f in found] == [("near_duplicate", (first.query_id, "again")),
                                                      ("leaks_passage", ("copy",))]


@pytest.mark.parametrize("threshold", [0.5, 0.6, 0.8])
def test_the_indexed_search_finds_exactly_the_pairs_comparing_every_pair_finds(threshold):
    import itertools
    import random

    from pytest_retrieval_eval.data.set_checks import _pairs

    rng = random.Random(2)
    vocab = [f"word{i}" for i in range(10)]  # a dense set: many pairs near any threshold
    texts = [" ".join(rng.choice(vocab) for _ in range(rng.randint(2, 7))) for _ in range(200)]
    every = {(i, j) for i, j in itertools.combinations(range(len(texts)), 2)
             if similarity(texts[i], texts[j]) >= threshold}
    assert len(every) > 50
    assert {(i, j) for i, j, _ in _pairs(texts, None, threshold)} == every
    probe, other = texts[80:], texts[:80]
    across = {(i, j) for i in range(len(probe)) for j in range(len(other)) if similarity(probe[i], other[j]) >= threshold}
    assert {(i, j) for i, j, _ in _pairs(probe, other, threshold)} == across


# --- accepted findings: a committed file that lets CI run check --labels ---------------------------

#: a team's set with two findings: a question asked twice (r1, r2) and one naming its article's title (t1)
TEAM_LABELS = ("id,question,doc_id\n"
               "r1,How do I reset my password?,reset\n"
               "r2,how do I reset my PASSWORD,reset\n"
               "t1,How do I start connecting to the VPN?,vpn\n"
               "w1,Which network do visitors join in the lobby?,wifi\n")


@pytest.fixture
def team(tmp_path, monkeypatch, capsys):
    """A project folder with its corpus (kb/) and imported labels (labels.json), the command's
    working directory, so its messages name the files as the team typed them."""
    write_docs(tmp_path / "kb", [
        {"doc_id": "reset", "title": "Passwords", "content": "Open the sign-in page and choose Forgot password."},
        {"doc_id": "vpn", "title": "Connecting to the VPN", "content": "Install the client and sign in."},
        {"doc_id": "wifi", "title": "Guest network", "content": "Visitors join Acme-Guest with the daily code."}])
    (tmp_path / "labels.csv").write_text(TEAM_LABELS)
    monkeypatch.chdir(tmp_path)
    assert cli(["label", "import", "labels.csv", "--corpus", "kb", "--questions", "labels.json"]) == 0
    capsys.readouterr()
    return tmp_path


def check(*flags: str) -> list[str]:
    return ["check", "--corpus", "kb", "--questions", "labels.json", "--labels", *flags]


def test_each_failing_finding_prints_the_line_that_accepts_it(team, capsys):
    assert cli(check()) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[1] == "labeled set labels.json: 4 questions checked against kb: 2 finding(s)"
    to_add = [line.split(": ", 1)[1] for line in out if line.startswith("    to accept it")]
    assert [line for line in out if line.startswith("    to accept it")][0].startswith(
        "    to accept it, add this line to labels.accepted.jsonl and write why in reason: ")
    assert [json.loads(x) for x in to_add] == [
        {"kind": "near_duplicate", "questions": ["r1", "r2"], "reason": ""},
        {"kind": "leaks_title", "questions": ["t1"], "reason": ""}]


def test_findings_accepted_with_a_reason_pass_and_are_shown_as_accepted(team, capsys):
    (team / "labels.accepted.jsonl").write_text(
        '{"kind": "near_duplicate", "questions": ["r2", "r1"], "reason": "typed on mobile and on desktop"}\n\n'
        '{"kind": "leaks_title", "questions": ["t1"], "reason": "users type the article title"}\n')
    assert cli(check()) == 0  # read beside the labels by default
    out = capsys.readouterr().out.splitlines()
    assert out[1:] == [
        "labeled set labels.json: 4 questions checked against kb: 2 finding(s), 2 accepted in labels.accepted.jsonl",
        "  accepted: near_duplicate: r1, r2 (labels.accepted.jsonl:1: typed on mobile and on desktop)",
        "  accepted: leaks_title: t1 (labels.accepted.jsonl:3: users type the article title)"]


def test_a_finding_not_accepted_still_fails_beside_the_accepted_ones(team, capsys):
    (team / "ok.jsonl").write_text('{"kind": "leaks_title", "questions": ["t1"], "reason": "users type the title"}\n')
    assert cli(check("--accept", "ok.jsonl")) == 1
    out = capsys.readouterr().out
    assert "2 finding(s), 1 accepted in ok.jsonl" in out
    assert ('add this line to ok.jsonl and write why in reason: {"kind": "near_duplicate", "questions": ["r1", "r2"], '
            '"reason": ""}') in out


def test_an_entry_no_finding_matches_is_stale_and_fails(team, capsys):
    (team / "labels.json").write_text((team / "labels.json").read_text().replace("how do I reset my PASSWORD",
                                                                                  "Where do I change my password?"))
    (team / "labels.accepted.jsonl").write_text(
        '{"kind": "leaks_title", "questions": ["t1"], "reason": "users type the article title"}\n'
        '{"kind": "near_duplicate", "questions": ["r1", "r2"], "reason": "typed on mobile and on desktop"}\n'
        '{"kind": "no_signal", "questions": ["w1"], "reason": "a smoke test"}\n')
    assert cli(check()) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[1] == ("labeled set labels.json: 4 questions checked against kb: 1 finding(s), 1 accepted in "
                      "labels.accepted.jsonl, 1 stale entry in labels.accepted.jsonl")
    assert "  labels.accepted.jsonl:2: stale: no near_duplicate finding names r1, r2 now: remove the line" in out
    # a kind only --results looks for is not stale when the check did not look
    assert ("  labels.accepted.jsonl: 1 entry of kinds this check did not look for (they need --results): neither "
            "matched nor stale") in out


@pytest.mark.parametrize("line, message", [
    ('{"kind": "leaks_title", "questions": ["t1"]}', ":2: field 'reason': required: why the finding stays"),
    ('{"kind": "leaks_title", "questions": ["t1"], "reason": "  "}', ":2: field 'reason': required: why the finding"),
    ('{"kind": "leaky", "questions": ["t1"], "reason": "x"}', ":2: field 'kind': 'leaky' is no kind of finding"),
    ('{"kind": "leaks_title", "questions": "t1", "reason": "x"}', ":2: field 'questions': required: the finding's"),
    ('{"kind": "leaks_title", "questions": ["t1"], "reason": "x", "why": "y"}', ":2: field 'why': unknown field"),
    ('{"kind": "leaks_title", "questions": ["t1"], "reason": "x"}\n{"kind": "leaks_title", "questions": ["t1"], '
     '"reason": "y"}', ":3: field 'questions': accepts the same finding as line 2"),
])
def test_a_bad_entry_is_one_line_naming_file_line_and_field(team, capsys, line, message):
    (team / "labels.accepted.jsonl").write_text("\n" + line + "\n")
    assert cli(check()) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: labels.accepted.jsonl" + message) and err.count("\n") == 1, err


def test_a_named_accept_file_that_is_missing_is_an_error(team, capsys):
    assert cli(check("--accept", "nope.jsonl")) == 2
    assert capsys.readouterr().err == "error: nope.jsonl: file not found\n"

# --- turns: a question with the conversation before it ---------------------------------------------------

def follow_up(conversation: str, first: str, last: str = "and does it need a code?", doc: str = "vpn") -> LabeledQuery:
    from pytest_retrieval_eval.types import Turn

    return LabeledQuery(f"{conversation}#2", last, {doc: 1}, conversation=conversation, turn=2,
                        history=(Turn("user", first), Turn("assistant", "Here is how.")))


def test_the_same_follow_up_after_other_conversations_is_no_duplicate_and_after_the_same_one_is():
    vpn, wifi, printers = (follow_up("c1", "How do I connect to the VPN from home?"),
                           follow_up("c2", "How do I join the office wifi with my laptop?"),
                           follow_up("c3", "How do I add the printers on floor two?"))
    labeled = LabeledSet((vpn, wifi, printers, q("q1", "and does it need a code?", "vpn")), name="s")
    assert check_set(labeled, DOCS.values()) == []  # a question alone is no turn asked after something
    again = follow_up("c4", "how do I connect to the VPN from home")
    found = check_set(LabeledSet((vpn, wifi, printers, again), name="s"), DOCS.values())
    assert [(f.kind, f.query_ids) for f in found] == [("near_duplicate", ("c1#2", "c4#2"))]
    assert found[0].detail == ('2 questions, the same question: "and does it need a code?" after conversations '
                               "alike")
    first_turns = LabeledSet((LabeledQuery("c5#1", "How do I reset my password?", {"reset": 1}, conversation="c5",
                                           turn=1), q("q2", "how do I reset my password", "reset")), name="s")
    assert [f.query_ids for f in check_set(first_turns, DOCS.values())
            if f.kind == "near_duplicate"] == [("c5#1", "q2")]  # nothing before either


def test_check_labels_passes_three_conversations_ending_alike_and_fails_a_repeated_one(tmp_path, capsys):
    import json

    from conftest import write_docs
    from pytest_retrieval_eval.cli import main as cli

    folder = write_docs(tmp_path / "kb", [{"doc_id": d, "title": d.upper(), "content": f"All about the {d} setup."}
                                          for d in ("vpn", "wifi", "printers")])
    labels, cache = tmp_path / "labels.jsonl", tmp_path / "questions.cache.json"

    def conversation(cid: str, topic: str) -> str:
        return json.dumps({"conversation": cid, "turns": [
            {"user": f"How do I set up the {topic} on my laptop?", "relevant": {topic: 1}},
            {"user": "and does it need a code?", "relevant": {topic: 1}}]})

    labels.write_text("\n".join(conversation(c, t) for c, t in (("c1", "vpn"), ("c2", "wifi"), ("c3", "printers")))
                      + "\n")
    assert cli(["label", "import", str(labels), "--corpus", str(folder), "--questions", str(cache)]) == 0
    capsys.readouterr()
    assert cli(["check", "--labels", "--corpus", str(folder), "--questions", str(cache)]) == 0
    assert "no findings" in capsys.readouterr().out
    labels.write_text(labels.read_text() + conversation("c4", "vpn") + "\n")
    assert cli(["label", "import", str(labels), "--corpus", str(folder), "--questions", str(cache)]) == 0
    capsys.readouterr()
    assert cli(["check", "--labels", "--corpus", str(folder), "--questions", str(cache)]) == 1
    out = capsys.readouterr().out
    assert "c1#1, c4#1" in out and "c1#2, c4#2" in out and "c2#2" not in out


def test_a_follow_up_is_no_copy_of_a_training_question_asked_without_its_conversation():
    vpn, wifi, printers = (follow_up("c1", "How do I connect to the VPN from home?"),
                           follow_up("c2", "How do I join the office wifi with my laptop?"),
                           follow_up("c3", "How do I add the printers on floor two?"))
    first = LabeledQuery("c5#1", "How do I reset my password?", {"reset": 1}, conversation="c5", turn=1)
    labeled = LabeledSet((vpn, wifi, printers, first, q("q1", "and does it need a code?", "vpn")), name="s")
    found = [f for f in check_set(labeled, DOCS.values(), ["and does it need a code?", "how do I reset my password"])
             if f.kind == "training_copy"]
    # the question and the first turn are asked as the training questions are, with nothing before them
    assert [f.query_ids for f in found] == [("c5#1",), ("q1",)]
    assert 'the same as training question "and does it need a code?"' in found[1].detail


REFUNDS = {"refunds": doc("refunds", "Refunds", "Refunds take 14 days.\n\nA refund is paid to the card used for "
                          "the purchase.")}


def refund_turn(first: str, reply: str, evidence: str = "A refund is paid to the card used for the purchase"):
    from pytest_retrieval_eval.types import Turn

    return LabeledQuery("c-ref#2", "and so where is it paid to?", {"refunds": 1},
                        {"evidence": {"refunds": [evidence]}} if evidence else {}, conversation="c-ref", turn=2,
                        history=(Turn("user", first), Turn("assistant", reply)))


def test_a_turn_whose_conversation_quotes_its_answer_leaks_it_naming_where():
    quoting = refund_turn("I want my money back for something I bought",
                          "A refund is paid to the card used for the purchase, and refunds take 14 days.")
    found = leakage([quoting], REFUNDS)
    assert [(f.kind, f.query_ids) for f in found] == [("leaks_passage", ("c-ref#2",))]
    assert found[0].detail == ('turn 1\'s reply quotes its evidence in refunds: "A refund is paid to the card used '
                               'for the purchase"')
    # a long reply holding the answer among other words: what the engine is given holds the answer
    long = refund_turn("I want my money back for something I bought",
                       "Sorry to hear that! Our team processes every request by hand, usually within a day or two, "
                       "and a refund is paid to the card used for the purchase once the goods are back with us.")
    assert [f.detail.split(":")[0] for f in leakage([long], REFUNDS)] == ["turn 1's reply quotes its evidence in refunds"]
    # without evidence, the answer is a passage of the gold document: a message quoting one whole
    copying = refund_turn("Refunds take 14 days, right?", "Yes.", evidence="")
    assert [f.detail for f in leakage([copying], REFUNDS)] == [
        'turn 1\'s question quotes a passage of refunds: "Refunds take 14 days."']
    said = refund_turn("I want my money back for something I bought", "Sure, I can help with that.")
    assert leakage([said], REFUNDS) == []  # a conversation that does not give the answer away
    other = refund_turn("I want my money back for something I bought", "Refunds take 14 days.")
    assert leakage([other], REFUNDS) == []  # it quotes the document, not this turn's answer


def test_replies_retelling_their_document_as_a_help_desk_does_give_no_follow_up_away():
    corpus = open_corpus(REPO / "examples" / "helpdesk" / "kb").load()
    labeled = load_questions_cache(REPO / "examples" / "helpdesk" / "conversations.json")
    assert labeled.has_conversations
    assert [f for f in check_set(labeled, corpus.docs) if f.kind == "leaks_passage"] == []


def test_check_labels_names_a_follow_up_whose_earlier_reply_quotes_its_evidence(tmp_path, capsys):
    folder = write_docs(tmp_path / "kb", [{"doc_id": "refunds", "title": "Refunds",
                                           "content": "Refunds take 14 days.\n\nA refund is paid to the card used "
                                                      "for the purchase."}])
    labels, cache = tmp_path / "conv.csv", tmp_path / "q.json"
    labels.write_text("conversation,turn,user,assistant,doc_id,evidence\n"
                      "c-ref,1,I want my money back for something I bought,\"A refund is paid to the card used for "
                      "the purchase, and refunds take 14 days.\",refunds,Refunds take 14 days\n"
                      "c-ref,2,and so where is it paid to?,,refunds,A refund is paid to the card used for the purchase\n")
    assert cli(["label", "import", str(labels), "--corpus", str(folder), "--questions", str(cache)]) == 0
    capsys.readouterr()
    assert cli(["check", "--labels", "--corpus", str(folder), "--questions", str(cache)]) == 1
    out = capsys.readouterr().out
    assert "leaks_passage: c-ref#2: turn 1's reply quotes its evidence in refunds" in out

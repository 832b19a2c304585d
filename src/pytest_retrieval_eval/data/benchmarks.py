"""Public conversational benchmarks' files, read as they are (``label import``): IBM's MTRAG
(its retrieval tasks and its conversation files) and TREC CAsT / iKAT topic files with their
qrels. Each becomes conversations (``data/conversations.py``): its labeled turns, the turns
before them as history, a human rewrite where the benchmark has one, and unanswerable turns kept
as such. The field mapping of each format is in docs/labels.md.

- MTRAG retrieval tasks (``human/retrieval_tasks/<collection>/``): ``*_questions.jsonl`` (the
  user's turns so far, ``|user|: `` each, one line per task), ``*_lastturn.jsonl`` and
  ``*_rewrite.jsonl`` (optional), ``qrels/dev.tsv``; task ids ``conversation<::>turn``. A folder
  of such collections is read whole.
- MTRAG conversation files (``reference*.jsonl``, one task a line, or a ``.json`` object with
  ``tasks`` and ``documents``): a task's ``input`` (the conversation so far, ``user`` and ``agent``
  messages), ``contexts`` (its relevant passages), ``answerability``, ``Question Type``,
  ``Multi-Turn`` and ``Collection`` (kept as tags).
- TREC CAsT (2019-2021) and iKAT topic files: a JSON list of topics (``number``, ``turn`` or
  ``turns``), each turn's text (``raw_utterance`` / ``utterance``), manual rewrite
  (``manual_rewritten_utterance`` / ``resolved_utterance``) and reply (``passage`` /
  ``response``); the labels in a TREC qrels file (``--qrels``), query ids ``topic_turn``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

from .._textfiles import json_lines, read_text
from ..errors import RetrievalEvalError
from ..types import LabeledQuery
from .conversations import TurnLabel, conversation_problem, turns_of
from .label_lifecycle import IMPORTED

#: how MTRAG names a task: its conversation and the turn's 1-based position among the user's turns
MTRAG_SEPARATOR = "<::>"
#: how MTRAG's retrieval tasks prefix each user turn of a task's text
USER_PREFIX = "|user|: "
#: MTRAG's answerability of a turn no passage answers: kept as an unanswerable turn
UNANSWERABLE = "UNANSWERABLE"


class Entries(list):
    """What a reader read: the labeled entries in file order, the conversations it left out for
    having no labeled turn (``left_out``), and what else the import should say (``notes``)."""

    def __init__(self, items: Iterable[LabeledQuery] = (), left_out: Iterable[str] = (),
                 notes: Iterable[str] = ()) -> None:
        super().__init__(items)
        self.left_out = list(left_out)
        self.notes = list(notes)


def tag_value(family: str, value: str) -> str | None:
    """A benchmark's label as a tag of a family (``question-type:how-to``), or None for none
    (``N/A``, empty): lower case, each run of characters a tag cannot hold one ``-``."""
    slug = re.sub(r"[^\w.+]+", "-", value.strip().lower()).strip("-")
    return f"{family}:{slug}" if slug and slug not in ("n-a", "na", "none") else None


def _values(raw: Any) -> list[str]:
    return [str(v) for v in (raw if isinstance(raw, list) else [raw] if raw not in (None, "") else [])]


def _turns(conversation: str, labels: Sequence[TurnLabel], left_out: list[str]) -> list[LabeledQuery]:
    out = turns_of(conversation, labels)
    if not out:
        left_out.append(conversation)
    return out


def _task(raw: Any, bad: Callable[[str], RetrievalEvalError]) -> tuple[str, int]:
    """(conversation, turn) of an MTRAG task id ``conversation<::>turn``."""
    if not isinstance(raw, str) or MTRAG_SEPARATOR not in raw:
        raise bad(f"must be a task id 'conversation{MTRAG_SEPARATOR}turn', got {raw!r:.60}")
    conversation, _, turn = raw.rpartition(MTRAG_SEPARATOR)
    if not (turn.isascii() and turn.isdigit() and int(turn) >= 1):
        raise bad(f"task id {raw!r}: the turn after '{MTRAG_SEPARATOR}' must be a whole number >= 1")
    problem = conversation_problem(conversation)
    if problem:
        raise bad(f"task id {raw!r}: {problem}")
    return conversation, int(turn)


def _first_line(path: Path, start: str) -> int | None:
    """The first line of ``path`` that starts with ``start`` (a task's first qrels line)."""
    from .._textfiles import numbered_lines

    return next((n for n, line in numbered_lines(path) if line.startswith(start)), None)


def _source(path: str | Path, line: int | None, fields: Mapping[str, str], *, tags: bool = True,
            **extra: Any) -> dict[str, Any]:
    """An entry's source as the import reads it: who labeled it, where (file, line, fields), and
    what the format carries (grades; tags, where it has them: an import over the cache keeps a
    question's tags only where the file has none)."""
    return {"by": f"{IMPORTED}:{Path(path).name}", "_file": str(path), "_line": line, "_fields": dict(fields),
            "_carries": ("tags", "grades") if tags else ("grades",), **extra}


# --- MTRAG retrieval tasks ----------------------------------------------------------------------

def is_mtrag_tasks(path: str | Path) -> bool:
    """A folder of MTRAG retrieval tasks: a collection (``*_questions.jsonl`` and ``qrels/``), or
    a folder of collections."""
    return bool(_collections(Path(path)))


def _collections(path: Path) -> list[Path]:
    def one(p: Path) -> bool:
        return p.is_dir() and (p / "qrels").is_dir() and any(p.glob("*_questions.jsonl"))

    if one(path):
        return [path]
    return sorted(p for p in path.iterdir() if one(p)) if path.is_dir() else []


def _qrels_file(collection: Path) -> Path:
    found = sorted((collection / "qrels").glob("*.tsv"))
    if not found:
        raise RetrievalEvalError("no qrels file (qrels/dev.tsv)", path=collection / "qrels")
    return next((p for p in found if p.name == "dev.tsv"), found[0])


def _task_texts(path: Path, *, joined: bool) -> dict[str, tuple[list[str], int]]:
    """task id -> (its user turns, as written, without the ``|user|: `` prefix; its line) of one
    of a collection's task files; ``joined``: a line holds the user's turns so far (``questions``),
    else the one turn (``lastturn``, ``rewrite``)."""
    out: dict[str, tuple[list[str], int]] = {}
    for number, record in json_lines(path, unique_keys=True):
        def bad(message: str, fld: str) -> RetrievalEvalError:
            return RetrievalEvalError(message, path=path, line=number, field=fld)

        if not isinstance(record, dict):
            raise bad("expected an object with '_id' and 'text'", "line")
        tid, text = record.get("_id"), record.get("text")
        _task(tid, lambda m: bad(m, "_id"))
        if tid in out:
            raise bad(f"task '{tid}' is on line {out[tid][1]} already", "_id")
        if not isinstance(text, str) or not text.startswith(USER_PREFIX):
            raise bad(f"must be a string starting with {USER_PREFIX!r} (the user's turn)", "text")
        parts = text[len(USER_PREFIX):].split("\n" + USER_PREFIX) if joined else [text[len(USER_PREFIX):]]
        if not all(p.strip() for p in parts):
            raise bad("a user turn is empty", "text")
        out[tid] = (parts, number)
    return out


def read_mtrag_tasks(folder: str | Path) -> Entries:
    """MTRAG's retrieval tasks of a collection (or a folder of collections), as they are: each task
    a labeled turn with the user's turns before it (its ``*_questions.jsonl`` line), its human
    rewrite (``*_rewrite.jsonl``), its judged passages (``qrels``), tagged with its collection."""
    folder = Path(folder)
    collections = _collections(folder)
    if not collections:
        raise RetrievalEvalError("not a folder of MTRAG retrieval tasks (a collection's *_questions.jsonl and "
                                 "qrels/dev.tsv, or folders of them)", path=folder)
    out = Entries()
    for collection in collections:
        _collection(collection, out)
    return out


def _one(collection: Path, suffix: str) -> Path | None:
    found = sorted(collection.glob(f"*_{suffix}.jsonl"))
    if len(found) > 1:
        raise RetrievalEvalError(f"{len(found)} files end in _{suffix}.jsonl ({', '.join(p.name for p in found)}): "
                                 "a collection holds one", path=collection)
    return found[0] if found else None


def _collection(collection: Path, out: Entries) -> None:
    from ..ir.qrels import Qrels

    questions = _one(collection, "questions")
    assert questions is not None  # _collections found it
    joined = _task_texts(questions, joined=True)
    last_path, rewrite_path = _one(collection, "lastturn"), _one(collection, "rewrite")
    last = _task_texts(last_path, joined=False) if last_path else {}
    rewrites = _task_texts(rewrite_path, joined=False) if rewrite_path else {}
    qrels_path = _qrels_file(collection)
    qrels = Qrels.from_beir_tsv(qrels_path).judgements
    tag = tag_value("collection", collection.name)
    for texts, path in ((last, last_path), (rewrites, rewrite_path)):
        extra = [t for t in texts if t not in joined]
        if extra:
            raise RetrievalEvalError(f"task '{extra[0]}' is not in {questions.name}", path=path,
                                     line=texts[extra[0]][1], field="_id")
    unknown = sorted(set(qrels) - set(joined))
    if unknown:
        raise RetrievalEvalError(f"judges task '{unknown[0]}', which {questions.name} does not hold"
                                 + (f" (and {len(unknown) - 1} more)" if len(unknown) > 1 else ""),
                                 path=qrels_path, line=_first_line(qrels_path, unknown[0] + "\t"), field="query-id")
    by_conversation: dict[str, dict[int, str]] = {}
    for tid, (parts, number) in joined.items():
        conversation, turn = _task(tid, lambda m: RetrievalEvalError(m, path=questions, line=number, field="_id"))
        if len(parts) != turn:
            raise RetrievalEvalError(f"task '{tid}' holds {len(parts)} user turn{'s' * (len(parts) != 1)}, but its id "
                                     f"names turn {turn}",
                                     path=questions, line=number, field="text")
        if tid in last and last[tid][0][0] != parts[-1]:
            raise RetrievalEvalError(f"task '{tid}': its last turn reads {last[tid][0][0]!r:.80} here, "
                                     f"{parts[-1]!r:.80} in {questions.name} (line {number})", path=last_path,
                                     line=last[tid][1], field="text")
        said = by_conversation.setdefault(conversation, {})
        for n, text in enumerate(parts, start=1):
            if said.setdefault(n, text) != text:
                raise RetrievalEvalError(f"task '{tid}': turn {n} of conversation '{conversation}' reads {text!r:.60}, "
                                         f"another task of it {said[n]!r:.60}", path=questions, line=number,
                                         field="text")
    for conversation, said in by_conversation.items():
        labels = []
        for n in range(1, max(said) + 1):
            tid = f"{conversation}{MTRAG_SEPARATOR}{n}"
            relevant = qrels.get(tid)
            line = _first_line(qrels_path, tid + "\t") if relevant else None
            if n not in said:  # no task names this turn's text: the conversation has a hole
                raise RetrievalEvalError(f"conversation '{conversation}': no task holds turn {n}", path=questions)
            labels.append(TurnLabel(said[n], None, relevant or None,
                                    _source(qrels_path, line, {"docs": "corpus-id"}, task=tid) if relevant else {},
                                    rewrite=rewrites[tid][0][0] if tid in rewrites else None,
                                    tags=(tag,) if tag else ()))
        for q in _turns(conversation, labels, out.left_out):
            if not any(g >= 1 for g in q.relevant.values()):
                raise RetrievalEvalError(f"task '{q.source.get('task')}': every score is below 1, so no answer could "
                                         "ever count", path=qrels_path, line=q.source.get("_line"), field="score")
            out.append(q)


# --- MTRAG conversation files ---------------------------------------------------------------------

def is_mtrag_conversations(path: str | Path) -> bool:
    """A file of MTRAG tasks with their conversations: JSONL of task objects holding ``input``, or
    a JSON object with ``tasks`` (or a list of task objects)."""
    path = Path(path)
    if not path.is_file() or path.suffix not in (".json", ".jsonl"):
        return False
    first = _first_record(path)
    if isinstance(first, dict) and isinstance(first.get("tasks"), list):
        first = first["tasks"][0] if first["tasks"] else None
    elif isinstance(first, list):
        first = first[0] if first else None
    return isinstance(first, dict) and "input" in first and ("task_id" in first or "conversation_id" in first)


def _first_record(path: Path) -> Any:
    if path.suffix == ".jsonl":
        with open(path, encoding="utf-8-sig") as fh:
            line = next((x for x in fh if x.strip()), "")
        try:
            return json.loads(line)
        except ValueError:
            return None
    try:
        return json.loads(read_text(path))
    except (ValueError, RetrievalEvalError):
        return None


def _tasks_of(path: Path) -> tuple[list[tuple[dict, int | None, str]], list[dict]]:
    """((task, line, where) in file order, the file's ``documents``) of an MTRAG conversation file:
    ``where`` prefixes a field's name (``tasks[3].``) in a JSON file, whose line is the task id's."""
    if path.suffix == ".jsonl":
        tasks = []
        for number, record in json_lines(path, unique_keys=True):
            if not isinstance(record, dict):
                raise RetrievalEvalError("expected a task object", path=path, line=number)
            tasks.append((record, number, ""))
        return tasks, []
    text = read_text(path)
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        raise RetrievalEvalError(f"not valid JSON: {exc.msg} (column {exc.colno})", path=path, line=exc.lineno) from None
    listed = raw.get("tasks") if isinstance(raw, dict) else raw
    if not isinstance(listed, list):
        raise RetrievalEvalError("expected an object with 'tasks' (a list of task objects) or a list of tasks",
                                 path=path, field="tasks")
    documents = raw.get("documents") if isinstance(raw, dict) else None
    if documents is not None and not isinstance(documents, list):
        raise RetrievalEvalError("must be a list of passages ({document_id, text, title?})", path=path,
                                 field="documents")
    out, at = [], 0
    for i, task in enumerate(listed):
        if not isinstance(task, dict):
            raise RetrievalEvalError("must be a task object", path=path, field=f"tasks[{i}]")
        found = text.find(json.dumps(task.get("task_id")), at) if isinstance(task.get("task_id"), str) else -1
        at = max(at, found)
        out.append((task, text.count("\n", 0, found) + 1 if found >= 0 else None, f"tasks[{i}]."))
    return out, list(documents or [])


def read_mtrag_conversations(path: str | Path, rewrites: Mapping[str, str] | None = None) -> Entries:
    """An MTRAG conversation file as it is: each task a turn of its conversation (``input``: the
    conversation so far, the user's turn last), its ``contexts`` the relevant passages (grade 1),
    ``answerability`` UNANSWERABLE (and no context) an unanswerable turn, a task with no context
    otherwise a turn that searches nothing; ``answerability``, ``Question Type``, ``Multi-Turn`` and
    ``Collection`` kept as tags; the reply that follows a task (``targets``) its reference answer.
    ``rewrites``: task id -> a human rewrite (``*_rewrite.jsonl`` of the retrieval tasks)."""
    path = Path(path)
    tasks, _ = _tasks_of(path)
    by_conversation: dict[str, list[tuple[int, dict, int | None, str]]] = {}
    seen: dict[str, int | None] = {}
    for task, line, where in tasks:
        def bad(message: str, fld: str, line: int | None = line, where: str = where) -> RetrievalEvalError:
            return RetrievalEvalError(message, path=path, line=line, field=where + fld)

        raw_id = task.get("task_id")
        if raw_id is None and "conversation_id" in task and "turn" in task:
            raw_id = f"{task['conversation_id']}{MTRAG_SEPARATOR}{task['turn']}"
        conversation, turn = _task(raw_id, lambda m: bad(m, "task_id"))
        if raw_id in seen:
            raise bad(f"task '{raw_id}' appears twice" + (f" (first on line {seen[raw_id]})" if seen[raw_id] else ""),
                      "task_id")
        seen[raw_id] = line
        messages = task.get("input")
        if not isinstance(messages, list) or not messages or not all(
                isinstance(m, dict) and m.get("speaker") in ("user", "agent") and isinstance(m.get("text"), str)
                for m in messages):
            raise bad("must be a non-empty list of messages ({speaker: user or agent, text})", "input")
        if messages[0]["speaker"] != "user" or messages[-1]["speaker"] != "user":
            raise bad("must open and end with the user's message (the turn the task asks)", "input")
        users = sum(1 for m in messages if m["speaker"] == "user")
        if users != turn:
            raise bad(f"holds {users} user message{'s' * (users != 1)}, but the task id names turn {turn}", "input")
        by_conversation.setdefault(conversation, []).append((turn, task, line, where))
    out = Entries()
    used = set()
    for conversation, found in by_conversation.items():
        found.sort(key=lambda f: f[0])
        longest = found[-1][1]["input"]
        for turn, task, line, where in found:
            if [(m["speaker"], m["text"]) for m in task["input"]] != [(m["speaker"], m["text"])
                                                                        for m in longest[:len(task["input"])]]:
                raise RetrievalEvalError(f"task '{conversation}{MTRAG_SEPARATOR}{turn}': its conversation so far "
                                         f"differs from that of task '{conversation}{MTRAG_SEPARATOR}{found[-1][0]}'",
                                         path=path, line=line, field=where + "input")
        labels = _conversation_turns(longest)
        for turn, task, line, where in found:
            tid = f"{conversation}{MTRAG_SEPARATOR}{turn}"
            labels[turn - 1] = _labeled(labels[turn - 1], task, tid, path, line, where, rewrites)
            used.add(tid)
        out.extend(_turns(conversation, labels, out.left_out))
    if rewrites:
        unused = len(set(rewrites) - used)
        if unused:
            out.notes.append(f"{unused} rewrite{'s' * (unused != 1)} of tasks the file does not hold: not used")
    return out


def _conversation_turns(messages: Sequence[Mapping[str, str]]) -> list[TurnLabel]:
    """The turns of a conversation's messages: each user message a turn, the agent's messages after
    it (joined by a blank line) its reply."""
    turns: list[TurnLabel] = []
    for m in messages:
        if m["speaker"] == "user":
            turns.append(TurnLabel(m["text"]))
        else:
            prior = turns[-1]
            reply = m["text"] if prior.assistant is None else f"{prior.assistant}\n\n{m['text']}"
            turns[-1] = TurnLabel(prior.user, reply if reply.strip() else None)
    return turns


def _labeled(turn: TurnLabel, task: Mapping[str, Any], tid: str, path: Path, line: int | None, where: str,
             rewrites: Mapping[str, str] | None) -> TurnLabel:
    """A conversation's turn with its task's labels: relevant passages, answerability, tags."""
    def bad(message: str, fld: str) -> RetrievalEvalError:
        return RetrievalEvalError(message, path=path, line=line, field=where + fld)

    contexts = task.get("contexts") or []
    if not isinstance(contexts, list) or not all(isinstance(c, dict) and isinstance(c.get("document_id"), str)
                                                 and c["document_id"] for c in contexts):
        raise bad("must be a list of passages, each with its document_id", "contexts")
    answerability = _values(task.get("answerability", task.get("Answerability")))
    tags = {t for family, key in (("answerability", "answerability"), ("question-type", "Question Type"),
                                  ("multi-turn", "Multi-Turn"), ("collection", "Collection"))
            for v in _values(task.get(key, task.get(key.capitalize())))
            if (t := tag_value(family, v)) is not None}
    unanswerable = UNANSWERABLE in (a.upper() for a in answerability)
    relevant = {c["document_id"]: 1 for c in contexts}
    if unanswerable and relevant:
        raise bad(f"an {UNANSWERABLE} task quotes passages ({', '.join(relevant)}): no relevant document exists, "
                  "or it is answerable", "contexts")
    if not relevant and not unanswerable:
        return turn  # no passage answers it, and it is not said to be unanswerable: a turn that searches nothing
    targets = task.get("targets")
    answer = targets[0].get("text") if isinstance(targets, list) and targets and isinstance(targets[0], dict) else None
    source = _source(path, line, {"docs": where + "contexts"}, task=tid,
                     **({"reference_answer": answer} if isinstance(answer, str) and answer.strip() else {}))
    return TurnLabel(turn.user, turn.assistant, relevant or None, source, tags=tuple(sorted(tags)),
                     rewrite=(rewrites or {}).get(tid), answerable=not unanswerable)


def read_rewrites(path: str | Path) -> dict[str, str]:
    """task id -> the human rewrite, from MTRAG's ``*_rewrite.jsonl`` files: one file, or every one
    under a folder of retrieval tasks."""
    path = Path(path)
    files = [path] if path.is_file() else sorted(path.rglob("*_rewrite.jsonl"))
    if not files:
        raise RetrievalEvalError("no *_rewrite.jsonl file (MTRAG's human rewrites of the retrieval tasks)", path=path)
    out: dict[str, str] = {}
    for file in files:
        out.update({tid: parts[0] for tid, (parts, _) in _task_texts(file, joined=False).items()})
    return out


def passages(paths: Sequence[str | Path]) -> dict[str, dict[str, str]]:
    """doc id -> {content, title?} of every passage the MTRAG conversation files quote (a task's
    ``contexts`` with their text, a file's ``documents``); one id with two texts is refused."""
    out: dict[str, dict[str, str]] = {}
    where: dict[str, str] = {}
    for p in map(Path, paths):
        tasks, documents = _tasks_of(p)
        quoted = [(d, None, "documents.") for d in documents] + [
            (c, line, w + "contexts.") for task, line, w in tasks for c in (task.get("contexts") or [])
            if isinstance(c, dict)]
        for passage, line, fld in quoted:
            doc, text = passage.get("document_id"), passage.get("text")
            if not isinstance(text, str):
                continue  # an id only (the human subset's contexts): its text is in the file's documents
            if not isinstance(doc, str) or not doc:
                raise RetrievalEvalError("a passage needs a document_id", path=p, line=line, field=fld + "document_id")
            title = passage.get("title") if isinstance(passage.get("title"), str) else ""
            entry = {"content": text, **({"title": title} if title else {})}
            if doc in out and out[doc]["content"] != text:
                raise RetrievalEvalError(f"passage '{doc}' has two texts (the other in {where[doc]})", path=p, line=line,
                                         field=fld + "text")
            if doc not in out or (title and "title" not in out[doc]):
                out[doc] = entry
                where.setdefault(doc, str(p))
    return out


# --- TREC CAsT / iKAT topic files ---------------------------------------------------------------

#: field -> the names the topic files of CAsT 2019-2021 and iKAT give it, in order of preference
TOPIC_FIELDS = {"turns": ("turn", "turns"), "number": ("number", "turn_id"), "text": ("raw_utterance", "utterance"),
                "rewrite": ("manual_rewritten_utterance", "resolved_utterance"), "reply": ("response", "passage")}


def is_topics(path: str | Path) -> bool:
    path = Path(path)
    if not path.is_file() or path.suffix != ".json":
        return False
    first = _first_record(path)
    first = first[0] if isinstance(first, list) and first else None
    return isinstance(first, dict) and "number" in first and any(k in first for k in TOPIC_FIELDS["turns"])


def _field(record: Mapping[str, Any], role: str) -> tuple[Any, str]:
    for name in TOPIC_FIELDS[role]:
        if name in record:
            return record[name], name
    return None, TOPIC_FIELDS[role][0]


def read_topics(path: str | Path, qrels: str | Path | None) -> Entries:
    """A CAsT / iKAT topic file with its TREC qrels (query ids ``topic_turn``): each topic a
    conversation, each turn its text, its manual rewrite and the reply before the next turn; a
    turn the qrels judge is labeled (one judged with nothing relevant, unanswerable), the others
    only feed the history."""
    from ..ir.qrels import Qrels

    path = Path(path)
    if qrels is None:
        raise RetrievalEvalError("a topic file's labels are in a TREC qrels file (topic_turn 0 doc grade): give it with "
                                 "--qrels FILE", path=path)
    judged = Qrels.from_trec(qrels).judgements
    text = read_text(path)
    try:
        topics = json.loads(text)
    except json.JSONDecodeError as exc:
        raise RetrievalEvalError(f"not valid JSON: {exc.msg} (column {exc.colno})", path=path, line=exc.lineno) from None
    if not isinstance(topics, list):
        raise RetrievalEvalError("expected a list of topics", path=path, line=1)
    out, used, seen, at = Entries(), set(), {}, 0
    for i, topic in enumerate(topics):
        number = topic.get("number") if isinstance(topic, dict) else None
        found = text.find(f'"number": {json.dumps(number)}', at)
        at = max(at, found)
        line = text.count("\n", 0, found) + 1 if found >= 0 else None

        def bad(message: str, fld: str, line: int | None = line, i: int = i) -> RetrievalEvalError:
            return RetrievalEvalError(message, path=path, line=line, field=f"[{i}].{fld}")

        if not isinstance(number, (str, int)) or isinstance(number, bool):
            raise bad("must be the topic's number or id", "number")
        conversation = str(number)
        problem = conversation_problem(conversation)
        if problem:
            raise bad(problem, "number")
        if conversation in seen:
            raise bad(f"topic {conversation} is topic [{seen[conversation]}] already (a tree of CAsT 2022 is read as "
                      "its flattened branches, each a topic of its own id)", "number")
        seen[conversation] = i
        turns, name = _field(topic, "turns")
        if not isinstance(turns, list) or not turns:
            raise bad("must be a non-empty list of turns", name)
        labels = []
        for j, turn in enumerate(turns):
            where = f"{name}[{j}]"
            if not isinstance(turn, dict):
                raise bad("must be a turn object", where)
            n, nfield = _field(turn, "number")
            if not (isinstance(n, int) and not isinstance(n, bool) or isinstance(n, str) and n.isdigit()) or int(n) != j + 1:
                raise bad(f"must be the turn's position, {j + 1}, got {n!r}", f"{where}.{nfield}")
            said, tfield = _field(turn, "text")
            if not isinstance(said, str) or not said.strip():
                raise bad("must be the user's text", f"{where}.{tfield}")
            rewrite, rfield = _field(turn, "rewrite")
            if rewrite is not None and (not isinstance(rewrite, str) or not rewrite.strip()):
                raise bad("must be a non-empty string (the manual rewrite)", f"{where}.{rfield}")
            reply, _ = _field(turn, "reply")
            qid = f"{conversation}_{j + 1}"
            relevant = judged.get(qid)
            used.add(qid)
            answerable = relevant is None or any(g >= 1 for g in relevant.values())
            source = _source(qrels, _first_line(Path(qrels), qid + " "), {"docs": "doc_id"}, tags=False, topic_turn=qid) \
                if relevant is not None else {}
            labels.append(TurnLabel(said, reply if isinstance(reply, str) and reply.strip() else None,
                                    dict(relevant) if relevant is not None else None, source,
                                    rewrite=rewrite, answerable=answerable))
        out.extend(_turns(conversation, labels, out.left_out))
    unknown = sorted(set(judged) - used)
    if unknown:
        out.notes.append(f"{qrels} judges {len(unknown)} turn{'s' * (len(unknown) != 1)} the topic file does not "
                         f"hold, not imported (e.g. {', '.join(unknown[:3])})")
    return out

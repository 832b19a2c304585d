"""The session's inputs: the configured corpus and labeled queries, with the checks that guard
them (staleness of the questions cache, qrels judging unknown documents) and regeneration."""

from __future__ import annotations

import os
import warnings
from functools import lru_cache
from pathlib import Path
from typing import Callable

from ..data.corpus import BeirFolder, Corpus, is_beir_folder, open_corpus
from ..data.labeled import LabeledSet
from ..data.label_files import is_team_file, load_labels
from ..data.staleness import (check, chunk_fingerprints, drop_command, list_command, regenerate_command,
                              stamp_command)
from ..errors import RetrievalEvalError
from .config import DataConfig
from ..hybrid.index import IngestConfig


class StaleQuestionsWarning(UserWarning):
    """The questions cache no longer matches the corpus (left out by default, evaluated with
    --retrieval-stale=warn)."""


class UncheckedQuestionsWarning(UserWarning):
    """Labeled questions that record no fingerprint of their judged documents."""


class UnknownJudgedDocumentsWarning(UserWarning):
    """A qrels file judges documents that the corpus does not have."""


def shown(path: Path | None) -> str:
    """A path as a user would type it: relative to the working directory when below it."""
    if path is None:
        return ""
    try:
        return str(Path(path).relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def load_corpus(cfg: DataConfig) -> Corpus:
    if cfg.corpus is None:
        raise RetrievalEvalError("no corpus configured: set --retrieval-corpus=PATH or the retrieval_corpus ini option")
    return open_corpus(cfg.corpus, split=cfg.split, max_doc_mb=cfg.max_doc_mb).load()


def named(key: str, error: RetrievalEvalError) -> str:
    """An input's error with the option that named the input (``--retrieval-corpus / retrieval_corpus``)."""
    from .options import BY_KEY

    return f"{error} (from {BY_KEY[key].names})" if BY_KEY[key].flag_name not in str(error) else str(error)


def labels_file(cfg: DataConfig) -> str | Path | None:
    """The questions file the session reads (None: a BEIR folder's own queries and qrels)."""
    if cfg.corpus is not None and not cfg.questions_explicit and is_beir_folder(cfg.corpus):
        return None
    return cfg.questions


def load_labels_once(path: str | Path) -> LabeledSet:
    """``load_labels``, read once per file as it is (path, modification time, size): the engines
    are named at collection from the same file the session reads later."""
    try:
        st = os.stat(path)
    except OSError:
        return load_labels(path)  # its own error, naming the file
    return _loaded(str(Path(path).resolve()), st.st_mtime_ns, st.st_size, str(path))


@lru_cache(maxsize=4)
def _loaded(_resolved: str, _mtime_ns: int, _size: int, path: str) -> LabeledSet:
    return load_labels(path)


def read_labels(cfg: DataConfig) -> LabeledSet | None:
    """The labeled set as its file holds it (a BEIR folder's queries and qrels, or the questions
    cache), unchecked against the corpus; None when the questions are regenerated first."""
    if cfg.corpus is not None and not cfg.questions_explicit:
        provider = open_corpus(cfg.corpus, split=cfg.split)
        if isinstance(provider, BeirFolder):
            try:
                return provider.labeled()
            except RetrievalEvalError as exc:  # the folder's own queries and qrels/SPLIT.tsv
                raise RetrievalEvalError(named("corpus", exc)) from None
    if cfg.questions is None:
        raise RetrievalEvalError("no labeled queries configured: set --retrieval-questions=PATH or the retrieval_questions ini option")
    try:
        return None if cfg.regenerate else load_labels_once(cfg.questions)
    except RetrievalEvalError as exc:
        raise RetrievalEvalError(named("questions", exc)) from None


def load_labeled(cfg: DataConfig, corpus: Corpus, chunking: IngestConfig, progress: Callable[[str], None],
                 read: LabeledSet | None = None) -> LabeledSet:
    """A BEIR folder brings its own judged queries (unless --retrieval-questions is given);
    otherwise the questions cache, regenerated first when asked, then checked for staleness.
    ``read``: what ``read_labels`` already read."""
    if cfg.corpus is not None and not cfg.questions_explicit:
        provider = open_corpus(cfg.corpus, split=cfg.split)
        if isinstance(provider, BeirFolder):
            labeled = read if read is not None else provider.labeled()
            unknown = sorted({d for q in labeled for d in q.relevant if d not in corpus})
            if unknown:
                warnings.warn(UnknownJudgedDocumentsWarning(
                    f"qrels/{cfg.split}.tsv judges {len(unknown)} document(s) not in corpus.jsonl, e.g. "
                    f"{', '.join(unknown[:5])}: they stay judged (as in BEIR's own evaluation) and can never "
                    "be retrieved"), stacklevel=2)
            return labeled
    if cfg.questions is None:
        raise RetrievalEvalError("no labeled queries configured: set --retrieval-questions=PATH or the retrieval_questions ini option")
    if cfg.regenerate:
        regenerate(cfg, corpus, chunking, progress)
    labeled = read if read is not None and not cfg.regenerate else load_labels_once(cfg.questions)
    stale = check(labeled, corpus, chunk_fingerprints(corpus, labeled, chunking))
    stamp = stamp_command(shown(cfg.corpus), shown(cfg.questions))
    external = is_team_file(cfg.questions)  # the team's own file: fingerprints live in an imported cache
    if stale.unchecked:
        message = stale.unchecked_message(shown(cfg.questions), len(labeled), stamp)
        if cfg.stale == "error" and len(stale.unchecked) == len(labeled) and not external:
            raise RetrievalEvalError(message + "; or evaluate unchecked with --retrieval-stale=warn")
        warnings.warn(UncheckedQuestionsWarning(message), stacklevel=2)
    if not stale:
        return labeled
    message = stale.describe(shown(cfg.questions), shown(cfg.corpus),
                             regenerate_command(shown(cfg.corpus), shown(cfg.questions)), stamp,
                             "" if external else drop_command(shown(cfg.corpus), shown(cfg.questions)))
    if cfg.stale == "error" or (cfg.stale == "leave-out" and stale.unknown):
        raise RetrievalEvalError(message)  # an id the corpus never had is a typo, not a knowledge base moving on
    if cfg.stale == "warn":  # evaluated anyway: a question about a deleted document misses "not in the corpus"
        warnings.warn(StaleQuestionsWarning(message), stacklevel=2)
        return labeled
    # leave-out (the default): a knowledge base that changes daily is not blocked daily
    why = stale.why()
    progress(stale.left_out(labeled))
    warnings.warn(StaleQuestionsWarning(f"{shown(cfg.questions)}: {len(why)} stale question(s) left out of the "
                                        f"numbers and the gates, named above; to see them again: "
                                        f"{list_command(shown(cfg.corpus), shown(cfg.questions))}"[:300]), stacklevel=2)
    return _without(labeled, set(why), why)


def _without(labeled: LabeledSet, out: set[str], why: dict) -> LabeledSet:
    """The set less ``out``; ``stale_left_out`` (query id -> what changed) is what the table and
    a ``stale<=N`` rule count; ``stale_names``, how messages name those whose ids were made from
    their text."""
    names = {q.query_id: q.name for q in labeled if q.query_id in why and q.name != q.query_id}
    return LabeledSet(tuple(q for q in labeled if q.query_id not in out), name=labeled.name,
                      unanswerable=labeled.unanswerable, provenance={**labeled.provenance, "stale_left_out": why,
                                  **({"stale_names": names} if names else {})})


def regenerate(cfg: DataConfig, corpus: Corpus, chunking: IngestConfig, progress: Callable[[str], None]) -> None:
    from ..data.chunking import chunk_corpus
    from ..data.generate import GeneratorConfig, generate_questions

    report = generate_questions(corpus, chunk_corpus(corpus, chunking), cfg.questions,
                                config=GeneratorConfig(model=cfg.generator_model), split=chunking, progress=progress)
    progress(f"{shown(cfg.questions)}: {report.summary()}")
    if report.failed:
        raise RetrievalEvalError(f"question generation failed for {len(report.failed)} chunk(s): {report.summary()}")

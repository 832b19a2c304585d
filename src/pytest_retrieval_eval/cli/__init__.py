"""``python -m pytest_retrieval_eval`` (also the ``pytest-retrieval-eval`` command).

- ``generate``: fill the questions cache with one LLM-written question per chunk that lacks a
  fresh one (``--only-missing``, the default), or replace every question (``--regenerate``);
- ``check``: say whether the questions cache is stale against the corpus (exit 1 if so); with
  ``--labels`` (``--training``, ``--results``) whether the labeled set is any good; the corpus
  and questions not given are the project's ini file's (as pytest finds it), else the corpus the
  ``--results`` run searched;
- ``subset``: write the questions of a saved run that best separate its engines, a subset a run
  selects with ``--retrieval-subset=NAME``;
- ``corpus from-mtrag``: a corpus of the passages MTRAG's conversation files quote (a subset of
  the benchmark's corpus);
- ``report``: judge a saved ``results.json`` again (against a baseline, with thresholds and
  max-drop rules; by default those it was judged with), with the pytest gate's exit codes: 1
  when it fails; ``--out DIR`` (and ``--html PATH``) rebuild the run's artefacts;
- ``calibrate``: rerun a saved run against itself, how often each rule fails the unchanged
  engines and catches a drop injected into their rankings, written into the results file.

Options shared with the pytest plugin are declared once (``plugin/options.py``) and appear here
without their ``retrieval-`` prefix.

The parser is ``parser.py``; each verb is a module of its own (``generate``, ``check``, ``subset``,
``label``, ``report``, ``calibrate``, ``history``, ``judge``; ``judge``'s worksheets in ``worksheet``; ``corpus``
in ``passages``), run by its
``main(args)``; where a command finds its corpus is ``corpus.py``. Heavy imports stay inside the
functions, so ``--help`` loads none of them.
"""

from __future__ import annotations

import os
import sys

from ..errors import RetrievalEvalError
from . import calibrate, check, generate, history, judge, label, passages, report, subset
from .parser import make_parser


#: the exit status of a command whose reader went away (``label list | head -1``): 128 + SIGPIPE,
#: as a shell reports any tool the pipe ended; never 0, as the command did not say all it had to
BROKEN_PIPE = 141


def main(argv: list[str] | None = None) -> int:
    """Run a command; one whose output pipe closes ends quietly (the Python docs' recipe)."""
    try:
        try:
            return _main(argv)
        finally:  # a closed pipe shows here, not in the interpreter's own flush at exit
            if sys.stdout is not None:
                sys.stdout.flush()
    except BrokenPipeError:
        try:  # what is still buffered goes nowhere, so the interpreter's flush at exit raises nothing
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (AttributeError, OSError, ValueError):
            pass  # not a real file (a test's capture): nothing flushes it at exit
        return BROKEN_PIPE


def _main(argv: list[str] | None) -> int:
    from .._secrets import install_log_redaction

    args = make_parser().parse_args(argv)
    os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")
    uninstall = install_log_redaction()  # API keys never reach a log line
    try:
        return {"generate": generate.main, "check": check.main, "subset": subset.main, "report": report.main,
                "label": label.main, "judge": judge.main, "history": history.main,
                "corpus": passages.main, "calibrate": calibrate.main}[args.command](args)
    except RetrievalEvalError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
        if args.command not in ("report", "judge", "subset", "calibrate"):
            raise
        # exit 1 means "the gate failed" and nothing else: a file that cannot be judged is 2
        print(f"error: {args.results}: malformed results file ({type(exc).__name__}: {exc})", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        kept = "judgments file" if args.command == "judge" else "questions cache"
        print(f"interrupted: the {kept} holds every {'judgment' if args.command == 'judge' else 'question'} "
              "written so far", file=sys.stderr)
        return 130
    finally:
        uninstall()


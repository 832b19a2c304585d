"""Where a command finds its corpus: the command line, the project's ini file (as pytest finds it),
else the corpus a saved run searched.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import RetrievalEvalError


#: the ini files pytest reads its settings from, in the order it looks in each folder
INI_FILES = ("pytest.ini", ".pytest.ini", "pyproject.toml", "tox.ini", "setup.cfg")


INI_NAMED = "retrieval_corpus in the project's ini file (pyproject.toml, pytest.ini, tox.ini or setup.cfg)"


def project_ini(start: Path | None = None) -> tuple[Path, dict[str, str]] | None:
    """The ini file pytest would read, found as pytest finds it (from ``start``, the working
    directory, up), and its settings; None where there is none."""
    import configparser

    for folder in (here := (start or Path.cwd()).resolve(), *here.parents):
        for name in INI_FILES:
            path = folder / name
            if not path.is_file():
                continue
            if name == "pyproject.toml":
                try:
                    import tomllib
                except ImportError:  # Python 3.10: no TOML reader; the other ini files still count
                    continue
                try:
                    tool = tomllib.loads(path.read_text(encoding="utf-8")).get("tool", {})
                except (OSError, ValueError):
                    continue
                table = tool.get("pytest")
                if not isinstance(table, dict):
                    continue
                table = table.get("ini_options", table)
                return path, {k: v if isinstance(v, str) else " ".join(map(str, v)) if isinstance(v, list) else str(v)
                              for k, v in table.items()}
            parser = configparser.ConfigParser(interpolation=None, strict=False)
            try:
                parser.read(path, encoding="utf-8")
            except (configparser.Error, UnicodeDecodeError):
                continue
            section = {"pytest.ini": "pytest", ".pytest.ini": "pytest", "tox.ini": "pytest"}.get(name, "tool:pytest")
            if parser.has_section(section):
                return path, dict(parser.items(section))
            if name in ("pytest.ini", ".pytest.ini"):  # pytest.ini is the ini file even without a section
                return path, {}
    return None


def shown_path(path: Path) -> str:
    """``path`` as typed from the working directory: relative where it is under it."""
    try:
        return str(path.relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def open_named(open_corpus, path: str, source: str, searched: str = "") -> Any:
    try:
        return open_corpus(path).load()
    except RetrievalEvalError as exc:
        if not Path(path).exists():
            raise RetrievalEvalError(f"corpus folder not found ({source}){searched}: name the corpus with "
                                     f"--corpus=PATH, or set {INI_NAMED}", path=path) from None
        raise exc


def judge_corpus(run, args):
    """(the corpus to read the pooled documents from, how a command names it): ``--corpus``, else
    the one the run recorded (name and fingerprint), found in the working directory or beside
    results.json; refused, naming ``--corpus``, when there is none to find."""
    import shlex

    from ..data.corpus import open_corpus

    if args.corpus is not None:
        return open_corpus(args.corpus).load(), shlex.quote(str(args.corpus))
    recorded = sorted({(e.corpus, e.corpus_fingerprint or "") for e in run.evaluations if e.corpus})
    if len(recorded) != 1:
        what = ("records no corpus" if not recorded else
                f"searched {len(recorded)} corpora ({', '.join(n for n, _ in recorded)})")
        raise RetrievalEvalError(f"the run {what}: give the corpus to read the documents from with --corpus=PATH",
                                 path=args.results)
    name, fingerprint = recorded[0]
    folder, _, split = name.partition("/")  # a BEIR corpus is named folder/split
    results = Path(args.results).resolve().parent
    found = []  # the same documents first; else the folder of that name, edited since the run
    for base in dict.fromkeys((Path.cwd(), results, results.parent)):
        if (base / folder).exists():
            corpus = open_corpus(base / folder, split=split or "test").load()
            found.append((bool(fingerprint) and corpus.fingerprint != fingerprint, base / folder, corpus))
            if not found[-1][0]:
                break
    if found:
        changed, where, corpus = min(found, key=lambda f: f[0])
        print(f"corpus: {where}, the one the run searched ({name})"
              + (", its documents changed since the run" if changed else ""), flush=True)
        return corpus, shlex.quote(str(where))
    raise RetrievalEvalError(f"the run searched corpus {name!r} (fingerprint {fingerprint[:12] or '?'}), not found in "
                             f"{Path.cwd()} or beside the results file: give its folder with --corpus=PATH",
                             path=args.results)


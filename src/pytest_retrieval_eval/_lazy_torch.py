"""Import Haystack without importing torch until a model really has to run, nor NLTK until a
sentence has to be split.

Haystack's core imports torch eagerly when it is installed (``haystack.utils.device``), which
costs about a second: a warm run, whose embeddings all come from the cache, has no use for it.
While Haystack is first imported here, ``import torch`` fails as if torch were absent (Haystack
records that lazily); ``enable_torch()``, called before a model loads, imports torch and repairs
what Haystack recorded, so devices and models work as usual from then on.

Its ``DocumentSplitter`` module imports NLTK (and with it scipy) for sentence splitting, 1.5 to 2
seconds wherever NLTK is installed, though word splitting (the plugin's, and most YAMLs') never
uses it. That module is imported here with NLTK deferred the same way, and what Haystack checks
before it splits sentences (``nltk_imports.check()``) imports NLTK then and re-runs the tokenizer
module, so a splitter that needs sentences gets them.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.abc
import importlib.util
import sys


class _Defer(importlib.abc.MetaPathFinder):
    def __init__(self, *names: str) -> None:
        self.names = names

    def find_spec(self, name, path, target=None):
        if name.split(".", 1)[0] in self.names:
            raise ModuleNotFoundError(f"No module named {name!r} (deferred by pytest-retrieval-eval)", name=name)
        return None


@contextlib.contextmanager
def _deferred(*names: str):
    finder = _Defer(*names)
    sys.meta_path.insert(0, finder)
    try:
        yield
    finally:
        sys.meta_path.remove(finder)


_TOKENIZER = "haystack.components.preprocessors.sentence_tokenizer"


def import_haystack() -> None:
    """Import Haystack's core with torch deferred, and its splitter with NLTK deferred (each a
    no-op when that module or the deferred one is loaded already)."""
    if "haystack" not in sys.modules and "torch" not in sys.modules:
        with _deferred("torch"):
            import haystack  # noqa: F401
            import haystack.utils.device  # noqa: F401
    if (_TOKENIZER not in sys.modules and "nltk" not in sys.modules and "haystack.components" not in sys.modules
            and _installed("nltk")):  # without NLTK there is nothing to defer
        with _deferred("nltk"):
            tokenizer = importlib.import_module(_TOKENIZER)
        if not tokenizer.nltk_imports.is_successful():
            _share(tokenizer.nltk_imports, _NltkOnCheck())


def _installed(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except ImportError:  # a finder that refuses it
        return False


class _NltkOnCheck:
    """Haystack's record of the NLTK import, deferred: ``check()`` imports NLTK then."""

    def is_successful(self) -> bool:
        return enable_nltk().is_successful()

    def check(self) -> None:
        enable_nltk().check()


def _share(old: object, new: object) -> None:
    """Put ``new`` wherever a Haystack module holds ``old`` (``from ... import nltk_imports``)."""
    for name, module in list(sys.modules.items()):
        if name.startswith("haystack") and module is not None:
            for attr, value in list(vars(module).items()):
                if value is old:
                    setattr(module, attr, new)


def enable_nltk() -> object:
    """Import NLTK and run Haystack's sentence tokenizer module again, which now defines what
    it left out without it; the modules that imported its record get the new one."""
    tokenizer = sys.modules[_TOKENIZER]
    before = tokenizer.nltk_imports
    importlib.reload(tokenizer)  # NLTK absent for real: the record says so, and check() raises as Haystack's
    _share(before, tokenizer.nltk_imports)
    return tokenizer.nltk_imports


def enable_torch() -> None:
    """Import torch and hand it to every Haystack module that recorded it as missing."""
    import torch
    from haystack.lazy_imports import LazyImport

    for name, module in list(sys.modules.items()):
        if not name.startswith("haystack") or module is None:
            continue
        for attr, value in list(vars(module).items()):
            if isinstance(value, LazyImport) and "torch" in attr and getattr(module, "torch", None) is None:
                with LazyImport() as fresh:
                    pass
                setattr(module, attr, fresh)
                module.torch = torch

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

Both hold for whoever imports Haystack first once the plugin is awake (``watch()``): a team's
engine factory or its YAML pipeline too, whose warm run then loads neither (the examples/helpdesk
project's warm run went from 8.4 to 4.3 s). Whoever imports torch later (a team's
sentence-transformers component) hands it to every Haystack module that recorded it missing, as
``enable_torch()`` does, so devices resolve as without the plugin.
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


class _FirstImports(importlib.abc.MetaPathFinder):
    """The first import of Haystack, of its sentence tokenizer and of torch, by whoever asks:
    found by the finders after this one, then run by ``_Around``."""

    def find_spec(self, name, path, target=None):
        if name not in ("haystack", _TOKENIZER, "torch") or name in sys.modules or self not in sys.meta_path:
            return None
        for finder in sys.meta_path[sys.meta_path.index(self) + 1:]:
            find = getattr(finder, "find_spec", None)
            spec = find(name, path, target) if find is not None else None
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    spec.loader = _Around(spec.loader)
                return spec
        return None


class _Around(importlib.abc.Loader):
    """The module's own loader, with torch or NLTK deferred while it runs (torch: handed to
    Haystack once loaded). The module keeps its own loader: this one is gone once it runs."""

    def __init__(self, loader) -> None:
        self.loader = loader

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module) -> None:
        module.__loader__ = module.__spec__.loader = self.loader
        name = module.__name__
        if name == "haystack" and "torch" not in sys.modules:
            with _deferred("torch"):
                self.loader.exec_module(module)
                importlib.import_module("haystack.utils.device")  # where Haystack records torch
        elif name == _TOKENIZER and "nltk" not in sys.modules and _installed("nltk"):
            with _deferred("nltk"):
                self.loader.exec_module(module)
            if not module.nltk_imports.is_successful():  # before the splitter takes its record
                _share(module.nltk_imports, _NltkOnCheck())
        else:
            self.loader.exec_module(module)
            if name == "torch":
                _hand_torch(module)

    def __getattr__(self, attr):  # get_data, get_resource_reader, ... as the module's own loader
        return getattr(self.loader, attr)


_WATCH = _FirstImports()


def watch() -> None:
    """From now on in this process, the first import of Haystack defers torch and NLTK, by
    whoever makes it (the plugin wakes it for a team's engines and pipelines; idempotent)."""
    if _WATCH not in sys.meta_path:
        sys.meta_path.insert(0, _WATCH)


def import_haystack() -> None:
    """Import Haystack's core with torch deferred; its splitter, when imported, with NLTK
    deferred (each a no-op when that module or the deferred one is loaded already)."""
    watch()
    import haystack  # noqa: F401


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

    _hand_torch(torch)


def _hand_torch(torch) -> None:
    """Every Haystack module whose record says torch is missing gets it (none: a no-op)."""
    if "haystack.lazy_imports" not in sys.modules:
        return
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

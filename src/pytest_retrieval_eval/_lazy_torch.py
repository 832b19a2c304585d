"""Import Haystack without importing torch until a model really has to run.

Haystack's core imports torch eagerly when it is installed (``haystack.utils.device``), which
costs about a second: a warm run, whose embeddings all come from the cache, has no use for it.
While Haystack is first imported here, ``import torch`` fails as if torch were absent (Haystack
records that lazily); ``enable_torch()``, called before a model loads, imports torch and repairs
what Haystack recorded, so devices and models work as usual from then on.
"""

from __future__ import annotations

import importlib.abc
import sys


class _DeferTorch(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name == "torch" or name.startswith("torch."):
            raise ModuleNotFoundError(f"No module named {name!r} (deferred by pytest-retrieval-eval)", name=name)
        return None


def import_haystack() -> None:
    """Import Haystack's core with torch deferred (no-op when torch or Haystack is loaded)."""
    if "haystack" in sys.modules or "torch" in sys.modules:
        return
    finder = _DeferTorch()
    sys.meta_path.insert(0, finder)
    try:
        import haystack  # noqa: F401
        import haystack.utils.device  # noqa: F401
    finally:
        sys.meta_path.remove(finder)


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

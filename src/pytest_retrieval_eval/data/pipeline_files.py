"""Serialised Haystack pipelines (YAML, ``Pipeline.dumps``): a team's own and the plugin's
built-in pair (``pytest_retrieval_eval/pipelines/ingest.yaml`` and ``query.yaml``), read the
same way. Settings are applied to a pipeline's data before it is built, so a component is
always constructed with its final parameters (``with_settings``)."""

from __future__ import annotations

import copy
import functools
import importlib
import importlib.resources
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping

from ..errors import RetrievalEvalError
from ..types import sha256_text


@dataclass(frozen=True)
class PipelineFile:
    path: Path
    text: str

    @classmethod
    def read(cls, path: Path | str) -> "PipelineFile":
        path = Path(path)
        try:
            return cls(path, path.read_text(encoding="utf-8"))
        except OSError as exc:
            raise RetrievalEvalError(f"cannot read the pipeline: {exc.strerror or exc}", path=path) from None

    @property
    def fingerprint(self) -> str:
        return sha256_text(self.text)

    def data(self) -> dict:
        """The parsed YAML; a file that is not a serialised pipeline is an error naming it."""
        import yaml

        try:
            raw = yaml.safe_load(self.text)
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            raise RetrievalEvalError(f"not a YAML pipeline: {getattr(exc, 'problem', exc)}", path=self.path,
                                     line=mark.line + 1 if mark else None) from None
        if not isinstance(raw, dict) or not isinstance(raw.get("components"), dict):
            raise RetrievalEvalError("not a serialised Haystack pipeline (no 'components' mapping)", path=self.path)
        return raw


@functools.lru_cache(maxsize=None)
def builtin(name: str) -> PipelineFile:
    """One of the plugin's own pipelines: ``ingest.yaml`` or ``query.yaml`` (read once per
    process: table names, chunking, ingestion and every hybrid engine ask for them)."""
    resource = importlib.resources.files("pytest_retrieval_eval").joinpath("pipelines", name)
    return PipelineFile(Path(str(resource)), resource.read_text(encoding="utf-8"))


def with_settings(data: Mapping[str, Any], settings: Mapping[str, Mapping[str, Any]]) -> dict:
    """A copy of ``data`` with ``{component: {init parameter: value}}`` applied; the key
    ``document_store`` sets parameters of the component's document store."""
    out = copy.deepcopy(dict(data))
    for name, params in settings.items():
        params = dict(params)
        component = out["components"][name]["init_parameters"]
        store = params.pop("document_store", None)
        component.update(params)
        if store:
            component["document_store"]["init_parameters"].update(store)
    return out


def subset(data: Mapping[str, Any], names: Iterable[str]) -> dict:
    """The pipeline of ``names`` alone, with the connections between them."""
    keep = set(names)
    out = copy.deepcopy(dict(data))
    out["components"] = {n: c for n, c in out["components"].items() if n in keep}
    out["connections"] = [c for c in out.get("connections", [])
                          if c["sender"].split(".")[0] in keep and c["receiver"].split(".")[0] in keep]
    return out


def build(data: Mapping[str, Any], file: PipelineFile) -> Any:
    """The Haystack pipeline of ``data``. Every component type is imported first, so a failure
    names the file and the component; the modules a configured YAML names are trusted as the
    project's conftest is (Haystack refuses modules off its allowlist otherwise)."""
    from .._lazy_torch import import_haystack

    import_haystack()
    from haystack import Pipeline

    for name, spec in data["components"].items():
        kind = spec.get("type") if isinstance(spec, dict) else None
        if not isinstance(kind, str) or "." not in kind:
            raise RetrievalEvalError(f"component '{name}' has no 'type' (module.Class)", path=file.path,
                                     field=f"components.{name}.type")
        module, _, cls = kind.rpartition(".")
        try:
            found = getattr(importlib.import_module(module), cls, None)
        except Exception as exc:
            raise RetrievalEvalError(f"component '{name}': cannot import {kind} ({type(exc).__name__}: {exc})",
                                     path=file.path, field=f"components.{name}.type") from None
        if found is None:
            raise RetrievalEvalError(f"component '{name}': {module} has no {cls}", path=file.path,
                                     field=f"components.{name}.type")
    modules = sorted({spec["type"].rpartition(".")[0] for spec in data["components"].values()})
    try:
        return Pipeline.from_dict(dict(data), allowed_modules=modules)
    except Exception as exc:
        which = next((n for n in data["components"] if f"'{n}'" in str(exc)), None)
        where = f"component '{which}': " if which else ""
        raise RetrievalEvalError(f"{where}the pipeline does not load: {type(exc).__name__}: {exc}", path=file.path,
                                 field=f"components.{which}" if which else None) from None

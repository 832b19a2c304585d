"""The package layout follows the data path: a module imports only from its own layer or the
layers below it (checked on every import statement, those inside functions included)."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "pytest_retrieval_eval"
#: bottom to top: shared helpers, the pure IR core, data, the hybrid stack, engines, running
#: engines into results, the gate, reports, the pytest side, the command line
LAYERS = [
    {"errors", "types", "_atomic", "_textfiles", "_secrets", "_http", "_lazy_torch"},
    {"ir"}, {"data"}, {"hybrid"}, {"engines"}, {"run"}, {"gate"}, {"report"}, {"plugin"}, {"cli", "__main__"},
]


def layer_of(top: str) -> int:
    return next(i for i, names in enumerate(LAYERS) if top in names)


def imports(path: Path) -> list[tuple[int, str]]:
    """(line, top-level package module) of every relative import in ``path``."""
    rel = path.relative_to(PACKAGE).with_suffix("").parts
    here = list(rel[:-1])  # the package the module lives in
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = here[: len(here) - (node.level - 1)]
            target = [*base, *(node.module.split(".") if node.module else [])]
            names = [target] if node.module or base else [[a.name] for a in node.names]
            out += [(node.lineno, t[0]) for t in names if t]
    return out


def test_every_module_belongs_to_a_layer():
    tops = {p.relative_to(PACKAGE).parts[0].removesuffix(".py") for p in PACKAGE.rglob("*.py")}
    tops -= {"__init__"}
    assert tops <= set().union(*LAYERS), tops - set().union(*LAYERS)


def test_imports_point_down_the_data_path():
    upward = []
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(PACKAGE).parts
        if rel == ("__init__.py",):
            continue  # the public API re-exports from every layer (lazily)
        mine = layer_of(rel[0].removesuffix(".py"))
        for line, top in imports(path):
            if layer_of(top) > mine:
                upward.append(f"{path.relative_to(PACKAGE)}:{line} imports {top}")
    assert not upward, "\n".join(upward)


def test_the_pure_core_knows_nothing_of_pytest():
    for path in (PACKAGE / "ir").rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        names |= {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module and not n.level}
        assert not names & {"pytest", "_pytest", "haystack", "psycopg", "httpx"}, path

"""The package layout follows the data path: a module imports only from its own layer or the
layers below it (checked on every import statement, those inside functions included)."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "pytest_retrieval_eval"
#: bottom to top: shared helpers, the pure IR core, data, the hybrid stack, engines, running
#: engines into a recorded run, the rule grammar and typed settings, what the run means (the
#: analysis), the gate and the archive (results.json, history, baselines), reports, the pytest
#: side, the command line
LAYERS = [
    {"errors", "types", "_defaults", "_atomic", "_textfiles", "_secrets", "_http", "_usage", "_lazy_torch", "_plain"},
    {"ir"}, {"data"}, {"hybrid"}, {"engines"}, {"evaluation"}, {"rules"}, {"analysis"}, {"gate", "archive"}, {"report"}, {"plugin"},
    {"cli", "__main__"},
]


def layer_of(top: str) -> int:
    return next(i for i, names in enumerate(LAYERS) if top in names)


def imports(path: Path, *, whole: bool = False) -> list[tuple[int, str]]:
    """(line, top-level package module) of every relative import in ``path``; ``whole``: the
    dotted module instead (``evaluation.results``), and for each name a ``from`` import takes,
    that name under it too (``ir.metrics`` of ``from ..ir import metrics``)."""
    rel = path.relative_to(PACKAGE).with_suffix("").parts
    here = list(rel[:-1])  # the package the module lives in
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = here[: len(here) - (node.level - 1)]
            target = [*base, *(node.module.split(".") if node.module else [])]
            names = [target] if node.module or base else [[a.name] for a in node.names]
            if whole:
                names += [[*target, a.name] for a in node.names if target]
                out += [(node.lineno, ".".join(t)) for t in names if t]
            else:
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


def _runtime_imports(path: Path) -> list[tuple[int, str]]:
    """``imports(path)`` less those under ``if TYPE_CHECKING:`` (annotations only)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    typing_only = {n.lineno for block in ast.walk(tree) if isinstance(block, ast.If)
                   and isinstance(block.test, ast.Name) and block.test.id == "TYPE_CHECKING"
                   for stmt in block.body for n in ast.walk(stmt) if isinstance(n, ast.ImportFrom)}
    return [(line, top) for line, top in imports(path) if line not in typing_only]


def test_the_rules_are_grammar_and_settings_with_no_check():
    """``rules/`` parses rules and holds the settings; judging a run by them is the gate's
    (``gate/checks.py``). So it defines no check, and runs nothing of the run's results or the
    gate: the option check at start of every run imports it alone (``tests/plugin/test_dormant.py``)."""
    for path in (PACKAGE / "rules").rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        checks = [n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
                  and n.name.lstrip("_").startswith("check")]
        assert checks == [], f"{path.relative_to(PACKAGE)} defines {checks}: checks belong in gate/checks.py"
        above = [f"{line}: {top}" for line, top in _runtime_imports(path) if top in ("evaluation", "gate")]
        assert above == [], f"{path.relative_to(PACKAGE)} imports at run time: {above}"
    assert not (PACKAGE / "gate" / "rules.py").exists() and not (PACKAGE / "gate" / "settings.py").exists()


def test_the_pure_core_knows_nothing_of_pytest():
    for path in (PACKAGE / "ir").rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        names |= {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module and not n.level}
        assert not names & {"pytest", "_pytest", "haystack", "psycopg", "httpx"}, path


#: the one module per third-party internal: the private attributes it alone may touch
WRAPPERS = {"hybrid/haystack_internals.py": {"_connection", "_dict_cursor", "_sockets_dict"}}


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _own_names(tree: ast.AST) -> set[str]:
    """Private names a module defines itself (functions, classes, attributes set on self, class
    fields): reaching them on another instance of its own class is not crossing a boundary."""
    own = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            own.add(node.name)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            own.add(node.attr)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            own.add(node.target.id)
        elif isinstance(node, ast.Assign):
            own |= {t.id for t in node.targets if isinstance(t, ast.Name)}
    return own


def private_reaches(path: Path) -> set[str]:
    """Private names ``path`` takes from elsewhere: ``from X import _name``, ``obj._name`` and
    ``getattr(obj, "_name")`` where the module does not define ``_name`` itself."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    own, found = _own_names(tree), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            found |= {a.name for a in node.names if _private(a.name)}
        elif isinstance(node, ast.Attribute) and _private(node.attr):
            if not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")) and node.attr not in own:
                found.add(node.attr)
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("getattr", "hasattr")
              and len(node.args) > 1 and isinstance(node.args[1], ast.Constant)
              and isinstance(node.args[1].value, str) and _private(node.args[1].value) and node.args[1].value not in own):
            found.add(node.args[1].value)
    return found


def test_no_module_reaches_another_modules_private_names():
    crossing = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        found = private_reaches(path)
        crossing += [f"{rel}: {name}" for name in sorted(found - WRAPPERS.get(rel, set()))]
    assert not crossing, "private names reached across modules (make them public, or wrap a third-party one in " \
                         "the one module for it):\n" + "\n".join(crossing)


def test_the_private_name_check_catches_each_form(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text("from .table import _signed\nx = table._sup\ny = getattr(store, '_connection', None)\n"
                     "class A:\n    def f(self, other):\n        self._mine = 1\n        return other._mine\n")
    assert private_reaches(probe) == {"_signed", "_sup", "_connection"}


def test_test_modules_are_named_for_what_they_test():
    """One module per source module or concept, in its tier; never named after the review that
    found a bug (``test_faults_*``, ``*round3*``), and no basename twice (the tiers share one
    import namespace: the test folders have no ``__init__.py``)."""
    import re

    tests = Path(__file__).resolve().parents[1]
    names = [p for p in tests.rglob("test_*.py")]
    badly_named = [str(p.relative_to(tests)) for p in names
                   if re.search(r"fault|round_?\d|round_?(one|two|three|four)|review", p.stem)]
    assert badly_named == []
    stems = [p.name for p in names]
    assert sorted({s for s in stems if stems.count(s) > 1}) == []
    assert {p.parent.name for p in names} <= {"unit", "plugin", "system"}


def _within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def test_reports_import_nothing_of_the_evaluation_nor_the_metrics():
    """Renderers only read: what they show is the analysis's (``analysis/``) and the record's, so
    report/ imports nothing that runs engines or scores them (``evaluation/``, ``ir/metrics``, the
    evaluations' calculator ``analysis/scores.py`` and the fixture API over it ``analysis/result.py``),
    inside functions and for type checkers included."""
    found = {f"{path.relative_to(PACKAGE)}:{line}": module  # a line once, by the module it names first
             for path in sorted((PACKAGE / "report").rglob("*.py"))
             for line, module in reversed(imports(path, whole=True))
             if _within(module, "evaluation") or _within(module, "ir.metrics") or _within(module, "analysis.scores")
             or _within(module, "analysis.result")}
    assert not found, "\n".join(f"{where} imports {module}" for where, module in sorted(found.items()))


def test_the_recorded_run_computes_nothing():
    """``evaluation/`` runs engines and records what they returned: the record and its JSON form
    import no measure or statistic (``Scores`` in ``analysis/`` computes them, once), and an
    ``Evaluation`` has no computing method a renderer could call."""
    found = [f"{path.relative_to(PACKAGE)}:{line} imports {module}"
             for path in (PACKAGE / "evaluation" / "results.py", PACKAGE / "evaluation" / "record_json.py")
             for line, module in imports(path, whole=True)
             if any(_within(module, m) for m in ("ir.metrics", "ir.stats", "ir.paired", "ir.ppi", "analysis"))]
    assert not found, "\n".join(found)
    from pytest_retrieval_eval.evaluation.results import Evaluation

    computing = {"per_query", "values", "mean", "ci", "ppi", "has_value", "misses", "causes", "hit_curve",
                 "trial_means", "tokens_at", "comparisons"}
    assert not computing & set(dir(Evaluation))


#: the interval, test and correction functions of the statistics modules (bootstrap, Wilson,
#: paired randomization, PPI, the detectable drop): the analysis's alone, and the IR core's
STATISTICS = {
    "ir.stats": {"bootstrap_ci", "split_difference_ci", "wilson_ci", "mean_ci", "paired_randomization",
                 "paired_difference_ci", "adjust", "detectable_drop", "queries_needed", "design_effect",
                 "effective_size", "can_be_significant", "smallest_p"},
    "ir.paired": {"paired", "corrected"},
    "ir.ppi": {"ppi_mean", "ppi_arrays"},
}

def statistics_called(path: Path, source: str | None = None) -> list[str]:
    """``line: name`` of each statistics function the module at ``path`` (its text: ``source``,
    else read) imports (``from ..ir.stats import bootstrap_ci``) or reaches through its module
    (``from ..ir import stats``; ``stats.wilson_ci``)."""
    tree = ast.parse(source if source is not None else path.read_text(encoding="utf-8"))
    modules = {}  # local name -> the statistics module it is
    found = []
    here = list(path.relative_to(PACKAGE).with_suffix("").parts[:-1])
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = here[: len(here) - (node.level - 1)]
            target = ".".join([*base, *(node.module.split(".") if node.module else [])])
            for a in node.names:
                if a.name in STATISTICS.get(target, ()):
                    found.append(f"{node.lineno}: {a.name}")
                elif f"{target}.{a.name}" in STATISTICS:
                    modules[a.asname or a.name] = f"{target}.{a.name}"
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in modules
                and node.attr in STATISTICS[modules[node.value.id]]):
            found.append(f"{node.lineno}: {node.value.id}.{node.attr}")
    return found


def test_no_statistic_is_computed_outside_the_analysis():
    """Bootstrap, Wilson and PPI intervals, paired randomization tests, their corrections and the
    detectable drop are computed by ``analysis/`` (on the IR core's functions) once per run, and
    read everywhere else: a gate check or a renderer that made its own would disagree with the
    analysis a saved run is rendered from."""
    for module, names in STATISTICS.items():  # the guard names what exists: a rename cannot empty it
        source = (PACKAGE / module.replace(".", "/")).with_suffix(".py").read_text(encoding="utf-8")
        assert all(f"def {name}(" in source for name in names), module
    found = [f"{path.relative_to(PACKAGE)}:{hit}" for path in sorted(PACKAGE.rglob("*.py"))
             if path.relative_to(PACKAGE).parts[0] not in ("analysis", "ir")
             for hit in statistics_called(path)]
    assert not found, "statistics computed outside analysis/:\n" + "\n".join(found)


def test_the_statistics_check_catches_each_form():
    source = ("from ..ir.stats import CORRECTION_NAMES, wilson_ci\nfrom ..ir import paired as p, measures\n"
              "def f(a, b):\n    from ..ir.ppi import ppi_mean as estimate\n"
              "    return p.corrected(a), measures.Measure\n")
    found = statistics_called(PACKAGE / "gate" / "probe.py", source)
    assert found == ["1: wilson_ci", "4: ppi_mean", "5: p.corrected"]


#: the most lines a module holds: past it, a module holds several jobs (split it by job)
MODULE_LINES = 600


def test_no_module_holds_several_jobs_by_its_length():
    long = {str(p.relative_to(PACKAGE)): n for p in PACKAGE.rglob("*.py")
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MODULE_LINES}
    assert not long, f"modules over {MODULE_LINES} lines: {long}"

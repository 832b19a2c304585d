"""The coverage of prediction-powered intervals, for docs/judgments.md: the simulation grid of
tests/unit/test_ppi.py (the same code, so the figures are the ones the test asserts on), one row
per judge and measure, one column per number of human-judged questions of 400.

    python bench/ppi_coverage.py [--draws=1000]
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def grid_module():
    spec = importlib.util.spec_from_file_location("ppi_grid", REPO / "tests" / "unit" / "test_ppi.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=1000)
    args = parser.parse_args(argv)
    grid = grid_module()
    rows = grid.simulate(draws=args.draws)
    sizes = sorted({r["n"] for r in rows})
    print(f"{args.draws} draws per cell, N={grid.N}; each cell: coverage / mean width over the human-only one "
          "/ share fallen back to human-only")
    print(f"| labels | judge | kappa | measure | truth | " + " | ".join(f"n={n}" for n in sizes) + " |")
    print("|---|---|---|---|---|" + "---|" * len(sizes))
    keyed: dict = {}
    for r in rows:
        keyed.setdefault((r["labels"], r["judge"], r["measure"]), []).append(r)
    for (labels, judge, measure), cells in keyed.items():
        first = cells[0]
        print(f"| {labels} | {judge} | {first['kappa']:.2f} | {measure} | {first['truth']:.3f} | "
              + " | ".join(f"{c['coverage']:.3f} / {c['width_ratio']:.2f} / {c['fell_back']:.2f}" for c in cells)
              + " |")
    print(f"lowest coverage {min(r['coverage'] for r in rows):.3f}; "
          f"human-only lowest {min(r['human_coverage'] for r in rows):.3f}")


if __name__ == "__main__":
    main(sys.argv[1:])

"""The SVG charts (``report/plot.py``, ``report/trend.py``) make room for their legend: a long
label widens the chart, many rows make it taller, never cut at the edge (Chromium checks the
drawn boxes in tests/system/test_html_page.py)."""

from __future__ import annotations

import re

from pytest_retrieval_eval.report.plot import hit_curve_svg, text_width


def _view(svg: str) -> tuple[float, float]:
    w, h = re.search(r'viewBox="0 0 ([\d.]+) ([\d.]+)"', svg).groups()
    return float(w), float(h)


def test_many_rows_and_a_long_label_fit_inside_the_hit_curve():
    curves = {f"engine-{i:02d}": [0.5] * 20 for i in range(14)} | {"W" * 60: [0.2] * 20}
    svg = hit_curve_svg(curves, baseline=curves)
    width, height = _view(svg)
    rows = re.findall(r'<text x="([\d.]+)" y="([\d.]+)">([^<]*)</text>', svg)  # a legend's labels
    assert len(rows) == 30
    assert max(float(y) for _, y, _ in rows) + 4 <= height
    assert all(float(x) + text_width(label) <= width for x, _, label in rows)
    assert _view(hit_curve_svg({"short": [0.5] * 20})) == (640, 400)  # a short legend keeps the chart's size

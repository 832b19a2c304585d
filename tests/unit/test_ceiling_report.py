"""Recall by stage as the reports show it (``report/ceiling.py``): the table's cells, the losses
line and the curve, read from a ``StageCurve`` and nothing else."""

from __future__ import annotations

import re

from pytest_retrieval_eval.analysis.ceiling import StageCurve, StageRecall
from pytest_retrieval_eval.report.ceiling import cells, curve_svg, loss_line
from pytest_retrieval_eval.report.plot import text_width

CURVE = StageCurve("hybrid", "set", 10, 5, 4, (
    StageRecall("keyword", "leg", 0, ((0, 0.0),)),
    StageRecall("vector", "leg", 50, ((1, 0.4), (3, 0.6), (5, 0.7), (10, 0.8), (20, 0.85), (50, 0.9))),
    StageRecall("fusion", "step", 20, ((1, 0.5), (3, 0.6), (5, 0.65), (10, 0.75), (20, 0.8))),
    StageRecall("final ranking", "final", 3, ((1, 0.5), (3, 0.6))),
), (("never a candidate", 1), ("cut by fusion", 2), ("ranked below 5", 1)))


def test_a_cell_is_blank_past_what_the_stage_held_and_all_gives_the_most_it_held():
    head, rows = cells(CURVE)
    assert head == ["stage", "@1", "@3", "@5", "@10", "@20", "@50", "all"]
    assert rows == [["keyword leg", "", "", "", "", "", "", "0.000 (0)"],
                    ["vector leg", "0.400", "0.600", "0.700", "0.800", "0.850", "0.900", "0.900 (50)"],
                    ["fusion", "0.500", "0.600", "0.650", "0.750", "0.800", "", "0.800 (20)"],
                    ["final ranking", "0.500", "0.600", "", "", "", "", "0.600 (3)"]]


def test_the_losses_line_counts_every_stage_with_its_share():
    assert loss_line(CURVE) == ("where the 4 misses at hit@5 were lost: 1 (25%) never a candidate, "
                                "2 (50%) cut by fusion, 1 (25%) ranked below 5")
    none = StageCurve("e", "set", 3, 5, 0, CURVE.stages, (("never a candidate", 0), ("ranked below 5", 0)))
    assert loss_line(none) == "no miss at hit@5"


def test_the_curve_draws_each_stage_that_held_something_and_names_every_stage_within_the_chart():
    svg = curve_svg(CURVE, title="recall@k by stage: hybrid")
    assert svg == curve_svg(CURVE, title="recall@k by stage: hybrid")  # the same bytes every time
    assert len(re.findall("<polyline", svg)) == 3  # the empty keyword leg: no line
    labels = re.findall(r'<text x="([\d.]+)" y="([\d.]+)">([^<]*)</text>', svg)
    assert [label for *_, label in labels] == ["keyword leg (all 0: 0.00)", "vector leg (all 50: 0.90)",
                                               "fusion (all 20: 0.80)", "final ranking (all 3: 0.60)"]
    width = float(re.search(r'viewBox="0 0 ([\d.]+)', svg).group(1))
    assert all(float(x) + text_width(label) <= width for x, _, label in labels)
    legs = re.findall(r'<polyline[^>]*stroke-dasharray[^>]*>', svg)
    assert len(legs) == 1  # legs dashed, steps and the answer solid


def test_one_miss_is_one_miss():
    one = StageCurve("e", "set", 3, 5, 1, CURVE.stages, (("never a candidate", 1), ("ranked below 5", 0)))
    assert loss_line(one) == "where the 1 miss at hit@5 was lost: 1 (100%) never a candidate, 0 ranked below 5"
    assert one.line().endswith("; the 1 miss at hit@5 lost: 100% never a candidate")

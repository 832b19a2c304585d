"""A team's project on MTRAG's human-evaluation subset (20 conversations, 150 labeled turns, each
with a person's rewrite), run as a new user runs it: the docs' commands build a corpus of the
passages the subset quotes and import its conversations, then the real hybrid engine (MiniLM, the
embedded pgvector) runs given the last turn, the joined turns, the person's rewrite (the oracle)
and a team's own rewriter over it, the ``last_turn`` baseline beside them. What it must show:
the oracle beats the last turn on follow-ups and the gap is split into pool and ranking; the
team's rewriter keeps the hybrid engine's miss causes; an engine's hit@5 interval is within 1.3
times the width of a conversation bootstrap's; a run on five conversations says no difference
can be significant. The dataset is read in place (``tests/shared_datasets.py``)."""

from __future__ import annotations

import json
import os
import random
import re
import shlex
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

from conftest import parse_table, requires_hybrid
from shared_datasets import dataset_path

pytestmark = [pytest.mark.postgres, pytest.mark.model, pytest.mark.dataset("mtrag")]

DOCS = Path(__file__).resolve().parents[2] / "docs"
ENGINES = ("hybrid", "hybrid-concat", "hybrid-rewrite", "hybrid-last", "team")

REWRITER = '''
"""The team's rewriter: the last user turn, then the nouns (words of 4+ letters, stopwords aside)
of the user turn before it."""
import re

STOP = set("""about also been before being could does each from have here into just more most much only other
over should some such than that their them then there these they this those under very were what when where which
while will with would your""".split())


def last_plus_previous_nouns(turns):
    users = [t.text for t in turns if t.role == "user"]
    if len(users) < 2:
        return users[-1]
    nouns = [w for w in re.findall(r"[A-Za-z][A-Za-z'-]+", users[-2]) if len(w) >= 4 and w.lower() not in STOP]
    return " ".join([users[-1], *nouns])
'''

CONFTEST = '''
from pytest_retrieval_eval import hybrid_variant, last_turn, rewritten

from rewriter import last_plus_previous_nouns


def pytest_retrieval_engines(registry, config):
    registry.register("hybrid-last", lambda request: last_turn(hybrid_variant()(request)))
    registry.register("team", lambda request: rewritten(hybrid_variant()(request), last_plus_previous_nouns))
'''

TEST = '''
import pytest


@pytest.mark.retrieval
def test_no_errors(retrieval_results):
    assert retrieval_results.n_errored == 0
'''


def doc_commands() -> tuple[list[list[str]], str]:
    """The commands docs/labels.md prints for MTRAG's human-evaluation subset, and the summary
    line it says the import prints."""
    page = (DOCS / "labels.md").read_text(encoding="utf-8")
    block = re.search(r"```bash\n(# MTRAG's human-evaluation subset.*?)```", page, re.S)[1]
    joined = block.replace("\\\n", " ")
    commands = [shlex.split(line) for line in joined.splitlines() if line.startswith("python ")]
    said = next(line[2:] for line in joined.splitlines() if line.startswith("# mtrag.json: "))
    return commands, said


def sh(project: Path, sandbox_tmp: Path, *args: str) -> tuple[int, str]:
    done = subprocess.run(list(args), cwd=project, env={**os.environ, "TMPDIR": str(sandbox_tmp)},
                          capture_output=True, text=True, timeout=900)
    return done.returncode, done.stdout + done.stderr


def run(project: Path, sandbox_tmp: Path, cache: Path, *args: str) -> tuple[int, str]:
    return sh(project, sandbox_tmp, sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-m", "retrieval",
              "--retrieval-report", f"--retrieval-cache-dir={cache}", *args)


def lines_of(out: str) -> list[str]:
    return out.replace("\n    ", " ").splitlines()  # wrapped lines joined


def bootstrap_width(values: dict[str, list[float]], draws: int = 2000, seed: int = 0) -> float:
    """The width of the 95% percentile interval of the mean over turns, conversations resampled."""
    rng = random.Random(seed)
    convs = list(values.values())
    means = []
    for _ in range(draws):
        drawn = [rng.choice(convs) for _ in convs]
        means.append(sum(map(sum, drawn)) / sum(map(len, drawn)))
    means.sort()
    return means[int(0.975 * draws) - 1] - means[int(0.025 * draws)]


@requires_hybrid
def test_a_team_s_project_on_mtrag_s_human_subset_the_oracle_a_rewriter_and_intervals_over_conversations(
        pytester, sandbox_tmp, shared_cache_dir):
    project = pytester.path
    (project / "human").symlink_to(dataset_path("mtrag") / "mtrag-human", target_is_directory=True)
    commands, said = doc_commands()
    assert [c[:4] for c in commands] == [["python", "-m", "pytest_retrieval_eval", "corpus"],
                                         ["python", "-m", "pytest_retrieval_eval", "label"]]
    for command in commands:  # as the docs print them, from the project's folder
        code, out = sh(project, sandbox_tmp, sys.executable, *command[1:])
        assert code == 0, out
    assert re.search(re.escape(said).replace(r"\.\.\.", ".+"), out), (said, out)  # the summary the docs print
    pytester.makepyprojecttoml('[tool.pytest.ini_options]\nretrieval_corpus = "mtrag-corpus"\n'
                               'retrieval_questions = "mtrag.json"\n'
                               f'retrieval_engines = "{" ".join(ENGINES)}"\n')
    (project / "rewriter.py").write_text(REWRITER)
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_retrieval=TEST)

    report = project / "report"
    code, out = run(project, sandbox_tmp, shared_cache_dir, f"--retrieval-report-dir={report}")
    assert code == 0, out
    assert set(parse_table(out)) == set(ENGINES)
    lines = lines_of(out)
    results = json.loads((report / "results.json").read_text())
    by_engine = {e["engine"]: e for e in results["evaluations"]}

    # (a) the oracle beats the last turn on follow-ups, and the gap is split into pool and ranking
    def follow_ups(engine: str, measure: str = "hit@5") -> float:
        turns = [q["values"][measure] for q in by_engine[engine]["queries"] if "follow-up" in q["tags"]]
        assert len(turns) == 132
        return sum(turns) / len(turns)

    assert follow_ups("hybrid-rewrite") > follow_ups("hybrid") == follow_ups("hybrid-last")
    assert follow_ups("hybrid-rewrite") > follow_ups("hybrid-concat")
    at = lines.index("hit@5 on follow-ups: gap to the human rewrite (hybrid-rewrite) = pool + ranking:")
    split = {m[1]: m for line in lines[at + 1:at + 6]
             if (m := re.match(r"  (\S+) +(-?\d\.\d\d) \[.*\] += pool (-?\d\.\d\d) \[.*\] +\+ ranking (-?\d\.\d\d) \[",
                               line))}
    assert set(split) == {"hybrid", "hybrid-concat", "hybrid-last", "team"}, lines[at:at + 6]
    gaps = {g["engine"]: g for g in results["analysis"]["oracle_gaps"]}
    for engine, g in gaps.items():
        assert g["oracle"] == "hybrid-rewrite" and g["n"] == 132 and g["conversations"] == 20
        assert g["gap"] == pytest.approx(g["pool"] + g["ranking"])
        assert g["gap"] == pytest.approx(follow_ups("hybrid-rewrite") - follow_ups(engine))
        assert all(lo <= x <= hi for x, (lo, hi) in ((g["gap"], g["gap_ci"]), (g["pool"], g["pool_ci"]),
                                                       (g["ranking"], g["ranking_ci"])))
    assert gaps["hybrid"]["gap"] > 0

    # (b) the team's rewriter keeps the hybrid engine's miss causes (its stages, its store)
    missed = {e: next(l for l in lines if l.startswith(f"{e} missed ")) for e in ENGINES}
    assert missed["hybrid-last"].replace("hybrid-last", "hybrid", 1) == missed["hybrid"]  # the same rankings
    for engine in ("hybrid", "team"):
        causes = re.sub(r"^.*?at hit@5: ", "", missed[engine]).split(", ")
        groups = {re.sub(r"^\d+ ", "", c) for c in causes}
        assert "not retrieved" not in groups, missed[engine]
        assert {g for g in groups if not g.startswith("ranked ")} <= {
            "cut by fusion", "never a candidate", "never a candidate (keyword leg empty)",
            "answer past the embedder window"}, missed[engine]
        assert groups & {"cut by fusion", "never a candidate", "never a candidate (keyword leg empty)"}, missed[engine]
    team = by_engine["team"]
    assert team["engine_info"]["over"] == "hybrid" and all(q["rewrite"] for q in team["queries"])
    assert any(line.startswith("  team  ") and " over 150 turns; overlap " in line for line in lines)

    # (c) the hit@5 interval of every engine is within 1.3 times the width of a conversation bootstrap's
    per_query: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for line in (report / "per_query.jsonl").read_text().splitlines():
        row = json.loads(line)
        rank = row["rank_of_gold"]
        per_query[row["engine"]][row["query_id"].split("#")[0]].append(1.0 if rank is not None and rank <= 5 else 0.0)
    intervals = {x["engine"]: x["by_measure"]["hit@5"] for x in results["analysis"]["intervals"]}
    for engine in ENGINES:
        assert len(per_query[engine]) == 20
        lo, hi = intervals[engine]
        ratio = (hi - lo) / bootstrap_width(per_query[engine])
        assert 1 / 1.3 <= ratio <= 1.3, (engine, lo, hi, ratio)

    # (d) five conversations: no difference can be significant, said once
    five = json.loads((project / "mtrag.json").read_text())
    five["conversations"] = five["conversations"][:5]
    (project / "mtrag5.json").write_text(json.dumps(five, indent=1))
    code, out = run(project, sandbox_tmp, shared_cache_dir, "--retrieval-questions=mtrag5.json",
                    f"--retrieval-report-dir={project / 'report5'}")
    assert code == 0, out
    assert out.count("5 conversations: no difference can be significant at alpha 0.05") == 1, out
    assert not re.search(r"[ᵃᵇᶜᵈᵉ]", out.split("retrieval evaluation")[1].split("given the last turn")[0])
    assert "5 conversations: no difference can be significant at alpha 0.05" in (project / "report5" / "results.md").read_text()

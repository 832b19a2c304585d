"""conftest_example.py does what its docstring says when copied into a project."""

import shutil

from conftest import REPO


def test_example_conftest_runs_as_documented(bundled_project):
    shutil.copy(REPO / "conftest_example.py", bundled_project.path / "conftest.py")
    result = bundled_project.runpytest("-m", "retrieval", "--retrieval-report", "conftest.py",
                                       "--retrieval-threshold", "my-search:hit@5>=0.5", "-v",
                                       "--retrieval-engine", "keyword", "--retrieval-engine", "my-search")
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(["*test_hit_at_5[[]my-search[]] PASSED*", "my-search *68*0"])

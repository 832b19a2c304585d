"""Atomic writes and the writer lock (``_atomic``)."""

from __future__ import annotations

import multiprocessing
import os

import pytest

from pytest_retrieval_eval._atomic import LOCKS_ENV, lock_path, locked, write_text_atomic


def test_the_lock_lives_outside_the_folder_the_team_commits(tmp_path, monkeypatch):
    monkeypatch.delenv(LOCKS_ENV, raising=False)
    project = tmp_path / "project"
    cache = project / "questions.cache.json"
    with locked(cache):
        write_text_atomic(cache, "{}\n")
    assert sorted(p.name for p in project.iterdir()) == ["questions.cache.json"]
    assert project not in lock_path(cache).parents


def test_one_file_one_lock_whatever_the_spelling_of_its_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert lock_path("a/q.json") == lock_path(tmp_path / "a" / "q.json")
    assert lock_path("a/q.json") != lock_path("b/q.json")


def _hold(path, ready, release):
    with locked(path):
        ready.set()
        release.wait(10)


def test_the_lock_excludes_another_process(tmp_path, monkeypatch):
    monkeypatch.setenv(LOCKS_ENV, str(tmp_path / "locks"))
    from filelock import FileLock, Timeout

    ctx = multiprocessing.get_context("spawn")
    ready, release = ctx.Event(), ctx.Event()
    child = ctx.Process(target=_hold, args=(tmp_path / "q.json", ready, release))
    child.start()
    try:
        assert ready.wait(30)
        with pytest.raises(Timeout):
            FileLock(str(lock_path(tmp_path / "q.json"))).acquire(timeout=0.2)
    finally:
        release.set()
        child.join(30)
    assert child.exitcode == 0
    assert os.listdir(tmp_path) == ["locks"] or sorted(os.listdir(tmp_path)) == ["locks"]

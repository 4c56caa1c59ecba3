"""The process pool of `lint_paths`: the first file is linted before the workers are forked (so
they inherit what linting loads on first use), the rest by the workers, in order; a pool that
cannot start leaves the rest to the parent, which lints each file once."""

from __future__ import annotations

import os
import sys

import pytest

from verl_lint import engine
from verl_lint.engine import WorkerPool, lint_paths
from verl_lint.settings import Settings

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="forked workers (Linux)")


@pytest.fixture
def scripts(tmp_path):
    paths = []
    for i in range(5):
        p = tmp_path / f"s{i}.sh"
        p.write_text(f"#!/bin/bash\nX={i}\necho \"$X\"\n")
        paths.append(p)
    return paths


PARENT = os.getpid()
CALLS: list = []  # the files this process linted
_plain = engine._lint_task


def _task(t):  # module-level: the pool pickles it by name
    CALLS.append(t[0])
    report = _plain(t)
    report.error = "parent" if os.getpid() == PARENT else "worker"
    return report


@pytest.fixture
def linted_by(monkeypatch):
    """Each report's `error` says which process linted it; the list of the parent's files."""
    CALLS.clear()
    monkeypatch.setattr(engine, "_lint_task", _task)
    return CALLS


def test_first_file_in_the_parent_then_the_workers(scripts, linted_by):
    reports = lint_paths(scripts, lambda p: Settings(), jobs=2, display=lambda p: p.name)
    assert [r.path for r in reports] == [p.name for p in scripts]
    assert [r.error for r in reports] == ["parent"] + ["worker"] * (len(scripts) - 1)


def test_a_running_pool_gets_every_file(scripts, linted_by):
    pool = WorkerPool()
    try:
        lint_paths(scripts[:2], lambda p: Settings(), jobs=2, pool=pool)  # forks the workers
        reports = lint_paths(scripts, lambda p: Settings(), jobs=2, pool=pool)
    finally:
        pool.close()
    assert [r.error for r in reports] == ["worker"] * len(scripts)


def test_a_pool_that_cannot_start_leaves_the_rest_to_the_parent(scripts, linted_by,
                                                                monkeypatch):
    def no_processes(self, workers):
        raise OSError("no process support")

    monkeypatch.setattr(WorkerPool, "executor", no_processes)
    reports = lint_paths(scripts, lambda p: Settings(), jobs=2)
    assert [r.error for r in reports] == ["parent"] * len(scripts)
    assert linted_by == scripts  # each file once, in order

"""The process pool of `lint_paths`: the first file is linted before the workers are forked (so
they inherit what linting loads on first use), then the workers take files from the front and
the parent from the back, reported in order; a pool that cannot start leaves the rest to the
parent, which lints each file once."""

from __future__ import annotations

import os
import sys
import time

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


STOP_AFTER: list = []  # [n]: the parent is interrupted (Ctrl-C) at its n+1-th file
WORKER_LOG: list = []  # [path]: the workers append each file they lint there, slowly


def _task(t):  # module-level: the pool pickles it by name
    if os.getpid() != PARENT and WORKER_LOG:
        time.sleep(0.05)
        with open(WORKER_LOG[0], "a") as log:
            log.write(f"{t[0]}\n")
    if STOP_AFTER and os.getpid() == PARENT and len(CALLS) >= STOP_AFTER[0]:
        raise KeyboardInterrupt
    if CALLS and os.getpid() == PARENT:
        time.sleep(0.02)  # a slow parent: the workers surely start on the front files
    CALLS.append(t[0])
    report = _plain(t)
    report.error = "parent" if os.getpid() == PARENT else "worker"
    return report


@pytest.fixture
def linted_by(monkeypatch):
    """Each report's `error` says which process linted it; the list of the parent's files."""
    CALLS.clear()
    monkeypatch.setattr(engine, "_lint_task", _task)
    yield CALLS
    STOP_AFTER.clear()
    WORKER_LOG.clear()


def test_first_file_in_the_parent_then_the_workers(scripts, linted_by):
    reports = lint_paths(scripts, lambda p: Settings(), jobs=2, display=lambda p: p.name)
    assert [r.path for r in reports] == [p.name for p in scripts]
    by = [r.error for r in reports]
    assert by[0] == "parent" and "worker" in by and by[-1] == "parent"
    # the workers' files come first, the parent's (taken from the back) after
    assert by[1:] == sorted(by[1:], key=lambda who: who == "parent")
    assert sorted(linted_by) == sorted(p for p, who in zip(scripts, by) if who == "parent")


def test_every_file_once_and_in_order(tmp_path, linted_by):
    paths = []
    for i in range(40):
        p = tmp_path / f"s{i:02}.sh"
        p.write_text(f"#!/bin/bash\nbad_{i}\n" + "echo x\n" * (i % 7) * 50)
        paths.append(p)
    serial = lint_paths(paths, lambda p: Settings(), jobs=1)
    parallel = lint_paths(paths, lambda p: Settings(), jobs=3)
    assert [r.path for r in parallel] == [str(p) for p in paths]
    assert [r.diagnostics for r in parallel] == [r.diagnostics for r in serial]
    by = [r.error for r in parallel]
    here = [p for p, who in zip(paths, by) if who == "parent"]
    assert len(linted_by) == len(paths) + len(here)  # the serial run, then the parent's share


def test_a_kept_pool_is_sized_for_the_run_not_its_first_batch(scripts, linted_by):
    pool = WorkerPool()
    try:
        lint_paths(scripts[:2], lambda p: Settings(), jobs=3, pool=pool)  # two files start it
        assert pool.executor(1)._max_workers == 2  # jobs - 1: this process is the third
    finally:
        pool.close()


def test_a_running_pool_is_not_warmed_again(scripts, linted_by):
    pool = WorkerPool()
    try:
        lint_paths(scripts[:2], lambda p: Settings(), jobs=2, pool=pool)  # forks the workers
        CALLS.clear()
        reports = lint_paths(scripts, lambda p: Settings(), jobs=2, pool=pool)
    finally:
        pool.close()
    assert [r.path for r in reports] == [str(p) for p in scripts]
    # no first file linted in the parent before the workers: it only took files from the back
    assert CALLS == sorted(CALLS, reverse=True)
    assert sorted(CALLS) == [p for p, r in zip(scripts, reports) if r.error == "parent"]


def test_a_pool_that_cannot_start_leaves_the_rest_to_the_parent(scripts, linted_by,
                                                                monkeypatch):
    def no_processes(self, workers):
        raise OSError("no process support")

    monkeypatch.setattr(WorkerPool, "executor", no_processes)
    reports = lint_paths(scripts, lambda p: Settings(), jobs=2)
    assert [r.error for r in reports] == ["parent"] * len(scripts)
    assert linted_by == scripts  # each file once, in order


def test_an_interrupted_run_leaves_the_files_no_worker_started(tmp_path, linted_by):
    paths = []
    for i in range(40):
        p = tmp_path / f"s{i:02}.sh"
        p.write_text("#!/bin/bash\necho x\n")
        paths.append(p)
    STOP_AFTER.append(1)  # the warm-up file, then Ctrl-C at the first file from the back
    WORKER_LOG.append(tmp_path / "worker.log")
    with pytest.raises(KeyboardInterrupt):
        lint_paths(paths, lambda p: Settings(), jobs=2)
    linted = (tmp_path / "worker.log").read_text().split() if WORKER_LOG[0].exists() else []
    # the chunks a worker had taken (its queue holds two) are finished, not the other 39 files
    assert len(linted) < 20

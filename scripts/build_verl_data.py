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
- `data/<version>-release.json`: entry points → config dir/name, Hydra config groups and their options, config
  names, and the fields of every dataclass a `_target_` in the configs names (read from the
  wheel's source with `ast`: verl is never imported).
`renames.json`, `enums.json`, `constraints.json` are curated from verl's git history (they cannot
be derived from a wheel): `--curated` copies them in; review the diff either way.
"""

from __future__ import annotations

import argparse
import ast
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
from verl_lint.verl.versions import SUPPORTED_VERSIONS, parse_version  # noqa: E402

OUT = ROOT / "verl_lint" / "verl" / "data"
TRAINER = "verl/trainer/config"

# module → (config dir, config name, extra search dirs, first release that ships the module).
# The config dir/name are those of the module's `@hydra.main`.
ENTRY_POINTS: dict[str, tuple[str, str, tuple[str, ...], str]] = {
    "verl.trainer.main_ppo": (TRAINER, "ppo_trainer", (), "0.4.0"),
    "verl.trainer.main_generation_server": (TRAINER, "ppo_trainer", (), "0.6.0"),
    "verl.trainer.main_generation": (TRAINER, "generation", (), "0.4.0"),
    "verl.trainer.fsdp_sft_trainer": (TRAINER, "sft_trainer", (), "0.4.0"),
    "verl.trainer.sft_trainer": (TRAINER, "sft_trainer_engine", (), "0.6.0"),
    "verl.trainer.main_eval": (TRAINER, "evaluation", (), "0.4.0"),
    "verl.experimental.fully_async_policy.fully_async_main": (
        "verl/experimental/fully_async_policy/config", "fully_async_ppo_trainer", (TRAINER,), "0.7.1"),
    "verl.experimental.one_step_off_policy.main_ppo": (
        "verl/experimental/one_step_off_policy/config", "one_step_off_ppo_trainer", (TRAINER,), "0.7.1"),
}


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
                if n.startswith("verl/") and (n.endswith(".py") or
                                              (n.endswith(".yaml") and "/config/" in n))}


def source_dir_files(version: str, source: Path) -> dict[str, bytes]:
    base = source / version
    return {str(p.relative_to(base)): p.read_bytes() for p in sorted(base.rglob("*.yaml"))}


# --- dataclass fields, from the wheel's source (ast, no import) ---------------------------------

def _is_dataclass(node: ast.ClassDef) -> bool:
    for dec in node.decorator_list:
        target = dec.func if isinstance(dec, ast.Call) else dec
        name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")
        if name == "dataclass":
            return True
    return False


def dataclass_fields(py_files: dict[str, bytes], targets: set[str]) -> dict[str, dict[str, str]]:
    """{`_target_` → {field: annotation}} for every target that is a dataclass in the wheel."""
    classes: dict[str, list[tuple[str, ast.ClassDef]]] = {}
    for path, data in py_files.items():
        if not path.endswith(".py"):
            continue
        try:
            tree = ast.parse(data)
        except SyntaxError:
            continue
        module = path[:-3].replace("/", ".").removesuffix(".__init__")
        for node in tree.body:
            if isinstance(node, ast.ClassDef):
                classes.setdefault(node.name, []).append((module, node))

    def find(name: str, module_hint: str) -> ast.ClassDef | None:
        cands = classes.get(name, [])
        exact = [c for m, c in cands if m == module_hint or m.startswith(module_hint + ".")]
        pool = exact or [c for _, c in cands]
        return pool[0] if len(pool) == 1 or exact else None

    def fields(cls: ast.ClassDef, module: str, seen: frozenset[str] = frozenset()) -> dict[str, str] | None:
        out: dict[str, str] = {}
        for base in cls.bases:
            bname = base.attr if isinstance(base, ast.Attribute) else getattr(base, "id", None)
            if bname in (None, "object", "ABC", "Generic") or bname in seen:
                continue
            bcls = find(bname, module)
            if bcls is None:
                if bname in classes:
                    return None  # an ambiguous verl base: the field set would be a guess
                continue  # a base from outside verl (Mapping, ABC): no dataclass fields
            inherited = fields(bcls, module, seen | {bname})
            if inherited is None:
                return None
            out.update(inherited)
        for stmt in cls.body:
            if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                ann = ast.unparse(stmt.annotation)
                if not ann.startswith(("ClassVar", "typing.ClassVar")):
                    out[stmt.target.id] = ann
        return out

    result: dict[str, dict[str, str]] = {}
    for target in sorted(targets):
        module, _, name = target.rpartition(".")
        cls = find(name, module)
        if cls is None or not _is_dataclass(cls):
            continue
        got = fields(cls, module)
        if got is not None:
            result[target] = got
    return result


def fields_from_shared(path: Path) -> dict[str, dict[str, str]]:
    data = json.loads(path.read_text())
    return {t: {f: spec["type"] for f, spec in info["fields"].items()}
            for t, info in data["targets"].items() if info.get("found") and info.get("is_dataclass")}


# --- composition ---------------------------------------------------------------------------------

def collect_targets(tree, out: set[str]) -> None:
    if isinstance(tree, dict):
        t = tree.get("_target_")
        if isinstance(t, str) and t.startswith("verl."):
            out.add(t)
        for v in tree.values():
            collect_targets(v, out)
    elif isinstance(tree, list):
        for v in tree:
            collect_targets(v, out)


def config_groups(root: Path, config_dir: str) -> tuple[dict[str, list[str]], list[str]]:
    """Hydra config groups (folders, recursively) with their options, and top-level config names."""
    base = root / config_dir
    groups: dict[str, list[str]] = {}
    for p in sorted(base.rglob("*.yaml")):
        rel = p.relative_to(base)
        if len(rel.parts) > 1:
            groups.setdefault("/".join(rel.parts[:-1]), []).append(p.stem)
    names = sorted(p.stem for p in base.glob("*.yaml"))
    return groups, names


def build_version(version: str, files: dict[str, bytes], fields_override: dict | None) -> None:
    yaml_files = {k: v.decode() for k, v in sorted(files.items()) if k.endswith(".yaml")}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for rel, text in yaml_files.items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text(text)
        entry_points, groups, names = {}, {}, {}
        for module, (cdir, cname, search, since) in ENTRY_POINTS.items():
            if parse_version(version) < parse_version(since) or not (root / cdir / f"{cname}.yaml").exists():
                continue
            entry_points[module] = {"config_dir": cdir, "config_name": cname, "search": list(search)}
            for d in (cdir, *search):
                groups[d], names[d] = config_groups(root, d)
        composed: dict[str, dict] = {}
        for module, ep in entry_points.items():
            cdir = ep["config_dir"]
            variants = [(n, ()) for n in names[cdir] if not n.startswith("_generated")]
            engines = groups.get(TRAINER, {}).get("model_engine", [])
            if ep["config_name"] in ("ppo_trainer", "fully_async_ppo_trainer", "one_step_off_ppo_trainer"):
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
        targets: set[str] = set()
        for tree in composed.values():
            collect_targets(tree, targets)
        for gdir in groups:
            for p in (root / gdir).rglob("*.yaml"):
                for line in p.read_text().splitlines():
                    if line.strip().startswith("_target_:"):
                        targets.add(line.split(":", 1)[1].strip().strip("'\""))
    fields = fields_override if fields_override is not None else dataclass_fields(files, targets)
    release = {"version": version, "entry_points": entry_points, "groups": groups,
               "config_names": names,
               "dataclasses": {t: fields[t] for t in sorted(targets) if t in fields}}
    (OUT / f"{version}-release.json").write_text(json.dumps(release, sort_keys=True, separators=(",", ":")))
    write_gz(OUT / f"{version}-configs.json.gz", yaml_files)
    write_gz(OUT / f"{version}-composed.json.gz", composed)
    print(f"verl {version}: {len(yaml_files)} yaml, {len(entry_points)} entry points, "
          f"{len(composed)} composed configs, {len(release['dataclasses'])} dataclasses")


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
    for version in args.versions:
        fields = None
        if args.source_dir:
            files = source_dir_files(version, args.source_dir)
            shared = args.source_dir / "dataclass_fields" / f"{version}.json"
            fields = fields_from_shared(shared) if shared.exists() else {}
        else:
            files = wheel_files(version, args.wheels, args.download)
        build_version(version, files, fields)
    if args.curated:
        for name in ("renames.json", "enums.json", "constraints.json"):
            shutil.copyfile(args.curated / name, OUT / name)


if __name__ == "__main__":
    main()

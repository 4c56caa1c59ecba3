"""A verl's knowledge: the releases bundled with verl-lint and trees mined from disk.

CONTRACT (the engine relies on these names):
- `load_release(version) -> VerlRelease` (a bundled release, cached) and
  `release_for(choice) -> VerlRelease` (bundled or mined from the tree on disk), for the
  `VersionChoice` that `verl_lint.verl.choice.choose_version` made (DESIGN.md's order).
"""

from __future__ import annotations

import os
from dataclasses import field
from functools import lru_cache
from pathlib import Path
from typing import Any, Collection

from verl_lint.records import shared_dataclass
from verl_lint.verl import data
from verl_lint.verl.choice import VersionChoice
from verl_lint.verl.versions import in_range, parse_version


@shared_dataclass()
class EntryPoint:
    """A Hydra entry point: its `@hydra.main` config folder and name, and the folders its
    primary config's `hydra.searchpath` adds. Folders are relative to the release's tree, or
    absolute (a recipe's or a package's own config folder in the workspace). A dataclass, not a
    pydantic model: the lint path imports no pydantic (≈ 40 ms of every start)."""

    module: str
    config_dir: str
    config_name: str
    search: list[str] = field(default_factory=list)
    evidence: str | None = None  # file:line of the `@hydra.main`
    # {config node: file:line} the code this entry point can reach converts into dataclasses;
    # None when not mined (a workspace module outside the verl tree: every site counts)
    converts: dict[str, str] | None = None
    # this launch's `--config-dir` folders not found on disk, as the script writes them: a config
    # name or group option missing from the folders known may be there (VL004, not VL208)
    unfound: list[str] = field(default_factory=list)


class VerlRelease:
    """One verl: its entry points, config groups, dataclasses, converted nodes, registries —
    mined from a bundled release's wheel (at build time) or from a tree on disk (`root`) — plus
    the curated knowledge of the bundled release `version`."""

    def __init__(self, version: str, meta: dict[str, Any], root: Path | None = None,
                 fingerprint: str | None = None) -> None:
        self.version = version
        self.root = root  # None: a bundled release (its YAML files are in the package)
        self.cache_id = fingerprint or f"{version}:{data.stamp(version)}"
        self.entry_points = {m: EntryPoint(module=m, **ep) for m, ep in meta["entry_points"].items()}
        self.groups: dict[str, dict[str, list[str]]] = meta["groups"]
        self.config_names: dict[str, list[str]] = meta["config_names"]
        self.dataclasses: dict[str, dict[str, str]] = meta["dataclasses"]
        # None in data built before these were mined: every `_target_` node counts as converted
        self.converted: list[dict[str, str]] | None = meta.get("converted")
        self.registries: dict[str, dict[str, str]] = meta.get("registries", {})
        self.modules: frozenset[str] | None = frozenset(meta["modules"]) if "modules" in meta else None
        self._vt = parse_version(version)
        self._disk_dirs: dict[str, tuple[dict[str, list[str]], list[str]]] = {}

    def __repr__(self) -> str:
        return f"VerlRelease({self.version!r}{', ' + str(self.root) if self.root else ''})"

    def at_least(self, version: str | None) -> bool:
        return version is not None and self._vt >= parse_version(version)

    def entry_point(self, module: str) -> EntryPoint | None:
        return self.entry_points.get(module)

    def has_module(self, module: str) -> bool | None:
        """Does this verl ship the Python module (None: not known for this data)?"""
        if self.modules is None:
            return None
        return module in self.modules or f"{module}.__init__" in self.modules

    def config_folder(self, folder: str) -> Path:
        """A config folder of this release's tree (materialised for a bundled release), or an
        absolute folder as it is."""
        if os.path.isabs(folder):
            return Path(folder)
        from verl_lint.verl.configs import yaml_root

        return yaml_root(self) / folder

    def dir_index(self, folder: str) -> tuple[dict[str, list[str]], list[str]]:
        """(config groups with their options, top-level config names) of a config folder."""
        if folder in self.groups:
            return self.groups[folder], self.config_names.get(folder, [])
        hit = self._disk_dirs.get(folder)
        if hit is None:
            from verl_lint.verl.mine.release import config_groups

            base = self.config_folder(folder)
            files = {str(p.relative_to(base)): b"" for p in _yaml_files(base)}
            hit = self._disk_dirs[folder] = config_groups(files, "")
        return hit

    def group_options(self, entry: EntryPoint, group: str) -> list[str] | None:
        for d in (entry.config_dir, *entry.search):
            opts = self.dir_index(d)[0].get(group)
            if opts is not None:
                return opts
        return None

    def is_group(self, entry: EntryPoint, name: str) -> bool:
        return name.startswith("hydra/") or name == "hydra" or name in self.group_names(entry)

    def group_names(self, entry: EntryPoint) -> frozenset[str]:
        """The config groups the entry point composes from (Hydra's own `hydra/…` aside)."""
        return self._group_names(entry.config_dir, tuple(entry.search))

    @lru_cache(maxsize=None)
    def _group_names(self, config_dir: str, search: tuple[str, ...]) -> frozenset[str]:
        """The config groups of these folders (`group_options` is not None for them): the
        analysis asks for every override of every launch."""
        return frozenset(group for folder in (config_dir, *search)
                         for group, options in self.dir_index(folder)[0].items()
                         if options is not None)

    def has_config_name(self, entry: EntryPoint, name: str) -> bool:
        return any(name in self.dir_index(d)[1] for d in (entry.config_dir, *entry.search))

    def config_names_of(self, entry: EntryPoint) -> list[str]:
        return sorted({n for d in (entry.config_dir, *entry.search) for n in self.dir_index(d)[1]
                       if not n.startswith("_")})

    def fields_of(self, target: Any) -> dict[str, str] | None:
        """Field name → annotation of the dataclass a `_target_` names, None when unknown."""
        return self.dataclasses.get(target) if isinstance(target, str) else None

    def converts(self, path: tuple[str, ...], entry: EntryPoint | None = None) -> str | None:
        """Evidence (file:line) that verl's code — the code `entry` can reach, when known —
        converts the config node at `path` (or a node above it: instantiation is recursive)
        into its dataclass, else None. A converting call names its node by the attribute chain
        it reads (`self.config.actor`), so a chain matches every node it ends in."""
        if self.converted is None:
            return "every `_target_` node (data without conversion sites)"
        sites = self.converted if entry is None or entry.converts is None else \
            tuple({"node": k, "evidence": v} for k, v in entry.converts.items())
        return _converting_site(path, tuple((s["node"], s["evidence"]) for s in sites))

    # --- curated knowledge, as it applies to this release -----------------------------------

    @lru_cache(maxsize=None)
    def enum_for(self, key: str) -> tuple[tuple[str, ...], bool, str] | None:
        """(allowed values in this verl, open registry?, source note) for a key, or None.

        The curated list of the bundled release (enums.json: per release, or for the `releases`
        range an entry names), widened by the names this verl's own code registers (a fork's
        `@register_adv_est("my_est")`). `null` in a list is the Hydra spelling of None."""
        entry = _enum_entries().get(key)
        if entry is None:
            return None
        if not in_range(self.version, entry.get("releases")):
            return None
        per = entry.get("per_version")
        values = per.get(self.version) if per is not None else entry["values"]
        if not isinstance(values, list):
            return None
        allowed = ["null" if v is None else str(v) for v in values]
        allowed += [n for n in self.registries.get(entry["key"], ()) if n not in allowed]
        return tuple(allowed), bool(entry.get("open")), entry.get("source", "")

    def enum_keys(self) -> Collection[str]:
        """The keys `enum_for` may answer for (it is None for any other): the rules test an
        override's key here before asking, a lookup instead of a call for nearly every key."""
        return _enum_entries().keys()

    def enum_separator(self, key: str) -> str | None:
        """The separator of a field that takes several enum values in one string
        (`rollout_rs=token_k1,seq_max_k2`), else None."""
        entry = _enum_entries().get(key)
        return entry.get("separator") if entry is not None else None

    def renames_of(self, key: str) -> tuple[dict[str, Any], ...]:
        """renames.json entries whose old key is `key` and which happened by this release."""
        return self._renames_by_old().get(key, ())

    def renamed_keys(self) -> Collection[str]:
        """The keys `renames_of` has entries for (`()` for any other), to test before asking."""
        return self._renames_by_old().keys()

    @lru_cache(maxsize=None)
    def _renames_by_old(self) -> dict[str, tuple[dict[str, Any], ...]]:
        # one pass over the ~200 entries per release, not one per override key asked
        index: dict[str, list[dict[str, Any]]] = {}
        for entry in data.renames():
            if entry.get("since") is None or self.at_least(entry["since"]):
                index.setdefault(entry["old"], []).append(entry)
        return {old: tuple(entries) for old, entries in index.items()}

    @lru_cache(maxsize=None)
    def value_renames(self, key: str) -> dict[str, dict[str, Any]]:
        """{old value: entry} for `kind: value` renames of `key` that happened by this release."""
        out = {}
        for entry in data.renames():
            if entry["kind"] != "value" or "=" not in entry["old"]:
                continue
            k, _, v = entry["old"].partition("=")
            if k == key and (entry.get("since") is None or self.at_least(entry["since"])):
                out[v] = entry
        return out


@lru_cache(maxsize=1)
def _enum_entries() -> dict[str, dict[str, Any]]:
    """{key: the first enums.json entry for it (its `key` or one of `also_applies_to`)}: one
    pass over the entries, not one per override key the rules ask about."""
    index: dict[str, dict[str, Any]] = {}
    for entry in data.enums():
        for key in (entry["key"], *entry.get("also_applies_to", ())):
            index.setdefault(key, entry)
    return index


@lru_cache(maxsize=None)
def load_release(version: str) -> VerlRelease:
    return VerlRelease(version, data.release_meta(version))


def release_for(choice: VersionChoice) -> VerlRelease:
    """The release a choice names: bundled, or mined from its tree on disk (cached)."""
    if choice.kind == "bundled" or choice.path is None:
        return load_release(choice.version)
    from verl_lint.verl.configs import tree_release

    return tree_release(Path(choice.path), choice.version)


@lru_cache(maxsize=4096)
def _converting_site(path: tuple[str, ...], sites: tuple[tuple[str, str], ...]) -> str | None:
    best: tuple[int, str] | None = None  # the most specific chain is the best evidence
    for i in range(len(path), 0, -1):
        node = ".".join(path[:i])
        for chain, evidence in sites:
            if (node == chain or node.endswith("." + chain)) and \
                    (best is None or chain.count(".") > best[0]):
                best = (chain.count("."), evidence)
    return None if best is None else best[1]


def _yaml_files(base: Path):
    try:
        return sorted(base.rglob("*.yaml"))
    except OSError:
        return []

"""Composed configs per (verl, config folder, config name, group overrides), cached.

Lookup order: this process's memory → the disk cache (one pickle per tree, < 1 ms) → for a
bundled release, the trees precomposed in the package (~30 ms for a release's gzip) → hydra-core
(`compose.py`, ~0.3 s plus hydra's import) over the YAML files: the bundled ones (materialised
once under the cache dir) or the tree and config folders on disk. A tree on disk is keyed by the
content hash of the YAML files composed, so an edited config is composed again. Trees are
shared: never mutate one.

`tree_release(root, version)` mines a verl tree on disk once per content hash (memory, then the
disk cache) with the miners the build script runs over verl's wheels.
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Iterable

from verl_lint.verl import cache, data, sources
from verl_lint.verl.compose import ComposeFailure
from verl_lint.verl.release import EntryPoint, VerlRelease

Tree = dict[str, Any]
_memory: dict[str, Tree | ComposeFailure] = {}
# id(tree) → (the tree, its key in the disk cache): what data derived from a composed tree is
# cached under (`disk_key`)
_keys: dict[int, tuple[Tree, str]] = {}


def disk_key(tree: Tree) -> str | None:
    """The disk-cache key of a tree `composed` returned (None for any other tree)."""
    hit = _keys.get(id(tree))
    return hit[1] if hit is not None and hit[0] is tree else None


def derived(tree: Tree, namespace: str, compute: Callable[[Tree], Any], *code: str) -> Any:
    """`compute(tree)`, kept in the disk cache beside a tree `composed` returned (under
    `namespace`, keyed by the tree and the files of the code computing it, `__file__`s):
    what is worked out once per composed tree is read back by the next run. Any other tree
    is computed."""
    tree_key = disk_key(tree)
    if tree_key is None:
        return compute(tree)
    key = f"{_files_id(code)}:{tree_key}"
    found = cache.load(namespace, key)
    if found is cache.MISS:
        found = compute(tree)
        cache.store(namespace, key, found)
    return found


@lru_cache(maxsize=16)
def _files_id(files: tuple[str, ...]) -> str:
    return cache.code_id(*(Path(f).resolve() for f in files))


def tree_key(config_dir: str, config_name: str, group_overrides: Iterable[str] = ()) -> str:
    """A composed tree's key in the bundle (`scripts/build_verl_data.py` writes them)."""
    return f"{config_dir}|{config_name}|{' '.join(group_overrides)}"


def composed(release: VerlRelease, entry: EntryPoint, config_name: str,
             group_overrides: tuple[str, ...] = ()) -> Tree | ComposeFailure:
    key = tree_key(entry.config_dir, config_name, group_overrides)
    full_key = f"{release.cache_id}:{_code_id()}:{_folders_id(release, entry)}:{key}"
    hit = _memory.get(full_key)
    if hit is not None:
        return hit
    result = cache.load("composed", full_key)
    if result is cache.MISS:
        result = None
        if release.root is None and not _on_disk(entry):
            # the bundle holds every precomposed tree of a release in one gzip (~30 ms to read);
            # the per-tree pickle written here loads in under a millisecond next time
            result = data.composed_configs(release.version).get(key)
        if result is None:
            result = _compose(release, entry, config_name, group_overrides)
        cache.store("composed", full_key, result)
    _memory[full_key] = result
    if isinstance(result, dict):
        _keys[id(result)] = (result, full_key)
    return result


def _on_disk(entry: EntryPoint) -> bool:
    return any(os.path.isabs(d) for d in (entry.config_dir, *entry.search))


@lru_cache(maxsize=1)
def _code_id() -> str:
    """The composing and mining code itself: a development checkout keeps its version number
    while this code changes, and what it composed or mined before must not be reused."""
    here = Path(__file__).resolve().parent
    return cache.code_id(here / "compose.py", *sorted((here / "mine").glob("*.py")))


def _folders_id(release: VerlRelease, entry: EntryPoint) -> str:
    """Content hash of the absolute (workspace) config folders an entry point composes from;
    the release's own folders are covered by its cache id."""
    return ",".join(_dir_hash(d) for d in (entry.config_dir, *entry.search) if os.path.isabs(d))


def _dir_hash(folder: str) -> str:
    """The folder's content hash, read again only when a YAML file's size or mtime changed: an
    editor session sees an edited recipe config, a CLI run over many scripts hashes it once."""
    stat_key, paths = sources.yaml_signature(Path(folder))
    hit = _DIR_HASHES.get((folder, stat_key))
    if hit is None:
        hit = _DIR_HASHES[(folder, stat_key)] = sources.dir_fingerprint(Path(folder), paths)
    return hit


_DIR_HASHES: dict[tuple[str, int], str] = {}


def _compose(release: VerlRelease, entry: EntryPoint, config_name: str,
             group_overrides: tuple[str, ...]) -> Tree | ComposeFailure:
    from verl_lint.verl.compose import compose_tree

    tree, failure = compose_tree(release.config_folder(entry.config_dir), config_name,
                                 list(group_overrides),
                                 [release.config_folder(s) for s in entry.search])
    if failure is not None:
        return failure
    tree.pop("hydra", None)
    return tree


def yaml_root(release: VerlRelease) -> Path:
    """The folder the release's relative config folders are in: its tree on disk, or the bundled
    YAML files materialised once under the cache dir."""
    if release.root is not None:
        return release.root
    return cache.materialize("yaml", f"{release.version}:{data.stamp(release.version)}",
                             data.config_files(release.version))


# --- a verl tree on disk -------------------------------------------------------------------------

_TREES: dict[tuple[str, str], VerlRelease] = {}


def tree_release(root: Path, version: str) -> VerlRelease:
    """The verl tree at `root` (the folder holding `verl/`), mined once per content hash."""
    files = sources.TreeFiles.scan(root)
    fingerprint = _tree_fingerprint(files)
    hit = _TREES.get((fingerprint, version))
    if hit is not None:
        return hit
    meta = cache.load("tree", f"{_code_id()}:{fingerprint}")
    if meta is cache.MISS:
        from verl_lint.verl.mine.release import mine_release

        meta = mine_release(files)
        cache.store("tree", f"{_code_id()}:{fingerprint}", meta)
    release = _TREES[(fingerprint, version)] = VerlRelease(version, meta, root=root,
                                                          fingerprint=f"tree:{fingerprint}")
    return release


def _tree_fingerprint(files: sources.TreeFiles) -> str:
    """The content hash, reused while no file's size or mtime changed (a CLI run over a folder
    of scripts, an editor's re-lints) — hashing a whole verl tree costs tens of milliseconds."""
    stat_key = (str(files.root), _stat_signature(files))
    hit = _FINGERPRINTS.get(stat_key)
    if hit is None:
        hit = _FINGERPRINTS[stat_key] = files.fingerprint()
    return hit


_FINGERPRINTS: dict[tuple[str, int], str] = {}


def _stat_signature(files: sources.TreeFiles) -> int:
    sig = []
    for p in files:
        try:
            st = os.stat(files.root / p)
            sig.append((p, st.st_size, st.st_mtime_ns))
        except OSError:
            sig.append((p, -1, 0))
    return hash(tuple(sig))

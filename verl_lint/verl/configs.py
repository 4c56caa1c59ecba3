"""Composed configs per (release, config dir, config name, group overrides), cached.

Lookup order: this process's memory → the disk cache (one pickle per tree, < 1 ms) → the
precomposed trees bundled in the package (~30 ms for a release's gzip) → hydra-core
(`compose.py`, ~0.3 s plus hydra's import). What came from the bundle or Hydra (a tree, or
Hydra's refusal) is written to the disk cache. Trees are shared: never mutate one.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Iterable

from verl_lint.verl import cache, data
from verl_lint.verl.compose import ComposeFailure
from verl_lint.verl.release import EntryPoint, VerlRelease

Tree = dict[str, Any]
_memory: dict[str, Tree | ComposeFailure] = {}


def tree_key(config_dir: str, config_name: str, group_overrides: Iterable[str] = ()) -> str:
    """A composed tree's key in the bundle (`scripts/build_verl_data.py` writes them)."""
    return f"{config_dir}|{config_name}|{' '.join(group_overrides)}"


def composed(release: VerlRelease, entry: EntryPoint, config_name: str,
             group_overrides: tuple[str, ...] = ()) -> Tree | ComposeFailure:
    key = tree_key(entry.config_dir, config_name, group_overrides)
    full_key = f"{release.version}:{_data_stamp(release.version)}:{key}"
    hit = _memory.get(full_key)
    if hit is not None:
        return hit
    result = cache.load("composed", full_key)
    if result is cache.MISS:
        # the bundle holds every precomposed tree of a release in one gzip (~30 ms to read);
        # the per-tree pickle written here loads in under a millisecond next time
        result = data.composed_configs(release.version).get(key)
        if result is None:
            result = _compose(release, entry, config_name, group_overrides)
        cache.store("composed", full_key, result)
    _memory[full_key] = result
    return result


def _compose(release: VerlRelease, entry: EntryPoint, config_name: str,
             group_overrides: tuple[str, ...]) -> Tree | ComposeFailure:
    from verl_lint.verl.compose import compose_tree

    root = cache.materialize("yaml", f"{release.version}:{_data_stamp(release.version)}",
                             data.config_files(release.version))
    tree, failure = compose_tree(root / entry.config_dir, config_name, list(group_overrides),
                                 [root / s for s in entry.search])
    if failure is not None:
        return failure
    tree.pop("hydra", None)
    return tree


@lru_cache(maxsize=None)
def _data_stamp(version: str) -> str:
    """Changes when the bundled data is rebuilt (the verl-lint version alone may not)."""
    st = (data.DATA_DIR / f"{version}-composed.json.gz").stat()
    return f"{st.st_size}-{int(st.st_mtime)}"

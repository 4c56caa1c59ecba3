"""Which verl a script runs: a bundled release or a verl tree on disk.

`choose_source(...)` applies DESIGN.md's order, first match wins:

1. `--verl-version` / config `verl-version`: that bundled release;
2. config `verl-source = "PATH"` (`--verl-source`): the verl tree at PATH;
3. a `verl/` package in the workspace: walking up from the script's folder to the project root
   (the folder of the configuration file, else the git root), the first folder that holds
   `verl/trainer/config/` — a vendored or modified copy, as research repositories carry;
4. the installed `verl` distribution's files (found through its metadata, never imported);
5. a pin: `verl==X` in the script's header comments, or a `REQUIRED_VERL.txt` between the
   script and the project root;
6. the newest bundled release.

A tree on disk is mined with the same code the build script runs over verl's wheels
(`verl_lint.verl.mine`): entry points, config groups, dataclass fields, converted nodes,
registered names. Its own `verl/version/version` picks the nearest bundled release for the
curated knowledge (renames, enums, constraints). Mining results are cached by the tree's content
hash (in memory, and in the user cache dir), so a second run costs what a bundled release costs.
Nothing in the tree is imported or executed.
"""

from __future__ import annotations

import os
import re
from functools import lru_cache
from pathlib import Path
from typing import Mapping

from verl_lint.digest import blake2b
from verl_lint.fileio import real_folder
from verl_lint.records import shared_dataclass

CONFIG_MARKER = Path("verl") / "trainer" / "config"
_MAX_TREE_FILES = 20_000  # a runaway walk (a symlinked home) is not a verl tree
_REQUIRED = "REQUIRED_VERL.txt"


@shared_dataclass(frozen=True)
class Workspace:
    """Where a script sits: its folder, the project root above it (None when unknown) and the
    folder verl-lint runs in (what `$(pwd)` is when the user starts the script from here)."""

    script_dir: Path | None
    project_root: Path | None
    cwd: Path

    @classmethod
    def for_script(cls, path: str | None, config_file: str | None = None) -> "Workspace":
        if not path or path == "-":
            return cls(script_dir=None, project_root=None, cwd=Path.cwd())
        if path.endswith("/"):  # not a file's name: `dirname` would not be its parent
            return _for_folder(os.getcwd(), str(Path(path).parent), config_file)
        # one per folder: the scripts of a folder share it (≈ 1% of linting verl's scripts)
        return _for_folder(os.getcwd(), os.path.dirname(path), config_file)

    def folders_up(self) -> tuple[Path, ...]:
        """The script's folder and its parents up to the project root (only the script's
        folder when no root is known): where a workspace's own files may sit."""
        return _folders_up(self.script_dir, self.project_root)


@lru_cache(maxsize=256)  # asked for each file of a folder, and by several lookups
def _folders_up(script_dir: Path | None, project_root: Path | None) -> tuple[Path, ...]:
    if script_dir is None:
        return ()
    here = _resolve(script_dir)
    root = _resolve(project_root) if project_root else None
    if root is None or (here != root and root not in here.parents):
        return (here,)
    out = [here]
    while here != root and here.parent != here:
        here = here.parent
        out.append(here)
    return tuple(out)


@lru_cache(maxsize=256)
def _for_folder(cwd: str, folder: str, config_file: str | None) -> Workspace:
    here = Path(cwd)
    script_dir = here / folder
    root = Path(config_file).resolve().parent if config_file else git_root(script_dir)
    return Workspace(script_dir=script_dir, project_root=root, cwd=here)


def git_root(folder: Path) -> Path | None:
    found = _git_root_above(str(_resolve(folder)))
    return None if found is None else Path(found)


@lru_cache(maxsize=1024)
def _git_root_above(directory: str) -> str | None:
    # folders share their parents' answer: one look for `.git` per folder of the run
    if os.path.exists(os.path.join(directory, ".git")):
        return directory
    parent = os.path.dirname(directory)
    return None if parent == directory else _git_root_above(parent)


def _resolve(p: Path) -> Path:
    # once per folder for the whole run, shared with the configuration lookup (never raises)
    return Path(real_folder(os.fspath(p.absolute())))


# --- finding a tree ------------------------------------------------------------------------------

def is_verl_tree(root: Path) -> bool:
    """`root/verl/trainer/config/` exists (root is the folder that holds the `verl` package)."""
    return os.path.isdir(os.path.join(root, CONFIG_MARKER))  # False for what cannot be read


def tree_root(path: Path) -> Path | None:
    """The folder holding the `verl` package, given it or the package folder itself."""
    for cand in (path, path.parent):
        if is_verl_tree(cand) and (cand is path or path.name == "verl"):
            return _resolve(cand)
    return None


def workspace_tree(ws: Workspace) -> Path | None:
    for d in ws.folders_up():
        if is_verl_tree(d):
            return d
    return None


@lru_cache(maxsize=1)
def may_be_installed() -> bool:
    """False when no `verl` distribution can be installed: no folder on `sys.path` lists its
    metadata (`verl-X.dist-info`, `verl-X.egg-info`, as `importlib.metadata` finds them), and
    nothing else could provide it (an egg or zip on the path, another metadata finder). Saves
    importing `importlib.metadata` (≈ 15 ms) where verl is not installed, the common case for
    a repository of launch scripts."""
    import importlib.machinery
    import sys

    if any(hasattr(finder, "find_distributions") and finder is not importlib.machinery.PathFinder
           for finder in sys.meta_path):
        return True
    for entry in sys.path:
        try:
            names = os.listdir(entry or ".")
        except OSError:
            if os.path.exists(entry):  # a zip file: let importlib.metadata look into it
                return True
            continue
        if entry.lower().endswith(".egg"):
            return True
        for name in names:
            low = name.lower()
            # a name normalised to `verl` starts with it (only the separators change)
            if low.startswith("verl") and low.endswith((".dist-info", ".egg-info")) and \
                    re.sub(r"[-_.]+", "_", low.rpartition(".")[0].partition("-")[0]) == "verl":
                return True
    return False


@lru_cache(maxsize=1)
def installed_tree() -> Path | None:
    """The installed `verl` distribution's tree (the folder holding its `verl/` package), from
    its metadata: the files are read, the package is never imported."""
    if not may_be_installed():
        return None
    from importlib import metadata

    try:
        dist = metadata.distribution("verl")
        root = Path(str(dist.locate_file(""))).resolve()
    except Exception:  # noqa: BLE001 - a broken install must not break linting
        return None
    return root if is_verl_tree(root) else None


@lru_cache(maxsize=1)
def installed_verl_version() -> str | None:
    """The version of an installed `verl` distribution, from its metadata (no import)."""
    if not may_be_installed():
        return None
    from importlib import metadata

    try:
        return metadata.version("verl")
    except Exception:  # noqa: BLE001 - a broken install must not break linting
        return None


# an exact pin only: `verl>=0.6.0` says nothing about which release runs (the newest satisfies
# it); compiled when first used (by `re`): most workspaces have no REQUIRED_VERL.txt
_REQUIREMENT = r"(?m)\bverl\s*==\s*v?([0-9][0-9A-Za-z.+\-]*)|^\s*v?(\d+\.\d+[\w.+\-]*)\s*$"


def required_verl(ws: Workspace) -> tuple[str, Path] | None:
    """(version, file) from the nearest `REQUIRED_VERL.txt` with an exact pin (`verl==0.8.0`, or
    a bare `0.8.0`)."""
    for d in ws.folders_up():
        if not os.path.isfile(os.path.join(d, _REQUIRED)):  # most folders: no Path made
            continue
        f = d / _REQUIRED
        try:
            text = f.read_text(errors="replace")[:4096]
        except OSError:
            text = None
        if text:
            m = re.search(_REQUIREMENT, text)
            if m:
                return (m.group(1) or m.group(2)).rstrip("."), f
    return None


# --- reading a tree ------------------------------------------------------------------------------

class TreeFiles(Mapping[str, bytes]):
    """The files of a verl tree the miners read (`verl/**/*.py`, config YAMLs, the version file),
    keyed by their path below the root; contents are read once, on first use."""

    def __init__(self, root: Path, paths: list[str]) -> None:
        self.root = root
        self._paths = paths
        self._index = frozenset(paths)
        self._data: dict[str, bytes] = {}

    @classmethod
    def scan(cls, root: Path) -> "TreeFiles":
        paths: list[str] = []
        base = root / "verl"
        for dirpath, dirnames, filenames in os.walk(base):
            dirnames[:] = sorted(d for d in dirnames if d != "__pycache__" and not d.startswith("."))
            rel = os.path.relpath(dirpath, root).replace(os.sep, "/")
            for name in sorted(filenames):
                if name.endswith((".py", ".yaml")) or (name == "version" and rel == "verl/version"):
                    paths.append(f"{rel}/{name}")
            if len(paths) > _MAX_TREE_FILES:
                break
        return cls(root, paths)

    def __getitem__(self, key: str) -> bytes:
        got = self._data.get(key)
        if got is None:
            if key not in self._index:
                raise KeyError(key)
            try:
                got = (self.root / key).read_bytes()
            except OSError:
                got = b""
            self._data[key] = got
        return got

    def __iter__(self):
        return iter(self._paths)

    def __len__(self) -> int:
        return len(self._paths)

    def fingerprint(self) -> str:
        """A digest of every path and content: equal trees share cached knowledge."""
        h = blake2b(digest_size=20)
        for p in self._paths:
            h.update(p.encode() + b"\0" + self[p] + b"\0")
        return h.hexdigest()


def yaml_signature(folder: Path) -> tuple[int, list[Path]]:
    """(a hash of every YAML file's path, size and mtime below `folder`, those files)."""
    paths, sig = [], []
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames.sort()
        for name in sorted(filenames):
            if name.endswith(".yaml"):
                p = Path(dirpath) / name
                try:
                    st = p.stat()
                except OSError:
                    continue
                paths.append(p)
                sig.append((str(p), st.st_size, st.st_mtime_ns))
    return hash(tuple(sig)), paths


def dir_fingerprint(folder: Path, paths: list[Path]) -> str:
    """A digest of a config folder's YAML files (paths and contents), for composed-tree caching."""
    h = blake2b(digest_size=20)
    for p in paths:
        try:
            data = p.read_bytes()
        except OSError:
            continue
        h.update(str(p.relative_to(folder)).encode() + b"\0" + data + b"\0")
    return h.hexdigest()


def tree_version_of(root: Path) -> str | None:
    try:
        text = (root / "verl" / "version" / "version").read_text(errors="replace").strip()
    except OSError:
        return None
    return text[:64] or None


def clear_caches() -> None:
    """Forget what was found on disk — workspaces, git roots, the installed verl — for a
    long-running `--watch` or language server, where a `.git` or a verl tree may appear."""
    for cached in (_for_folder, _folders_up, _git_root_above,
                   may_be_installed, installed_tree, installed_verl_version):
        cached.cache_clear()

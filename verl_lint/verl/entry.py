"""Find a launch's entry point and config folder: in the chosen verl, or on disk in the workspace.

`python3 -m pkg.mod` and `python3 path/main.py` are looked up in the verl the script runs
(`release.entry_point`), then as files of the workspace (the project root, the folders between
it and the script, the folder verl-lint runs in); a module found there is read with `ast` for its
`@hydra.main(config_path=…, config_name=…)` — a module without one is not a Hydra launch.
`--config-path` and `--config-dir` resolve against disk: an absolute folder as it is, a relative
`--config-path` against the entry module's folder (Hydra's rule), and the anchored paths the
shell gives (`$(dirname "$0")` is the script's folder; `$(pwd)` is the folder verl-lint runs in,
used only if the config named exists there). In a config's `hydra.searchpath`,
`file://verl/trainer/config` and `pkg://verl.trainer.config` mean the chosen verl's configs.
Nothing found is imported or executed.
"""

from __future__ import annotations

import os
import posixpath
from pathlib import Path
from typing import Any

from verl_lint.evaluate.model import Launch, Unknown
from verl_lint.records import shared_dataclass
from verl_lint.verl.mine.release import TRAINER_CONFIG, hydra_main, searchpath_folder
from verl_lint.verl.release import EntryPoint, VerlRelease
from verl_lint.verl.sources import Workspace

_MAX_MODULE = 4 * 1024 * 1024  # bytes of a module file worth parsing for `@hydra.main`


@shared_dataclass()
class Resolution:
    """An entry point to compose (`entry`), or why not: `missing` (VL211: the module is not in
    that verl), `not_hydra` (no `@hydra.main`: its arguments are not Hydra overrides) or
    `unresolved` (VL004, saying where it looked)."""

    entry: EntryPoint | None = None
    config_name: str | None = None
    missing: str | None = None
    not_hydra: str | None = None
    unresolved: str | None = None


def module_of(launch: Launch) -> str | None:
    if launch.module:
        return launch.module
    if launch.script:
        path = posixpath.normpath(launch.script.replace("\\", "/"))
        for anchor in ("verl/", "recipe/"):
            at = path.rfind(anchor) if anchor == "verl/" else path.find(anchor)
            if at != -1 and (at == 0 or path[at - 1] == "/") and path.endswith(".py"):
                return path[at:-3].replace("/", ".")
    return None


def search_roots(ws: Workspace | None) -> list[Path]:
    """Where `python3 -m` may find a workspace module: the project root, the folders from the
    script up to it, and the folder verl-lint runs in (first found wins)."""
    if ws is None:
        return []
    out: list[Path] = []
    for d in (*([ws.project_root] if ws.project_root else []), *ws.folders_up(), ws.cwd):
        if d not in out:
            out.append(d)
    return out


def find_module_file(module: str | None, script: str | None, ws: Workspace | None) -> Path | None:
    rel = module.replace(".", "/") + ".py" if module else script
    if not rel:
        return None
    if os.path.isabs(rel):
        return Path(rel) if _probed(Path(rel)) else None
    for root in search_roots(ws):
        cand = root / rel
        if _probed(cand):
            return cand
        if module and _probed(root / module.replace(".", "/") / "__main__.py"):
            return root / module.replace(".", "/") / "__main__.py"
    return None


def _probed(p: Path) -> bool:
    """Is `p` a file? The result cache remembers every path looked at (found or not): a module
    created later makes the script's findings stale."""
    from verl_lint.result_cache import consulted

    consulted(p)
    return _is_file(p)


def _is_file(p: Path) -> bool:
    try:
        return p.is_file()
    except OSError:
        return False


def disk_entry(module: str, path: Path, release: VerlRelease, ws: Workspace | None) -> Resolution:
    """The `@hydra.main` of a workspace module file, as an entry point with absolute folders."""
    try:
        raw = path.read_bytes()[:_MAX_MODULE]
    except OSError as exc:
        return Resolution(unresolved=f"cannot read {path}: {exc.strerror or exc}")
    found = hydra_main(raw, str(path))
    if found is None:
        return Resolution(not_hydra=f"{path} has no `@hydra.main` with literal arguments: its "
                                    "arguments are not Hydra overrides")
    config_path, config_name, line = found
    folder = (path.parent / config_path).resolve() if not os.path.isabs(config_path) \
        else Path(config_path)
    entry = EntryPoint(module=module, config_dir=str(folder), config_name=config_name,
                       search=searchpath(folder / f"{config_name}.yaml", release, ws),
                       evidence=f"{path}:{line}")
    return Resolution(entry=entry)


def searchpath(config_file: Path, release: VerlRelease, ws: Workspace | None) -> list[str]:
    """A workspace config's `hydra.searchpath` as config folders: verl's own configs for
    `file://verl/trainer/config` / `pkg://verl.trainer.config`, other relative `file://` folders
    where the run starts (the project root, else the folder verl-lint runs in)."""
    import yaml

    try:
        doc = yaml.safe_load(config_file.read_bytes()[:_MAX_MODULE])
    except (OSError, yaml.YAMLError):
        return []
    hydra = doc.get("hydra") if isinstance(doc, dict) else None
    entries = hydra.get("searchpath") if isinstance(hydra, dict) else None
    out: list[str] = []
    for raw in entries if isinstance(entries, list) else ():
        entry = str(raw)
        folder = searchpath_folder(entry)
        if entry.startswith("file:///"):
            folder = entry[len("file://"):]
        if folder is None:
            continue
        resolved = _folder_for(folder, release, ws)
        if resolved is not None and resolved not in out:
            out.append(resolved)
    return out


def _folder_for(folder: str, release: VerlRelease, ws: Workspace | None) -> str | None:
    if os.path.isabs(folder):
        return folder if Path(folder).is_dir() else None
    if folder == TRAINER_CONFIG or folder.startswith("verl/"):
        return folder  # the chosen verl's own folder (relative: the release resolves it)
    for root in search_roots(ws):
        if (root / folder).is_dir():
            return str((root / folder).resolve())
    return None


def anchored_path(value: Any, ws: Workspace | None, must_hold: str | None = None) -> str | None:
    """A folder the shell names through `$(dirname "$0")` / `$(pwd)` (an anchored Unknown), or
    as a known absolute path; None when it cannot be known. A `$(pwd)` path counts only when
    `must_hold` (a config file name) exists there: the user may start the script elsewhere."""
    if isinstance(value, str):
        text = value.strip().strip("'\"")
        return os.path.normpath(text) if os.path.isabs(text) else None
    if ws is None:
        return None
    if isinstance(value, Unknown):
        anchor = getattr(value, "anchor", None)
        rest = getattr(value, "rest", "")
        if anchor == "script_dir" and ws.script_dir is not None:
            base = ws.script_dir
        elif anchor == "cwd":
            base = ws.cwd
        else:
            return None
        folder = Path(os.path.normpath(str(base) + "/" + rest.lstrip("/"))) if rest else base
        if anchor == "cwd" and must_hold and not (folder / must_hold).is_file():
            return None
        return str(folder)
    return None

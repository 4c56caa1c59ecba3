"""The bundled verl knowledge (built by `scripts/build_verl_data.py`; see NOTICE for verl's license).

Loaders are cached per process. Public entry points for other parts of verl-lint:
- `constraints()` — the startup checks verl runs (constraints.json: id, condition, message, keys,
  versions, severity…), for the arithmetic rules;
- `enums()`, `renames()` — curated lists (see `verl_lint.verl.release.VerlRelease` for the
  per-version views);
- `release_meta(version)` — entry points, config groups, config names, dataclass fields;
- `composed_configs(version)` — the precomposed default trees; `config_files(version)` — YAMLs.
"""

from __future__ import annotations

import gzip
import json
from functools import lru_cache
from pathlib import Path
from typing import Any

DATA_DIR = Path(__file__).resolve().parent


def _json(name: str) -> Any:
    return json.loads((DATA_DIR / name).read_bytes())


def _json_gz(name: str) -> Any:
    with gzip.open(DATA_DIR / name, "rb") as fh:
        return json.loads(fh.read())


@lru_cache(maxsize=None)
def constraints() -> list[dict[str, Any]]:
    return _json("constraints.json")


@lru_cache(maxsize=None)
def enums() -> list[dict[str, Any]]:
    return _json("enums.json")


@lru_cache(maxsize=None)
def renames() -> list[dict[str, Any]]:
    return _json("renames.json")


@lru_cache(maxsize=None)
def release_meta(version: str) -> dict[str, Any]:
    return _json(f"{version}-release.json")


@lru_cache(maxsize=None)
def composed_configs(version: str) -> dict[str, Any]:
    """{"<config dir>|<config name>|<group overrides>": tree} (do not mutate the trees)."""
    return _json_gz(f"{version}-composed.json.gz")


def config_files(version: str) -> dict[str, str]:
    """{path inside the wheel: YAML text} (cold path only: composing an unbundled variant)."""
    return _json_gz(f"{version}-configs.json.gz")


@lru_cache(maxsize=None)
def stamp(version: str) -> str:
    """Changes when a release's bundled data is rebuilt (the verl-lint version alone may not)."""
    st = (DATA_DIR / f"{version}-composed.json.gz").stat()
    return f"{st.st_size}-{int(st.st_mtime)}"

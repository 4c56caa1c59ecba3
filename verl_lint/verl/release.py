"""Which verl release a script is linted against, and that release's bundled knowledge.

CONTRACT (the engine relies on these names; the verl-knowledge work fills in the bodies):
- `VersionChoice(version, requested, source, supported)`;
- `choose_version(cli=None, config=None, script_text="")` applies DESIGN.md's order;
- `load_release(version) -> VerlRelease` (cached).
"""

from __future__ import annotations

from functools import lru_cache

from pydantic import BaseModel

from verl_lint.verl.versions import NEWEST, SUPPORTED_VERSIONS


class VersionChoice(BaseModel):
    version: str  # a bundled release, always
    requested: str | None = None  # what the user/script asked for, when it differs or is unknown
    source: str = "newest bundled"  # "--verl-version", "config", "installed verl", "script header"
    supported: bool = True  # False → VL003


class VerlRelease:
    def __init__(self, version: str) -> None:
        self.version = version


def choose_version(cli: str | None = None, config: str | None = None,
                   script_text: str = "") -> VersionChoice:
    requested = cli or config
    if requested is None:
        return VersionChoice(version=NEWEST)
    if requested in SUPPORTED_VERSIONS:
        return VersionChoice(version=requested, source="--verl-version" if cli else "config")
    return VersionChoice(version=NEWEST, requested=requested, supported=False,
                         source="--verl-version" if cli else "config")


@lru_cache(maxsize=None)
def load_release(version: str) -> VerlRelease:
    return VerlRelease(version)

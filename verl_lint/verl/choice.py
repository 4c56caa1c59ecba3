"""Which verl a script is judged against: `VersionChoice` and `choose_version` (DESIGN.md's order,
see `verl_lint.verl.sources`).

Apart from `verl_lint.verl.release` (the releases' knowledge, large to import) so that a run
answered from the result cache can choose — the choice is part of an entry's key — without
importing it.
"""

from __future__ import annotations

import os
import re
from dataclasses import replace
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from verl_lint.diagnostics import by_fields
from verl_lint.records import shared_dataclass
from verl_lint.verl import sources
from verl_lint.verl.versions import NEWEST, SUPPORTED_VERSIONS, parse_version


@shared_dataclass(frozen=True, slots=True)
class VersionChoice:
    """Which verl, and how it was chosen; shared (`_choice` makes one per request), so frozen."""

    __reduce__ = by_fields

    version: str  # a bundled release, always: its curated knowledge applies
    requested: str | None = None  # what the user/script asked for, when it differs or is unknown
    # how it was chosen: "--verl-version", "config", "verl-source", "workspace", "installed verl",
    # "script header", "REQUIRED_VERL.txt", "newest bundled"
    source: str = "newest bundled"
    supported: bool = True  # False → VL003
    kind: Literal["bundled", "workspace", "installed"] = "bundled"
    path: str | None = None  # the tree's root (the folder holding `verl/`) when not bundled
    tree_version: str | None = None  # the tree's own `verl/version/version`
    problem: str | None = None  # a configured verl source that could not be used (VL003)

    def describe(self) -> str:
        """One line for `show`, hover and messages: which verl, from where."""
        if self.kind == "bundled":
            return f"verl {self.version} (bundled, {self.source})"
        own = self.tree_version or "unknown version"
        return f"verl {own} from {self.kind} tree {self.path} ({self.source}; " \
               f"curated knowledge of verl {self.version})"

    def as_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "path": self.path,
                "version": self.tree_version if self.kind != "bundled" else self.version,
                "knowledge": self.version, "chosen_by": self.source}


_PIN = re.compile(r"\bverl\s*==\s*v?([0-9][0-9A-Za-z.+\-]*)")


def choose_version(cli: str | None = None, config: str | None = None, script_text: str = "",
                   verl_source: str | None = None,
                   workspace: "sources.Workspace | None" = None) -> VersionChoice:
    for requested, how in ((cli, "--verl-version"), (config, "config")):
        if requested:
            return _choice(requested.strip(), how)
    problem = None
    if verl_source:
        root = sources.tree_root(Path(os.path.expanduser(verl_source)))
        if root is not None:
            return _tree_choice(root, "workspace", "verl-source")
        problem = f"verl-source {verl_source} is not a verl tree (no verl/trainer/config/ in it)"
    if workspace is not None:
        root = sources.workspace_tree(workspace)
        if root is not None:
            return _with_problem(_tree_choice(root, "workspace", "workspace"), problem)
    root = sources.installed_tree()
    if root is not None:
        return _with_problem(_tree_choice(root, "installed", "installed verl"), problem)
    pins = [(sources.installed_verl_version(), "installed verl"), (header_pin(script_text), "script header")]
    if workspace is not None:
        req = sources.required_verl(workspace)
        pins.append((req[0] if req else None, "REQUIRED_VERL.txt"))
    for requested, how in pins:
        if requested:
            return _with_problem(_choice(requested.strip(), how), problem)
    return _with_problem(_choice(NEWEST, "newest bundled"), problem)


def _with_problem(choice: VersionChoice, problem: str | None) -> VersionChoice:
    return choice if problem is None else replace(choice, problem=problem)


@lru_cache(maxsize=64)  # one VersionChoice per request, shared by every file that makes it
def _choice(requested: str, source: str) -> VersionChoice:
    if requested in SUPPORTED_VERSIONS:
        return VersionChoice(version=requested, source=source)
    return VersionChoice(version=nearest_release(requested), requested=requested, source=source,
                         supported=False)


@lru_cache(maxsize=64)
def _tree_choice(root: Path, kind: str, source: str) -> VersionChoice:
    own = sources.tree_version_of(root)
    return VersionChoice(version=nearest_release(own) if own else NEWEST, source=source,
                         kind=kind, path=str(root), tree_version=own)


def nearest_release(requested: str) -> str:
    """The newest bundled release not after `requested` (the oldest if it predates them all)."""
    try:
        want = parse_version(requested)
    except ValueError:
        return NEWEST
    older = [v for v in SUPPORTED_VERSIONS if parse_version(v) <= want]
    return older[-1] if older else SUPPORTED_VERSIONS[0]


def header_pin(script_text: str) -> str | None:
    """`verl==X` in the comment block at the top of the script (after the shebang)."""
    where = header_pin_range(script_text)
    return None if where is None else script_text[where[0]:where[1]]


def header_pin_range(script_text: str) -> tuple[int, int] | None:
    """Character range of X in the header comments' `verl==X` (VL003 points at it)."""
    end = -1
    for _ in range(40):  # the first 40 lines, without splitting the whole script
        end = script_text.find("\n", end + 1)
        if end == -1:
            break
    head = script_text if end == -1 else script_text[:end + 1]
    if "==" not in head:  # no pin can match (most scripts): no need to split the lines
        return None
    pos = 0
    for line in head.splitlines(keepends=True)[:40]:
        stripped = line.strip()
        if stripped and not stripped.startswith("#"):
            break
        m = _PIN.search(line)
        if m:
            version = m.group(1).rstrip(".")
            return pos + m.start(1), pos + m.start(1) + len(version)
        pos += len(line)
    return None


# a line whose first byte after spaces and tabs is printable ASCII but `#`
_COMMAND_LINE = re.compile(rb"^[ \t]*[!-\"$-~]", re.M)


def header_text(data: bytes) -> str:
    """The part of a script's bytes its header pin is read from (`header_pin(header_text(b))
    == header_pin(b.decode())`), decoded: its first 40 lines, or "" when they hold no `==` —
    the common case, told without decoding the script."""
    first = data.find(b"==")
    if first == -1 or data.count(b"\n", 0, first) >= 40:
        return ""
    # a line up to it that starts with a command ends the header, as `str.strip` and
    # `str.splitlines` see it too: the `==` is past the header
    if _COMMAND_LINE.search(data, 0, first + 1):
        return ""
    end = -1
    for _ in range(40):
        end = data.find(b"\n", end + 1)
        if end == -1:
            break
    # a prefix ending at a newline decodes as the whole script's text begins
    return (data if end == -1 else data[:end + 1]).decode("utf-8", errors="replace")


def clear_caches() -> None:
    """Forget the verl trees read on disk (their `verl/version/version` may have changed)."""
    _tree_choice.cache_clear()

"""Which files `verl-lint check PATHS…` lints.

A directory is walked recursively (sorted, so output order is stable) for `*.sh` files and files
whose first line is a bash/sh shebang, skipping what `exclude` matches (the settings of the
closest configuration decide). A file named explicitly is always linted, unless
`force_exclude` (pre-commit passes every changed file explicitly).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Callable, Iterator

from verl_lint.settings import Settings

_SHEBANG = re.compile(rb"^#!\s*(?:/\S*/)?(?:env\s+(?:-\S+\s+)*)?(?:ba|da|k|z)?sh\b")


class DiscoveryError(Exception):
    """A path given on the command line does not exist."""


def is_shell_shebang(head: bytes) -> bool:
    """Whether text starting with `head` opens with a bash/sh shebang (the language server asks
    this of an open document)."""
    # a UTF-8 byte-order mark (an editor's doing) still marks the file as a shell script
    return bool(_SHEBANG.match(head.removeprefix(b"\xef\xbb\xbf")))


def has_shell_shebang(path: Path) -> bool:
    try:
        with path.open("rb") as f:
            head = f.read(128)
    except OSError:
        return False
    return is_shell_shebang(head)


def is_script(path: Path) -> bool:
    return path.suffix == ".sh" or (path.suffix == "" and has_shell_shebang(path))


def discover(paths: list[Path], settings_for: Callable[[Path], Settings], *,
             force_exclude: bool = False) -> list[Path]:
    """The files to lint, in command-line order then sorted within each directory, no repeats."""
    seen: set[Path] = set()
    out: list[Path] = []
    for given in paths:
        if not given.exists():
            raise DiscoveryError(f"{given}: no such file or directory")
        if force_exclude and settings_for(given).is_excluded(given):
            continue
        found = _walk(given, settings_for) if given.is_dir() else iter([given])
        for path in found:
            key = path.resolve()
            if key not in seen:
                seen.add(key)
                out.append(path)
    return out


def _walk(root: Path, settings_for: Callable[[Path], Settings]) -> Iterator[Path]:
    for dirpath, dirnames, filenames in os.walk(root):
        here = Path(dirpath)
        settings = settings_for(here)
        dirnames[:] = sorted(d for d in dirnames if not settings.is_excluded(here / d))
        for name in sorted(filenames):
            path = here / name
            if not settings.is_excluded(path) and is_script(path):
                yield path

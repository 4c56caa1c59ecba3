"""Which files `verl-lint check PATHS…` lints.

A directory is walked recursively (sorted, so output order is stable) for `*.sh` files and files
whose first line is a bash/sh shebang, skipping what `exclude` matches (the settings of the
closest configuration decide). A file named explicitly is always linted, unless
`force_exclude` (pre-commit passes every changed file explicitly).
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path
from typing import Callable, Iterator

from verl_lint.fileio import is_temp_name, read_bounded, real_path
from verl_lint.settings import Settings

# compiled when first used (by `re`): only a file without a `.sh` name is sniffed
_SHEBANG = rb"^#!\s*(?:/\S*/)?(?:env\s+(?:-\S+\s+)*)?(?:ba|da|k|z)?sh\b"


def display_name(path: os.PathLike | str) -> str:
    """How a path is shown in reports: a file name that is not UTF-8 (Python holds its bytes as
    lone surrogates, which no UTF-8 output can encode) shows each such byte as `\\xNN`."""
    text = os.fspath(path)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    return text


class DiscoveryError(Exception):
    """A path given on the command line does not exist."""


def is_shell_shebang(head: bytes) -> bool:
    """Whether text starting with `head` opens with a bash/sh shebang (the language server asks
    this of an open document)."""
    # a UTF-8 byte-order mark (an editor's doing) still marks the file as a shell script
    return bool(re.match(_SHEBANG, head.removeprefix(b"\xef\xbb\xbf")))


def has_shell_shebang(path: Path) -> bool:
    """Whether a regular file opens with a bash/sh shebang (anything else is never opened: a
    FIFO would block the sniff for ever)."""
    head, _ = read_bounded(path, 128, head=True)
    return head is not None and is_shell_shebang(head)


def is_script(path: Path) -> bool:
    return path.suffix == ".sh" or (path.suffix == "" and has_shell_shebang(path))


def discover(paths: list[Path], settings_for: Callable[[Path], Settings], *,
             force_exclude: bool = False, seen: set[str] | None = None) -> list[Path]:
    """The files to lint, in command-line order then sorted within each directory, no repeats
    (none of the resolved paths in `seen` either: it is updated, so calls can share it).

    Paths that cannot be linted are listed too, so that the engine reports why (exit 2) and the
    run goes on: a `*.sh` that is a FIFO, a device, a dangling link or a link loop, a folder
    that cannot be listed."""
    seen = set() if seen is None else seen
    out: list[Path] = []
    for given in paths:
        try:
            mode = os.lstat(given).st_mode
        except (OSError, ValueError):
            raise DiscoveryError(f"{display_name(given)}: no such file or directory") from None
        if force_exclude and settings_for(given).is_excluded(given):
            continue
        is_dir = stat.S_ISDIR(mode) or (stat.S_ISLNK(mode) and given.is_dir())
        found = _walk(given, settings_for) if is_dir else iter([given])
        for path in found:
            # never raises, even on a link loop
            key = real_path(path, is_link=stat.S_ISLNK(mode) if path is given else None)
            if key not in seen:
                seen.add(key)
                out.append(path)
    return out


def _walk(root: Path, settings_for: Callable[[Path], Settings]) -> Iterator[Path]:
    """Depth-first, sorted; links to folders are not followed (no loops), links to files are."""
    stack = [root]
    while stack:
        here = stack.pop()
        try:
            with os.scandir(here) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError:
            yield here  # unreadable: the engine says so
            continue
        settings = settings_for(here)
        folders = []
        for entry in entries:
            path = here / entry.name
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
            except OSError:
                is_dir = False
            if is_dir:
                if not settings.is_excluded(path):
                    folders.append(path)
            elif not is_temp_name(entry.name) and not settings.is_excluded(path) \
                    and _is_script_entry(entry, path):
                yield path
        stack.extend(reversed(folders))


def _is_script_entry(entry: os.DirEntry, path: Path) -> bool:
    try:
        if entry.is_dir():  # a link to a folder (not followed)
            return False
    except OSError:
        pass
    # a `*.sh` that is no regular file is reported (the engine says what it is), not skipped
    return path.suffix == ".sh" or (path.suffix == "" and has_shell_shebang(path))

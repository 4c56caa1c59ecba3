"""Reading and writing files safely: scripts and configuration files are read bounded, `--fix`
rewrites scripts, `--output` writes reports.

`read_bounded` opens nothing but a regular file and reads at most a size limit; `read_script`
reads a script (and `script_problem` says why some bytes cannot be linted as one).

`write_bytes` / `open_for_replace` build the new text in a temporary file next to the target and
move it into place with `os.replace`, so a reader (or a crash, or SIGKILL) sees the old file or the
new one, never half of one, and a failing render leaves the previous report intact.

A rename gives the path a new inode, which would silently change two things about the file: a
hard link elsewhere would keep the old text, and the file would belong to whoever ran verl-lint.
So the rename is used only when the new inode can be identical to the old one in what matters
(one link, same owner and group, same mode); otherwise the finished temporary file is copied into
the existing inode ("in place", as editors do), which keeps links, owner and group. The copy is
made from a complete, flushed temporary file, so it cannot be cut short by a failing render.

Temporary files are named `.<name>.<pid>.<random>.verl-lint`: the walker never lints them, and
a write removes those of the same target left behind by a process that no longer runs (SIGKILL).
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import stat
from functools import lru_cache
from pathlib import Path
from typing import IO, Iterator

from verl_lint.source import SourceText

TEMP_SUFFIX = ".verl-lint"
# compiled when first used (by `re`): a run over named files never walks a folder
_TEMP = r"^\.(?P<name>.+)\.(?P<pid>[0-9]+)\.[A-Za-z0-9_]+" + re.escape(TEMP_SUFFIX) + "$"


def is_temp_name(name: str) -> bool:
    """Whether a file name is one of our temporary files (the walker skips them)."""
    return re.match(_TEMP, name) is not None


def _pid_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # EPERM: it runs, as someone else
        return True
    return True


def clean_leftovers(directory: Path, name: str) -> None:
    """Remove temporary files for `directory/name` whose writer no longer runs."""
    try:
        entries = os.listdir(directory)
    except OSError:
        return
    for entry in entries:
        m = re.match(_TEMP, entry)
        if m and m.group("name") == name and not _pid_alive(int(m.group("pid"))):
            with contextlib.suppress(OSError):
                os.unlink(directory / entry)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _needs_in_place(target: Path, st: os.stat_result | None) -> bool:
    """Whether a rename would change what the file is: more links, or another owner/group."""
    if st is None:
        return False
    return st.st_nlink > 1 or (hasattr(os, "geteuid") and st.st_uid != os.geteuid())


def _copy_into(tmp: str, target: Path) -> None:
    """Copy the finished temporary file into the target's own inode."""
    try:
        regular = stat.S_ISREG(os.stat(target).st_mode)
    except FileNotFoundError:
        regular = False
    import shutil

    # "r+b" then truncate: the inode is never empty while the copy has not started
    with open(tmp, "rb") as src, open(target, "r+b" if regular else "wb") as dst:
        shutil.copyfileobj(src, dst)
        if regular:
            dst.truncate()
            dst.flush()
            os.fsync(dst.fileno())


@contextlib.contextmanager
def open_for_replace(path: str | os.PathLike, *, binary: bool = False,
                     encoding: str = "utf-8") -> Iterator[IO]:
    """A stream whose contents replace `path` when the block ends without an exception; on an
    exception `path` is untouched and the temporary file is gone. A symlink stays a symlink
    (its target is written)."""
    try:
        st: os.stat_result | None = os.stat(path)
    except FileNotFoundError:
        st = None
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise IsADirectoryError(21, "Is a directory", os.fspath(path))
    if st is not None and not stat.S_ISREG(st.st_mode):
        # `-o /dev/stdout`, a FIFO: nothing to replace; still written only once complete
        yield from _to_stream(path, binary, encoding)
        return
    import tempfile  # writing only: a run answered from the result cache writes nothing

    target = Path(os.path.realpath(path))
    clean_leftovers(target.parent, target.name)
    in_place = _needs_in_place(target, st)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.{os.getpid()}.", suffix=TEMP_SUFFIX,
                                   dir=target.parent)
    except PermissionError:
        # a folder the user cannot write but a file they can: write the file in place
        if st is None or not os.access(target, os.W_OK):
            raise PermissionError(13, "Permission denied", os.fspath(path)) from None
        fd, tmp = tempfile.mkstemp(prefix=f"verl-lint.{os.getpid()}.", suffix=TEMP_SUFFIX)
        in_place = True
    try:
        raw = os.fdopen(fd, "wb")
        with raw:
            if binary:
                yield raw
            else:
                text = io.TextIOWrapper(raw, encoding=encoding, newline="", write_through=True)
                yield text
                text.flush()
                text.detach()
            raw.flush()
            os.fsync(raw.fileno())
        if in_place:
            _copy_into(tmp, target)
        else:
            mode = stat.S_IMODE(st.st_mode) if st is not None else 0o666 & ~_umask()
            os.chmod(tmp, mode)
            if st is not None and st.st_gid != os.stat(tmp).st_gid:
                try:  # the owner may give it any group they are in; else keep the inode
                    os.chown(tmp, -1, st.st_gid)
                except OSError:
                    _copy_into(tmp, target)
                    return
            os.replace(tmp, target)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


def _to_stream(path: str | os.PathLike, binary: bool, encoding: str) -> Iterator[IO]:
    buffer = io.BytesIO() if binary else io.StringIO(newline="")
    yield buffer
    data = buffer.getvalue()
    with open(path, "wb") as out:
        out.write(data if binary else data.encode(encoding))


def write_bytes(path: str | os.PathLike, data: bytes) -> None:
    """Replace the contents of `path` with `data` (see the module docstring)."""
    with open_for_replace(path, binary=True) as fh:
        fh.write(data)


def real_path(path: str | os.PathLike, *, is_link: bool | None = None) -> str:
    """`os.path.realpath(path)` (never raises, even on a link loop) with the folder's part
    resolved once for all its files: a name that is no symlink resolves to its resolved folder
    plus the name — one `lstat` instead of one per path component (none when the caller
    knows `is_link`)."""
    text = os.fspath(path)
    head, name = os.path.split(text)
    if is_link is None:
        is_link = os.path.islink(text)
    if name in ("", ".", "..") or is_link:
        return os.path.realpath(text)
    # joined, not `abspath`: that would drop `link/..` by its text, where the link's target's
    # parent is meant (`real_folder` resolves a `..` with the links before it)
    return os.path.join(real_folder(os.path.join(os.getcwd(), head)), name)


@lru_cache(maxsize=4096)
def real_folder(folder: str) -> str:
    """`os.path.realpath(folder)`, once per folder (`verl_lint.settings.clear_caches` forgets),
    built on its parent's as `real_path` builds a file's: the folders of a run share theirs."""
    head, name = os.path.split(folder)
    if not head or name in ("", ".", "..") or os.path.islink(folder):
        return os.path.realpath(folder)
    return os.path.join(real_folder(head), name)


MAX_BYTES = 1 << 20  # launch scripts are kilobytes; a parse of 8 MB needs ~1 GB


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


def read_bounded(path: Path, limit: int = MAX_BYTES, *,
                 head: bool = False) -> tuple[bytes | None, str | None]:
    """(bytes, None) for a regular file of at most `limit` bytes, else (None, why not); with
    `head`, the first `limit` bytes of any regular file (the shebang sniff).

    Nothing but a regular file is opened (a FIFO would block for ever, `/dev/zero` never ends,
    a tape device rewinds), and at most `limit + 1` bytes are read whatever the size claims."""
    want = limit if head else limit + 1  # one byte more tells a file is too large
    try:
        st = os.stat(path)
        if stat.S_ISDIR(st.st_mode):
            return None, _folder_problem(path)
        if not stat.S_ISREG(st.st_mode):
            return None, f"{_kind(st.st_mode)}, not a regular file; not linted"
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)
                     | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        return None, f"cannot read: {exc.strerror or exc}"
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):  # swapped since the stat
            return None, "not a regular file; not linted"
        chunks, size = [], 0
        while size < want:
            # the size the file claims, + 1 to see its end (it may grow while read)
            chunk = os.read(fd, min(want - size, max(st.st_size + 1 - size, 1 << 16)))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as exc:
        return None, f"cannot read: {exc.strerror or exc}"
    finally:
        os.close(fd)
    if size > limit:
        return None, f"larger than {limit // (1 << 20)} MiB; not linted"
    return b"".join(chunks), None


def _folder_problem(path: Path) -> str:
    # the walker hands over a folder it could not list, so the user hears of it (exit 2)
    try:
        with os.scandir(path):
            return "is a directory"
    except OSError as exc:
        return f"cannot read folder: {exc.strerror or exc}; scripts in it were not linted"


def script_problem(data: bytes) -> str | None:
    """Why these bytes cannot be linted as a script (too large, binary, not UTF-8), or None."""
    if len(data) > MAX_BYTES:
        return f"larger than {MAX_BYTES >> 20} MiB; not linted"
    if b"\0" in data:
        return "binary file (contains NUL bytes); not linted"
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line, col = SourceText(data).position(exc.start)
        return (f"not valid UTF-8 (byte 0x{data[exc.start]:02x} at line {line}, column {col}); "
                "verl-lint reads scripts as UTF-8")
    return None


def read_script(path: Path) -> tuple[SourceText | None, str | None]:
    """(source, None) or (None, why it cannot be linted)."""
    data, problem = read_bounded(path)
    if data is not None:
        problem = script_problem(data)
    if problem is not None:
        return None, problem
    return SourceText(data, str(path)), None

"""On-disk cache for composed configs and Hydra parses (safe under concurrent pre-commit runs).

Layout: `<user cache dir>/verl-lint/<verl-lint version>/<namespace>/<digest of key>.pickle`.
Writes go to a temporary file in the same directory and are moved into place with
`os.replace`, which is atomic: readers see the old file, the new one, or none — never half.
Two processes computing the same entry both write the same content; the last rename wins.
`VERL_LINT_CACHE_DIR` overrides the location; `VERL_LINT_NO_CACHE=1` disables the disk cache.
"""

from __future__ import annotations

import os
import pickle
from functools import lru_cache
from pathlib import Path
from typing import Any

from verl_lint.digest import blake2b, hexdigest

_MISS = object()


@lru_cache(maxsize=1)
def cache_root() -> Path | None:
    if os.environ.get("VERL_LINT_NO_CACHE"):
        return None
    from verl_lint import __version__

    base = os.environ.get("VERL_LINT_CACHE_DIR")
    if not base:
        from platformdirs import user_cache_dir

        base = user_cache_dir("verl-lint", appauthor=False)
    return Path(base) / str(__version__)


def _file(namespace: str, key: str) -> str | None:
    # a string: a run answered from the result cache reads one entry per file it lints
    root = cache_root()
    if root is None:
        return None
    return os.path.join(root, namespace, hexdigest(key.encode()) + ".pickle")


def load(namespace: str, key: str) -> Any:
    """The cached value, or `MISS`. A corrupt or unreadable entry counts as a miss."""
    path = _file(namespace, key)
    if path is None:
        return _MISS
    try:
        # read whole with the os calls (no file object): an entry is replaced, never grown
        fd = os.open(path, os.O_RDONLY)
        try:
            data = os.read(fd, os.fstat(fd).st_size + 1)
        finally:
            os.close(fd)
        stored_key, value = pickle.loads(data)
    except (OSError, pickle.PickleError, EOFError, ValueError, TypeError, AttributeError):
        return _MISS
    return value if stored_key == key else _MISS


def store(namespace: str, key: str, value: Any, *, bounded: bool = True) -> None:
    """Keep `value` under `key`; `bounded`: the namespace is held to MAX_ENTRIES here (the
    result cache bounds its own, larger, once a run)."""
    # os calls on strings: a cold run stores an entry per file it lints (file objects and
    # paths made a fifth of the ≈ 0.4 ms an entry cost)
    file = _file(namespace, key)
    if file is None:
        return
    folder = os.path.dirname(file)
    data = pickle.dumps((key, value), protocol=pickle.HIGHEST_PROTOCOL)
    try:
        try:
            fd, tmp = _new_temporary(folder)
        except FileNotFoundError:  # the namespace's first entry, or a cleaned cache
            os.makedirs(folder, exist_ok=True)
            fd, tmp = _new_temporary(folder)
        try:
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view):]
            finally:
                os.close(fd)
            os.replace(tmp, file)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
        if bounded:
            _bound(folder)
    except OSError:
        pass  # a read-only or full cache dir only costs speed


_temporaries = 0  # made by this process: with its pid, the next one's name
_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)  # Windows: no \r\n


def _new_temporary(folder: str) -> tuple[int, str]:
    """A new file in `folder`, created with O_EXCL (never another process's), as
    `tempfile.mkstemp` makes one: importing tempfile (random, shutil, bisect) cost ≈ 3 ms of
    the first write of every run, a store in each worker."""
    global _temporaries
    for _ in range(100):
        _temporaries += 1
        name = os.path.join(folder, f".tmp-{os.getpid()}-{_temporaries}.pickle")
        try:
            return os.open(name, _CREATE, 0o600), name
        except FileExistsError:  # left by a killed process that had this pid
            continue
    raise FileExistsError(17, "no free temporary name", folder)


MAX_ENTRIES = 4096  # per namespace: a script corpus with many distinct words must not fill the disk
_stores = 0


def _bound(directory: str) -> None:
    """Every 64th store in a process (and the first): if the namespace holds more than
    MAX_ENTRIES entries, remove the oldest written down to three quarters of it (their times
    are read only then: a stat an entry was most of a store's cost in a large cache)."""
    global _stores
    _stores += 1
    if _stores % 64 != 1:
        return
    with os.scandir(directory) as it:
        entries = [e for e in it if e.name.endswith(".pickle") and not e.name.startswith(".tmp-")]
    if len(entries) <= MAX_ENTRIES:
        return
    dated = []
    for e in entries:
        try:
            dated.append((e.stat().st_mtime, e.path))
        except OSError:
            pass
    dated.sort()
    for _, old in dated[:len(dated) - MAX_ENTRIES * 3 // 4]:
        try:
            os.unlink(old)
        except OSError:
            pass  # another process evicted it first


def materialize(namespace: str, key: str, files: dict[str, str]) -> Path:
    """Write `files` ({relative path: text}) once under the cache (or a temp dir) and return it."""
    import tempfile

    root = cache_root()
    base = (root / namespace) if root is not None else Path(tempfile.gettempdir()) / "verl-lint"
    target = base / hexdigest(key.encode())
    if (target / ".complete").exists():
        return target
    base.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=base, prefix=".tmp-"))
    for rel, text in files.items():
        (tmp / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp / rel).write_text(text)
    (tmp / ".complete").write_text(key)
    try:
        os.replace(tmp, target)  # atomic; fails if another process got there first
    except OSError:
        import shutil

        shutil.rmtree(tmp, ignore_errors=True)
    return target


MISS = _MISS


def code_id(*paths: Path) -> str:
    """A short content hash of the code a cached value is computed by: a development checkout
    keeps its version number while that code changes, and what it made before must not be
    reused (the cache's own folder is per version only)."""
    h = blake2b(digest_size=20)
    for p in paths:
        h.update(p.read_bytes())
    return h.hexdigest()[:12]

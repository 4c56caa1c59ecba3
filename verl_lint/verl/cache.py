"""On-disk cache for composed configs and Hydra parses (safe under concurrent pre-commit runs).

Layout: `<user cache dir>/verl-lint/<verl-lint version>/<namespace>/<digest of key>.pickle`.
Writes go to a temporary file in the same directory and are moved into place with
`os.replace`, which is atomic: readers see the old file, the new one, or none — never half.
Two processes computing the same entry both write the same content; the last rename wins.
The result cache writes many entries as one file linked under each name (`store_pack`).
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


def store(namespace: str, key: str, value: Any) -> None:
    """Keep `value` under `key`, the namespace held to MAX_ENTRIES (the result cache's packs,
    `store_pack`, are bounded by the result cache itself, once a run)."""
    # os calls on strings: a cold run stores an entry per file it lints (file objects and
    # paths made a fifth of the ≈ 0.4 ms an entry cost)
    file = _file(namespace, key)
    if file is None:
        return
    folder = os.path.dirname(file)
    try:
        _write_in_place_of(file, pickle.dumps((key, value), protocol=pickle.HIGHEST_PROTOCOL))
        _bound(folder)
    except OSError:
        pass  # a read-only or full cache dir only costs speed


def _write_in_place_of(file: str, data: bytes) -> None:
    """Write `data` to a new temporary file beside `file`, then move it over `file`."""
    tmp = _write_temporary(os.path.dirname(file), data)
    try:
        os.replace(tmp, file)
    except BaseException:
        _unlink(tmp)
        raise


def _write_temporary(folder: str, data: bytes) -> str:
    """A new file in `folder` (made if missing) holding `data`; its name."""
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
    except BaseException:
        _unlink(tmp)
        raise
    return tmp


def _unlink(name: str) -> None:
    try:
        os.unlink(name)
    except OSError:
        pass


def store_pack(namespace: str, entries: dict[str, bytes]) -> None:
    """Keep many entries (key -> the pickled value) as one file, named under every key by a
    hard link: making a file costs this file system ≈ 0.15–0.3 ms (its inode), a link a tenth
    of it, and the cold run of 182 scripts stores 182 entries. An entry's name now leads to
    the file of its pack, replaced as a whole (never written in place); the file goes when its
    last name does. Where there are no hard links (FAT, some network shares), each entry is a
    file of its own. Read with `load_packed`."""
    names = [(key, _file(namespace, key)) for key in entries]
    if not names or names[0][1] is None:
        return
    try:
        pack = _write_temporary(os.path.dirname(names[0][1]),
                                pickle.dumps(entries, protocol=pickle.HIGHEST_PROTOCOL))
    except OSError:
        return  # a read-only or full cache dir only costs speed
    try:
        for key, file in names:
            try:
                _link(pack, file)
            except OSError:
                _write_in_place_of(file, pickle.dumps({key: entries[key]},
                                                      protocol=pickle.HIGHEST_PROTOCOL))
    except OSError:
        pass
    finally:
        _unlink(pack)


def _link(pack: str, file: str) -> None:
    """Name `pack` `file` too, in place of what `file` was (for a moment, a reader finds no
    entry there: a miss)."""
    try:
        os.link(pack, file)
    except FileExistsError:
        _unlink(file)
        try:
            os.link(pack, file)
        except FileExistsError:  # another run stored it at the same moment: as good as ours
            pass


def load_packed(namespace: str, key: str, packs: dict) -> Any:
    """The value `store_pack` stored under `key`, or `MISS`; `packs` keeps the packs read so
    far (a run reads each once however many of its entries it needs)."""
    path = _file(namespace, key)
    if path is None:
        return _MISS
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_BINARY", 0))
        try:
            st = os.fstat(fd)
            # a pack is never changed in place: its inode, size and time name its contents
            ident = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
            pack = packs.get(ident)
            if pack is None:
                pack = pickle.loads(os.read(fd, st.st_size + 1))
                pack = packs[ident] = pack if isinstance(pack, dict) else {}
        finally:
            os.close(fd)
        data = pack.get(key)
        return _MISS if data is None else pickle.loads(data)
    except (OSError, pickle.PickleError, EOFError, ValueError, TypeError, AttributeError,
            KeyError, IndexError):
        return _MISS


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

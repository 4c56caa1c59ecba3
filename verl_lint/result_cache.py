"""The result cache: a re-run over unchanged files prints what the last run found (as ruff's).

One entry per linted file and configuration, under `<cache dir>/<version>/results/`. The
entries a process stores in a run are written as one pack file, named under each entry's name
by a hard link (`verl_lint.verl.cache.store_pack`: one new file per process instead of one per
script); names are replaced atomically, so concurrent runs are safe: a reader sees an old
entry, a new one or none. The entry's *slot* is named by everything a file's findings
depend on besides its bytes — the path it is shown as and its absolute path, the resolved
settings (with the contents of `extend-rules` folders), verl-lint's own code and bundled data
(`code_stamp`) and the verl the launches are judged against (`verl_key`). The entry holds the
digest (BLAKE2b) of the bytes it was made from: an edited file is a miss, and its new result replaces the
old one in the same slot, so the cache grows with files × configurations, not with edits;
`MAX_ENTRIES` bounds it anyway. Files of the workspace a result depends on (where an entry
module was looked for: `dependencies`) are stored with their size and time, and checked. A file
that ran out of time, could not be read, or read a config folder from disk is linted again
next time.

`--no-cache` or `VERL_LINT_NO_CACHE=1` turn it off; `verl-lint clean` empties it.
"""

from __future__ import annotations

import os
import pickle
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Iterable, NamedTuple

from verl_lint.digest import blake2b, hexdigest
from verl_lint.verl import cache as disk

if TYPE_CHECKING:
    from verl_lint.diagnostics import FileReport
    from verl_lint.evaluate.model import Launch
    from verl_lint.settings import Settings
    from verl_lint.source import SourceText
    from verl_lint.verl.analysis import LaunchAnalysis
    from verl_lint.verl.choice import VersionChoice

import contextvars

NAMESPACE = "results"
COLD_AFTER = 8  # a run whose first files all missed is cold: `engine.lint_paths` asks the rest
# paths of the workspace that rules looked at while linting the current file (`consulted`)
_CONSULTED: contextvars.ContextVar[list[str]] = contextvars.ContextVar("consulted")
MAX_ENTRIES = 20_000  # ≈ 40 MB at the ≈ 2 KB an entry of a verl script takes
PACK_ENTRIES = 128  # per pack file: a run answering one file reads its pack whole (≤ ≈ 1 MB)
_PACKAGE = Path(__file__).resolve().parent


def enabled() -> bool:
    return not os.environ.get("VERL_LINT_NO_CACHE")


def _tree_stamp(root: Path, *, suffixes: tuple[str, ...] | None = None) -> str:
    """Names, sizes and modification times of the files under `root` (symlinks followed, as
    the built-in rules folder is one): any edit, install or upgrade changes it."""
    h = blake2b(digest_size=20)
    for folder, dirs, files in os.walk(root, followlinks=True):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(files):
            if suffixes is not None and not name.endswith(suffixes):
                continue
            try:
                st = os.stat(os.path.join(folder, name))
            except OSError:
                continue
            h.update(f"{folder[len(str(root)):]}/{name}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return h.hexdigest()


@lru_cache(maxsize=1)
def code_stamp() -> str:
    """verl-lint's version and its code, rules and bundled data (a development checkout keeps
    its version number while its code changes)."""
    from verl_lint import __version__

    return f"{__version__}:{_tree_stamp(_PACKAGE, suffixes=('.py', '.json', '.gz', '.yaml', '.yml'))}"


_TREE_STAMPS: dict[str, str] = {}  # one walk of a verl tree on disk per run (`ResultCache`)


def verl_key(choice: "VersionChoice | None") -> str:
    """The verl a file's launches are judged against (`Settings.choose_verl_version`): a bundled
    release (its data is in `code_stamp`), or a verl tree on disk — the installed one, a
    vendored workspace copy, `verl-source` — by the names, sizes and times of its files."""
    if choice is None:
        return "none"
    key = repr(choice)
    if choice.path:
        stamp = _TREE_STAMPS.get(choice.path)
        if stamp is None:
            stamp = _TREE_STAMPS[choice.path] = _tree_stamp(Path(choice.path) / "verl",
                                                            suffixes=(".py", ".yaml", "version"))
        key += stamp
    return key


def dependencies(analyses: "list[tuple[Launch, LaunchAnalysis | None]]",
                 choice: "VersionChoice | None", consulted: list[str]) -> tuple[str, ...] | None:
    """The workspace files a file's findings depend on besides the script, its settings and
    the chosen verl: what the rules and the entry-point lookup `consulted` (found or not).
    None when they
    cannot be listed — a `--config-dir`, a `--config-path` the shell anchors
    (`$(dirname "$0")/…`), a config folder on disk outside the chosen verl tree: such a file
    is linted again every run. (A literal `--config-path` inside verl reads nothing.)"""
    out: list[str] = list(consulted)
    tree = choice.path if choice is not None else None
    for launch, analysis in analyses:
        if analysis is None or launch.config_dirs or \
                (launch.config_path is not None and not isinstance(launch.config_path, str)):
            return None
        entry = analysis.entry_point
        # the places an entry module was looked for are among `consulted` (verl.entry probes)
        if entry is not None and not all(not os.path.isabs(f) or (tree is not None and _inside(f, tree))
                     for f in (entry.config_dir, *entry.search)):
            return None
    return tuple(dict.fromkeys(out))


def _probe(paths: tuple[str, ...]) -> tuple:
    return tuple(_stat(p) for p in paths)


def _stat(path: str) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size


def _inside(folder: str, root: str) -> bool:
    return os.path.commonpath([os.path.abspath(folder), os.path.abspath(root)]) == \
        os.path.abspath(root)


def start_recording() -> list[str]:
    """A fresh list for the paths `consulted` during the file the engine starts linting."""
    paths: list[str] = []
    _CONSULTED.set(paths)
    return paths


def consulted(path: "str | os.PathLike[str]") -> None:
    """A rule that looks at the workspace (does the file a config names exist? what does it
    define?) says which path: the result cache stores its size and time with the findings and
    lints the script again when they change."""
    paths = _CONSULTED.get(None)
    if paths is not None:
        paths.append(os.fspath(path))


def _runtime_rules() -> str:
    """Rules registered at run time from outside verl-lint (a test's or a plugin's): their code
    is not in `code_stamp`. The built-in ones need not be loaded to know this."""
    from verl_lint.rules import registry

    outside = sorted(f"{code}={cls.__module__}.{cls.__qualname__}"
                     for code, cls in registry._RULES.items()
                     if not cls.__module__.startswith("verl_lint."))
    return ",".join(outside)


def _settings_print(settings: "Settings") -> str:
    extend = ";".join(f"{p}:{_tree_stamp(Path(p), suffixes=('.yaml', '.yml'))}"
                      for p in settings.extend_rules)
    return f"{settings!r}|extend={extend}"  # every field, where they came from included


class ResultCache:
    """One run's view of the cache (settings fingerprints are worked out once per Settings)."""

    def __init__(self) -> None:
        _TREE_STAMPS.clear()  # a `--watch` pass sees a changed tree
        self._prints: dict[tuple, tuple["Settings", str]] = {}
        self._choices: dict[tuple, tuple["Settings", "VersionChoice"]] = {}
        self._unlinted: dict[Path, "SourceText"] = {}  # their scripts, until linted
        self._cwd = os.getcwd()  # a run's (a `--watch` pass makes a new ResultCache)
        self._rules: str | None = None
        # reports `engine.lint_paths` had from the cache (looked up here or in a worker), and
        # stored by this run's linting (here or in a worker): `answered`
        self.hits = 0
        self.stored = 0
        self._pruned_at = 0  # `stored` when the cache was last pruned
        self._packs: dict = {}  # read by this run (`disk.load_packed`)
        self._unwritten: dict[str, bytes] = {}  # entries stored by this process, not yet written
        self._unwritten_by = os.getpid()  # whose they are (`_own_unwritten`)

    def _choice(self, settings: "Settings", source: "SourceText",
                display: str) -> "VersionChoice":
        """`settings.choose_verl_version(source.text, display)`, once per folder: the choice
        reads the script only for its header pin (`verl==X`, in `header_text`: most scripts
        are not decoded), and the rest depends on where the script sits (the folder's
        workspace)."""
        from verl_lint.verl.choice import header_pin, header_text

        # a configured or given verl version decides alone (DESIGN.md's order)
        head = "" if settings.verl_version else header_text(source.data)
        key = (id(settings), None, None) if settings.verl_version else \
            (id(settings), os.path.dirname(display), header_pin(head) if head else None)
        entry = self._choices.get(key)
        if entry is None or entry[0] is not settings:
            choice = settings.choose_verl_version(head, display)
            entry = self._choices[key] = (settings, choice)
        return entry[1]

    def _slot(self, path: Path, display: str, settings: "Settings",
              choice: "VersionChoice | None") -> str:
        entry = self._prints.get((id(settings), choice))
        if entry is None or entry[0] is not settings:
            if self._rules is None:
                self._rules = _runtime_rules()
            verl = verl_key(choice)  # type: ignore[arg-type]
            # what the files under these settings and this verl share, as one digest: a
            # short key per file is quicker to name, read and compare
            common = f"{code_stamp()}\0{verl}\0{self._rules}\0{_settings_print(settings)}"
            entry = self._prints[(id(settings), choice)] = \
                (settings, hexdigest(common.encode()))
        # the working directory: per-file-ignores without a config file, `$(pwd)` and the
        # relative paths a launch names are relative to it
        cwd = self._cwd
        return f"{entry[1]}\0{display}\0{os.path.normpath(os.path.join(cwd, path))}\0{cwd}"

    def load(self, path: Path, settings: "Settings", display: str) -> "FileReport | None":
        """The stored report for this file as it is now, or None: lint it (from the script
        `pending` hands on)."""
        from verl_lint.diagnostics import FileReport
        from verl_lint.fileio import read_bounded
        from verl_lint.source import SourceText

        if path in self._unlinted:  # missed already, and not linted yet: read once
            return None
        data, _ = read_bounded(path)
        if data is None:
            return None  # linting reads it and says why
        source = SourceText(data, str(path))
        try:  # as `lint_source` chooses it (a broken choice is the linting's to report)
            choice = self._choice(settings, source, display)
        except Exception:  # noqa: BLE001
            return self._miss(path, source)
        slot = self._slot(path, display, settings, choice)
        found = disk.load_packed(NAMESPACE, slot, self._packs)
        # an entry is made from bytes that were linted: equal bytes need no check that they
        # are a script (valid UTF-8, no NUL)
        if found is disk.MISS or found[0] != hexdigest(data) or _probe(found[3]) != found[4]:
            return self._miss(path, source, EntryWriter(slot, choice, self))
        _, diagnostics, error, _, _, json_entry, json_texts = found
        # the verl it was judged against is `choice`: the slot is named by it
        return FileReport(path=display, diagnostics=diagnostics, version=choice, error=error,
                          source=source, json_entry=json_entry, json_texts=json_texts)

    def look_up(self, files: "Iterable[tuple[Path, Settings, str]]", *,
                defer: bool) -> list["FileReport | None"]:
        """`load` of each (path, settings, display) in order. With `defer` (a run that forks
        workers), a run whose first `COLD_AFTER` files all missed is cold: the lookup stops
        there, and the rest are left to the processes that lint them (each lookup reads and
        hashes a file, ≈ 60 µs on the serial start); the list is then shorter than `files`."""
        found: list["FileReport | None"] = []
        for path, settings, display in files:
            if defer and len(found) == COLD_AFTER and not any(found):
                break
            found.append(self.load(path, settings, display))
        return found

    def _miss(self, path: Path, source: "SourceText",
              writer: "EntryWriter | None" = None) -> None:
        from verl_lint.fileio import script_problem

        if script_problem(source.data) is None:  # else linting reads it and says why
            self._unlinted[path] = Pending(source, writer)

    def pending(self, path: Path, *, keep: bool = False) -> "Pending":
        """The script `load` read for a file it did not find, and where its result goes (once,
        unless `keep`): linting it need not read it again, and the entry it stores is made
        from the bytes that were looked up."""
        found = self._unlinted.get(path) if keep else self._unlinted.pop(path, None)
        return found if found is not None else Pending(None, None)

    def answered(self, report: "FileReport", *, hit: bool) -> None:
        """A report of this run, here or in a worker: found in the cache (`hit`), else linted
        (and stored if its writer stored it)."""
        if hit:
            self.hits += 1
        elif report.json_entry is not None:
            self.stored += 1

    def keep(self, slot: str, value: tuple) -> None:
        """Store an entry: with the others this process stores, written as one pack
        (`disk.store_pack`) every `PACK_ENTRIES` and by `write`."""
        unwritten = self._own_unwritten()
        unwritten[slot] = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
        if len(unwritten) >= PACK_ENTRIES:
            self.write()

    def write(self) -> None:
        """Write the entries this process stored and has not written yet (a worker calls it
        before it ends, the run in `finish`)."""
        unwritten = self._own_unwritten()
        if unwritten:
            disk.store_pack(NAMESPACE, unwritten)
        self._unwritten = {}

    def _own_unwritten(self) -> dict[str, bytes]:
        """The entries this process stored and has not written: a forked worker starts with
        none (its parent's are the parent's to write)."""
        if self._unwritten_by != os.getpid():
            self._unwritten, self._unwritten_by = {}, os.getpid()
        return self._unwritten

    def finish(self) -> None:
        """Write this process's entries, and keep the cache bounded: only entries written since
        the last call can have grown it (a streamed run calls this once per batch of files)."""
        self.write()
        if self.stored > self._pruned_at:
            self._pruned_at = self.stored
            prune(MAX_ENTRIES)


class Pending(NamedTuple):
    """A file the cache missed: its script as looked up, and the writer of its entry (None:
    not storable, e.g. its verl could not be chosen)."""

    source: "SourceText | None"
    writer: "EntryWriter | None"


class EntryWriter(NamedTuple):
    """Where one file's result is stored: the slot `ResultCache.load` looked it up in, named by
    the verl `choice` it made. Sent with the file to the process that lints it, so that each
    worker stores its own share (rendering an entry costs ≈ 0.1 ms per file), written as the
    worker's pack before it ends."""

    slot: str
    choice: "VersionChoice | None"
    cache: ResultCache  # the run's, in the process that lints the file (a worker's copy there)

    def store(self, report: "FileReport") -> bool:
        """Store `report` (with the `json` format's texts, which it then carries: this run's
        renderer uses them too, and a cached run need not work out their lines and columns nor
        encode them). A crashing rule crashes again on the same input (and keeps the others'
        findings), but running out of time depends on the machine's load: not stored; nor a
        report judged against another verl than the lookup's (a lookup would never find it)."""
        deps = report.depends_on
        if report.source is None or deps is None or report.version != self.choice or \
                (report.error and "time budget" in report.error):
            return False
        from verl_lint.report.json import diagnostic_texts, file_text

        report.json_entry, report.json_texts = file_text(report), diagnostic_texts(report)
        self.cache.keep(self.slot, (hexdigest(report.source.data), report.diagnostics,
                                    report.error, deps, _probe(deps), report.json_entry,
                                    report.json_texts))
        return True


def _results_dir() -> Path | None:
    root = disk.cache_root()
    return None if root is None else root / NAMESPACE


def prune(limit: int) -> int:
    """Delete the oldest entries beyond `limit` (down to 90% of it); returns how many."""
    folder = _results_dir()
    if folder is None:
        return 0
    try:
        entries = [e for e in os.scandir(folder) if e.name.endswith(".pickle")]
    except OSError:
        return 0
    if len(entries) <= limit:
        return 0

    def mtime(entry: os.DirEntry) -> float:
        try:
            return entry.stat().st_mtime
        except OSError:
            return 0.0

    entries.sort(key=mtime)
    removed = 0
    for entry in entries[:len(entries) - int(limit * 0.9)]:
        try:
            os.unlink(entry.path)
            removed += 1
        except OSError:
            pass  # another run removed or replaced it
    return removed


def clean() -> list[Path]:
    """Delete every cache verl-lint made (results and verl configs, all versions) in the cache
    directory; returns the folders removed. Only version-named folders are touched: the
    directory itself may be one the user chose (`VERL_LINT_CACHE_DIR`) and holds other things."""
    import re
    import shutil

    root = disk.cache_root()
    if root is None:
        return []
    base = root.parent
    removed = []
    try:
        children = list(base.iterdir())
    except OSError:
        return []
    for child in children:
        if child.is_dir() and not child.is_symlink() and re.fullmatch(r"\d+\.\d+[\w.+-]*", child.name):
            shutil.rmtree(child, ignore_errors=True)
            removed.append(child)
    return removed

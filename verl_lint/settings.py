"""Settings: `[tool.verl-lint]` in pyproject.toml or `.verl-lint.toml`, merged with the CLI.

The configuration file closest to the linted file wins (no merging between files); values given
on the command line override it. Keys are kebab-case in TOML (`fail-on`) and snake_case in Python
(`fail_on`). Pins from `set = {VAR = "value"}` / `--set VAR=VALUE` are the `pins` field.

Rule selectors (`select`, `extend-select`, `ignore`, `per-file-ignores`, `severity` keys) accept a
code (`VL201`), a prefix (`VL2`), a rule name (`unknown-override-key`) or `ALL`. The enabled set
is `(select ∪ extend-select) − ignore − per-file-ignores matching the file`.
"""

from __future__ import annotations

import fnmatch
import os
import re
import stat
import sys
from dataclasses import field, fields, replace
from functools import lru_cache
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any, Callable, Iterable

from verl_lint.diagnostics import Severity
from verl_lint.fileio import read_bounded, real_folder, real_path
from verl_lint.records import shared_dataclass

if TYPE_CHECKING:
    from verl_lint.verl.choice import VersionChoice
    from verl_lint.verl.sources import Workspace

CONFIG_FILES = (".verl-lint.toml", "pyproject.toml")  # same directory: the first one wins
DEFAULT_EXCLUDE = (
    ".git", ".hg", ".svn", ".venv", "venv", ".tox", ".nox", "node_modules", "__pycache__",
    "build", "dist", "site-packages",
)


class SettingsError(Exception):
    """A configuration problem the user must fix (exit code 2)."""


class UnreadableConfig(SettingsError):
    """A configuration file that is there but cannot be read (a link loop, a dangling link, a
    FIFO): the files it governs cannot be linted as meant; `check` reports each of them and
    lints the others."""


def _kebab(name: str) -> str:
    return "set" if name == "pins" else name.replace("_", "-")


@shared_dataclass(frozen=True)
class Settings:
    """Resolved settings. A plain dataclass: a configuration table or command-line values are
    validated by `_schema()` (pydantic, imported only then), so a run without a configuration
    file — or one answered from the result cache — never imports pydantic."""

    select: tuple[str, ...] = ("ALL",)
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    per_file_ignores: dict[str, tuple[str, ...]] = field(default_factory=dict)
    severity: dict[str, Severity] = field(default_factory=dict)
    fail_on: Severity = Severity.WARNING
    exclude: tuple[str, ...] = DEFAULT_EXCLUDE
    verl_version: str | None = None
    verl_source: str | None = None  # a verl tree on disk to judge scripts against
    device: str | None = None
    pins: dict[str, str] = field(default_factory=dict)
    known_env: tuple[str, ...] = ()
    extend_rules: tuple[str, ...] = ()
    # where the values came from; not TOML keys (load_settings fills them)
    config_file: str | None = None
    verl_version_from_cli: bool = False

    @property
    def base_dir(self) -> Path:
        """Relative patterns (`exclude`, `per-file-ignores`) are relative to this directory."""
        return Path(self.config_file).parent if self.config_file else Path.cwd()

    def choose_verl_version(self, script_text: str, path: str | None = None) -> "VersionChoice":
        """The verl a script at `path` is judged against under these settings, with where the
        choice came from: check, show and the server all choose through here."""
        from verl_lint.verl.choice import choose_version

        source = self.verl_source
        if source and self.config_file and not os.path.isabs(os.path.expanduser(source)):
            source = str(Path(self.config_file).parent / source)  # relative to its config file
        versions = {"cli": self.verl_version} if self.verl_version_from_cli else \
            {"config": self.verl_version}
        # a verl version given decides alone: no need to find the workspace
        return choose_version(**versions, script_text=script_text, verl_source=source,
                              workspace=None if self.verl_version else self.workspace(path))

    def workspace(self, path: str | None) -> "Workspace":
        """Where the script sits: its folder, the project root (this configuration file's
        folder, else the git root) and the folder verl-lint runs in."""
        from verl_lint.verl.sources import Workspace

        return Workspace.for_script(path, self.config_file)

    def enabled_codes(self, path: str | None = None) -> frozenset[str]:
        """Codes of the rules enabled for `path` (per-file-ignores applied)."""
        ignored = self._per_file_ignored(path) if path and self.per_file_ignores else ()
        return _enabled(self.select, self.extend_select, self.ignore, ignored, _registry_size())

    def _per_file_ignored(self, path: str) -> tuple[str, ...]:
        rel = _relative_posix(path, self.base_dir)
        name = PurePosixPath(rel).name
        out: list[str] = []
        for pattern, codes in self.per_file_ignores.items():
            pattern = pattern.removeprefix("./")
            if fnmatch.fnmatchcase(rel, pattern) or fnmatch.fnmatchcase(name, pattern):
                out.extend(codes)
        return tuple(out)

    def severity_for(self, code: str, default: Severity) -> Severity:
        """The configured severity for a rule (later `severity` entries win), else `default`."""
        if not self.severity:
            return default
        table = _severity_table(tuple(self.severity.items()), _registry_size())
        return table.get(code, default)

    def validate_selectors(self) -> None:
        """Raise SettingsError (naming the file and key) when a selector names no rule."""
        try:
            self.enabled_codes()
            for codes in self.per_file_ignores.values():
                resolve_selectors(codes, "per-file-ignores")
            self.severity_for("", Severity.INFO)
        except SettingsError as exc:
            where = f"{self.config_file}: " if self.config_file else ""
            raise SettingsError(f"{where}{exc}") from None

    def is_excluded(self, path: Path) -> bool:
        """True when a component name or the relative path matches an `exclude` pattern."""
        rel = _relative_posix(path, self.base_dir)
        by_part, by_path = _exclude_matchers(self.exclude)
        if by_path is not None and by_path.match(rel):
            return True
        return by_part is not None and any(by_part.match(part)
                                           for part in PurePosixPath(rel).parts)

    def toml_dict(self) -> dict[str, Any]:
        """The settings as `[tool.verl-lint]` keys (for `--show-settings`)."""
        return {_kebab(name): _plain(getattr(self, name)) for name in _TOML_FIELDS}


def _plain(value: Any) -> Any:
    # as JSON has it: tuples are lists, severities their names
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    return value.value if isinstance(value, Severity) else value


@lru_cache(maxsize=64)
def _exclude_matchers(patterns: tuple[str, ...]) -> tuple[re.Pattern | None, re.Pattern | None]:
    """(matcher of a path component, matcher of the relative path) for `exclude` patterns: a
    pattern without `/` matches any component, one with `/` the path or a folder above it."""
    by_part, by_path = [], []
    for pattern in patterns:
        pattern = pattern.removeprefix("./").rstrip("/")
        if "/" in pattern:
            by_path += [fnmatch.translate(pattern), fnmatch.translate(pattern + "/*")]
        else:
            by_part.append(fnmatch.translate(pattern))
    return tuple(re.compile("|".join(p)) if p else None  # type: ignore[return-value]
                 for p in (by_part, by_path))


def _relative_posix(path: str | os.PathLike, base: Path) -> str:
    real = real_path(path)
    root = _resolved(base)
    if real == root:
        return "."
    inside = root if root.endswith(os.sep) else root + os.sep
    if real.startswith(inside):
        return real[len(inside):].replace(os.sep, "/")
    return Path(path).as_posix()


@lru_cache(maxsize=64)
def _resolved(directory: Path) -> str:
    # the base directory is the same for every file under one configuration: resolve it once
    return os.path.realpath(directory)


# ---- rule selectors -------------------------------------------------------------------------

def _registry_size() -> int:
    # part of the memo keys: rules added at run time (extend-rules) change what `ALL` means
    from verl_lint.rules.registry import rule_count

    return rule_count()


@lru_cache(maxsize=256)
def _enabled(select: tuple[str, ...], extend: tuple[str, ...], ignore: tuple[str, ...],
             per_file: tuple[str, ...], _size: int) -> frozenset[str]:
    codes = resolve_selectors(select, "select") | resolve_selectors(extend, "extend-select")
    codes -= resolve_selectors(ignore, "ignore")
    codes -= resolve_selectors(per_file, "per-file-ignores")
    return frozenset(codes)


@lru_cache(maxsize=64)
def _severity_table(items: tuple[tuple[str, Severity], ...], _size: int) -> dict[str, Severity]:
    table: dict[str, Severity] = {}
    for selector, sev in items:
        for code in resolve_selectors((selector,), "severity"):
            table[code] = sev
    return table


def resolve_selectors(selectors: Iterable[str], key: str = "select") -> set[str]:
    """Codes matched by code / prefix / name / ALL; an unknown selector raises SettingsError."""
    from verl_lint.rules.registry import all_rules, rule_names

    rules = rule_names()  # {code: name}, without importing the rules on a warm start
    out: set[str] = set()
    for raw in selectors:
        sel = raw.strip()
        if sel.upper() == "ALL":
            out.update(rules)
            continue
        matched = {code for code, name in rules.items()
                   if code == sel.upper() or name == sel
                   or (sel.upper().startswith("VL") and code.startswith(sel.upper()))}
        if not matched:
            raise SettingsError(f"{key}: unknown rule selector {raw!r}"
                                f"{_suggest(sel, all_rules())}")
        out |= matched
    return out


def closest_rule(text: str, rules) -> str | None:
    """The rule code or name closest to a misspelled one (for "did you mean"), or None."""
    import difflib  # only for a bad selector: keeps it off the start-up path

    names = [r.code for r in rules] + [r.name for r in rules]
    close = difflib.get_close_matches(text, names, n=1, cutoff=0.6)
    return close[0] if close else None


def _suggest(sel: str, rules) -> str:
    close = closest_rule(sel, rules)
    hint = f" (did you mean {close!r}?)" if close else ""
    return hint + "; run `verl-lint rule --all` to list rules"


# ---- loading --------------------------------------------------------------------------------

_NOT_TOML = ("config_file", "verl_version_from_cli")
_TOML_FIELDS = tuple(f.name for f in fields(Settings) if f.name not in _NOT_TOML)


def _toml_keys() -> set[str]:
    return {_kebab(n) for n in _TOML_FIELDS}


def _one_or_many(v: Any) -> Any:
    return (v,) if isinstance(v, str) else v


_STR_TUPLES = ("select", "extend_select", "ignore", "known_env", "extend_rules", "exclude")
# what a TOML table or the command line may write more loosely than the field's type
_LOOSE = {
    **{name: _one_or_many for name in _STR_TUPLES},
    "per_file_ignores": lambda v: {k: _one_or_many(c) for k, c in v.items()}
    if isinstance(v, dict) else v,
    # TOML `set = {TP = 4}` means the shell string "4"
    "pins": lambda v: {k: str(x).lower() if isinstance(x, bool) else str(x)
                       for k, x in v.items()} if isinstance(v, dict) else v,
}


def _field_name(key: str) -> str:
    return "pins" if key == "set" else key.replace("-", "_")


def _loosened(values: dict[str, Any]) -> dict[str, Any]:
    """The values with the looser spellings made strict; keys snake_case or kebab-case."""
    out = {}
    for key, value in values.items():
        loosen = _LOOSE.get(_field_name(key))
        out[key] = loosen(value) if loosen is not None else value
    return out


@lru_cache(maxsize=1)
def _schema():
    """The pydantic model that validates settings written by a user (a configuration table),
    made from the fields of `Settings` when first needed."""
    import typing

    from pydantic import ConfigDict, Field, create_model

    hints = typing.get_type_hints(Settings)
    spec = {f.name: (hints[f.name], Field(default_factory=f.default_factory)
                     if callable(f.default_factory) else f.default)
            for f in fields(Settings) if f.name in _TOML_FIELDS}
    return create_model("Settings", __config__=ConfigDict(  # type: ignore[call-overload]
        extra="forbid", alias_generator=_kebab, populate_by_name=True), **spec)


def _validated(values: dict[str, Any], problem: Callable[[str, str], str]) -> dict[str, Any]:
    """`values` (TOML keys, or snake_case) as Settings field values by field name; an invalid
    one raises SettingsError(problem(where, what is wrong)), `where` as the input spells it."""
    from pydantic import ValidationError

    try:
        model = _schema().model_validate(_loosened(values))
    except ValidationError as exc:
        err = exc.errors()[0]
        raise SettingsError(problem(".".join(str(p) for p in err["loc"]), err["msg"])) from None
    return {name: getattr(model, name) for name in model.model_fields_set}


def _is_str_tuple(v: Any) -> bool:
    return isinstance(v, tuple) and all(isinstance(x, str) for x in v)


# command-line values as click hands them over need no validation (`--fail-on` is a choice)
_TYPED = {
    **{name: _is_str_tuple for name in _STR_TUPLES},
    **{name: lambda v: isinstance(v, str) for name in ("verl_version", "verl_source", "device")},
    "fail_on": lambda v: isinstance(v, str) and v in {s.value for s in Severity},
    "pins": lambda v: isinstance(v, dict) and all(isinstance(k, str) and isinstance(x, str)
                                                  for k, x in v.items()),
}


def _cli_values(given: dict[str, Any]) -> dict[str, Any]:
    """Command-line values (snake_case keys) as Settings field values; only what is not yet of
    its field's type goes through the schema (which says what is wrong)."""
    values = _loosened(given)
    if not all(k in _TYPED and _TYPED[k](v) for k, v in values.items()):
        return _validated(values, lambda loc, msg: f"command line option {_kebab(loc)!r}: {msg}")
    return {k: Severity(v) if k == "fail_on" else v for k, v in values.items()}


def read_config(path: Path) -> dict[str, Any] | None:
    """The verl-lint table of a config file (None for a pyproject.toml without one)."""
    if sys.version_info >= (3, 11):  # imported here: most runs read no configuration file
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib

    raw, problem = read_bounded(path)
    if raw is None:
        raise SettingsError(f"{path}: {problem.removesuffix('; not linted')}")
    try:
        # utf-8-sig: a byte-order mark (an editor's doing) is valid TOML input
        data = tomllib.loads(raw.decode("utf-8-sig"))
    except UnicodeDecodeError:
        raise SettingsError(f"{path}: not valid UTF-8") from None
    except tomllib.TOMLDecodeError as exc:
        raise SettingsError(f"{path}: invalid TOML: {exc}") from None
    except RecursionError:
        raise SettingsError(f"{path}: invalid TOML: nested too deeply") from None
    if path.name == "pyproject.toml":
        # another tool's pyproject.toml may use `tool` as it likes: only our table is ours
        tool = data.get("tool")
        table = tool.get("verl-lint") if isinstance(tool, dict) else None
        if table is None:
            return None
        if not isinstance(table, dict):
            raise SettingsError(f"{path}: [tool.verl-lint] must be a table")
        return table
    return data


def _validate(table: dict[str, Any], path: Path | None) -> Settings:
    where = f"{path}: " if path else ""
    section = "[tool.verl-lint] " if path and path.name == "pyproject.toml" else ""
    known = _toml_keys()
    for key in table:
        if key not in known:
            import difflib

            close = difflib.get_close_matches(key, sorted(known), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise SettingsError(f"{where}{section}unknown key {key!r}{hint}")
    settings = Settings(**_validated(table, lambda loc, msg: f"{where}{section}key {loc!r}: {msg}"))
    if path is None:
        return settings
    base = path.parent
    # paths in a config file are relative to that file
    rules = tuple(str((base / p).resolve()) if not os.path.isabs(p) else p
                  for p in settings.extend_rules)
    return replace(settings, config_file=str(path), extend_rules=rules)


def _config_in_dir(directory: str) -> Path | None:
    for name in CONFIG_FILES:
        # os.path, not Path.is_file: a folder that cannot be searched has no config we can see
        if not os.path.lexists(os.path.join(directory, name)):  # most folders: no Path made
            continue
        candidate = Path(directory) / name
        if os.path.isdir(candidate):
            continue
        if not os.path.isfile(candidate):
            # a link loop, a dangling link, a FIFO: the user meant a configuration here
            problem = read_bounded(candidate)[1] or "cannot read"
            raise UnreadableConfig(f"{candidate}: {problem.removesuffix('; not linted')}")
        if name == "pyproject.toml" and read_config(candidate) is None:
            continue
        return candidate
    return None


def find_config(path: Path) -> Path | None:
    """The configuration file closest to `path` (a file or a directory), or None."""
    try:  # one look tells a link, a folder and a file apart (two for a link)
        mode = os.lstat(path).st_mode
    except (OSError, ValueError):
        mode = 0  # nothing there: neither a link nor a folder
    current = real_path(path, is_link=stat.S_ISLNK(mode))
    if not (stat.S_ISDIR(mode) or (stat.S_ISLNK(mode) and os.path.isdir(current))):
        current = os.path.dirname(current)
    return _config_above(current)


@lru_cache(maxsize=None)
def _config_above(directory: str) -> Path | None:
    # one search per folder, shared by its files and subfolders
    found = _config_in_dir(directory)
    parent = os.path.dirname(directory)
    return found if found is not None or parent == directory else _config_above(parent)


@lru_cache(maxsize=None)
def _load_config_file(path: Path) -> Settings:
    table = read_config(path)
    return _validate(table or {}, path)


def merge_cli(settings: Settings, cli: dict[str, Any]) -> Settings:
    """Apply command-line values (snake_case keys; None/empty means not given).

    `--select` replaces the configured selection (and drops the configured extend-select and
    ignore, as a fresh start); `--extend-select`, `--ignore`, `--set`, `--known-env` add to it.
    """
    update: dict[str, Any] = {}
    given = {k: v for k, v in cli.items() if v not in (None, (), [], {})}
    cli_values = _cli_values(given)
    for key in given:
        value = cli_values[key]
        if key == "select":
            update.update(select=value, extend_select=(), ignore=())
        elif key in _STR_TUPLES:
            base = update.get(key, getattr(settings, key))
            update[key] = tuple(base) + tuple(value)
        elif key in ("pins", "severity", "per_file_ignores"):
            update[key] = {**getattr(settings, key), **value}
        else:
            update[key] = value
    if "select" in given:
        update["extend_select"] = tuple(cli_values.get("extend_select", ()))
        update["ignore"] = tuple(cli_values.get("ignore", ()))
    if "verl_version" in given:
        update["verl_version_from_cli"] = True
    elif "verl_source" in given:
        update["verl_version"] = None  # `--verl-source` beats the configured `verl-version`
    for key in ("select", "extend_select", "ignore"):
        if key in given:
            resolve_selectors(cli_values[key], f"--{_kebab(key)}")
    return replace(settings, **update) if update else settings


@lru_cache(maxsize=None)
def load_extend_rules(paths: tuple[str, ...]) -> None:
    """Register the knowledge-base rules of `extend-rules` folders, once per process."""
    if not paths:
        return
    from verl_lint.rules.knowledge import KnowledgeBaseError
    from verl_lint.rules.knowledge import load_extend_rules as load

    try:
        load(paths)
    except KnowledgeBaseError as exc:
        raise SettingsError(f"extend-rules: {exc}") from None


def load_settings(path: Path, cli: dict[str, Any] | None = None, *,
                  config_file: Path | None = None) -> Settings:
    """Settings for linting `path`: `config_file` if given, else the closest config, + CLI."""
    found = config_file if config_file is not None else find_config(path)
    base = _load_config_file(Path(os.path.realpath(found))) if found is not None else Settings()
    try:
        load_extend_rules(base.extend_rules)  # first: selectors may name these rules
    except SettingsError as exc:
        where = f"{base.config_file}: " if base.config_file else ""
        raise SettingsError(f"{where}{exc}") from None
    base.validate_selectors()
    return merge_cli(base, cli or {})


class SettingsResolver:
    """`settings_for(path)` with one Settings object per configuration file (so the engine's
    per-Settings caches are shared by every file under it)."""

    def __init__(self, cli: dict[str, Any] | None = None, config_file: Path | None = None):
        self.cli = cli or {}
        self.config_file = config_file
        self._by_path: dict[Path, Settings] = {}  # a run asks for a file's settings often
        self._by_found: dict[Path | None, Settings] = {}  # as found
        self._by_config: dict[str | None, Settings] = {}  # resolved: one object per file

    def __call__(self, path: Path) -> Settings:
        settings = self._by_path.get(path)
        if settings is None:
            settings = self._by_path[path] = self._lookup(path)
        return settings

    def _lookup(self, path: Path) -> Settings:
        found = self.config_file if self.config_file is not None else find_config(path)
        settings = self._by_found.get(found)
        if settings is None:
            key = os.path.realpath(found) if found is not None else None
            settings = self._by_config.get(key)
            if settings is None:
                settings = self._by_config[key] = load_settings(path, self.cli,
                                                                config_file=found)
            self._by_found[found] = settings
        return settings

    def lenient(self, path: Path) -> Settings:
        """`self(path)`, or the command line's settings alone where the configuration file that
        governs `path` cannot be read (finding files needs excludes even there)."""
        try:
            return self(path)
        except UnreadableConfig:
            return merge_cli(Settings(), self.cli)


def clear_caches() -> None:
    """Forget discovered and parsed configuration files and what was found on disk about the
    verl a script runs (a long-running server or `--watch` calls this on a change)."""
    from verl_lint.verl import choice, sources

    _config_above.cache_clear()
    _load_config_file.cache_clear()
    _resolved.cache_clear()
    real_folder.cache_clear()
    sources.clear_caches()
    choice.clear_caches()

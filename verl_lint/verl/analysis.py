"""Apply a launch's overrides to verl's composed config.

CONTRACT: `analyze_launch(release, launch) -> LaunchAnalysis` where `config` is the
EffectiveConfig (None when the entry point/config cannot be resolved, with `unresolved` saying
why, for VL004) and `problems` lists every override Hydra (or instantiation) would reject, as
`OverrideProblem`s (each names the VL2xx code that reports it).

Steps: entry module → config dir/name (`--config-path`/`--config-name`); group overrides
(`model_engine=megatron`, `actor@actor_rollout_ref.actor=…`) select the composed tree (cached,
see configs.py); every value override is then applied in order with Hydra's semantics
(hydra_semantics.py), collecting every refusal instead of stopping at the first; what Hydra
accepts but verl's dataclass instantiation rejects (`+key` that is not a field of a `_target_`
node) is reported too.
"""

from __future__ import annotations

import os
import posixpath
from pathlib import Path
from typing import Any, Literal

from dataclasses import field, replace

from verl_lint.diagnostics import Edit, Fix
from verl_lint.evaluate.model import Launch, Override, Unknown
from verl_lint.records import positional, shared_dataclass
from verl_lint.source import Span
from verl_lint.verl import data
from verl_lint.verl import hydra_semantics as hs
from verl_lint.verl import entry as entry_lookup
from verl_lint.verl.compose import ComposeFailure
from verl_lint.verl import configs
from verl_lint.verl.configs import composed
from verl_lint.verl.effective import EffectiveConfig
from verl_lint.verl.effective_build import build_effective, key_path
from verl_lint.verl.release import EntryPoint, VerlRelease
from verl_lint.verl.sources import Workspace
from verl_lint.verl.suggest import NO_VALUE, closest_keys
from verl_lint.verl.versions import SUPPORTED_VERSIONS, parse_version

ProblemKind = Literal[
    "unknown-key",  # VL201: not in the config, no `+` can fix it (or `~` of a missing key)
    "not-a-field",  # VL201: added with `+` under a `_target_` dataclass node that lacks the field
    "missing-plus",  # VL202: absent, but its parent accepts new keys with `+`
    "append-existing",  # VL203: `+` on an existing key ("Could not append")
    "renamed",  # VL204: renamed/removed in a known verl release
    "type",  # VL206: a list/dict value Hydra cannot merge into that node
    "syntax",  # VL207: Hydra cannot parse it (or an ambiguous sweep `a,b`)
    "unknown-group",  # VL208: config group option or config name that does not exist
]


@shared_dataclass(slots=True, kw_only=True)
class OverrideProblem:
    """One override Hydra (or verl's dataclass instantiation) refuses."""

    kind: ProblemKind
    code: str  # the rule that reports it
    key: str
    message: str  # ready for a diagnostic: names the key, the version and why
    span: Span  # the token to change (the key, or the whole word)
    override: Override | None = None
    hydra_message: str | None = None  # Hydra's own words when Hydra is the one refusing
    rejected_by: Literal["hydra", "verl"] = "hydra"
    suggestions: list[str] = field(default_factory=list)
    fix: Fix | None = None
    since: str | None = None  # renamed: the release it happened in
    new_key: str | None = None  # renamed: the key to use now
    caused_by: Override | None = None  # the override whose fix makes this one valid (no own fix)


@shared_dataclass(slots=True, kw_only=True)
class AppliedOverride:
    """A value override Hydra accepts, as applied (for the value rules VL205/206/209)."""

    override: Override
    key: str
    prefix: str
    value: Any  # parsed like Hydra (int/float/bool/None/str/list/dict) or Unknown
    existed: bool  # the key was in the config before this override


# one per override of a launch (≈ 11,000 over verl's scripts), built positionally (a keyword
# call costs twice the instructions: see `records.positional`)
_applied = positional(AppliedOverride, "override", "key", "prefix", "value", "existed")


@shared_dataclass(slots=True, kw_only=True, eq=False)
class LaunchAnalysis:

    config: EffectiveConfig | None = None
    config_name: str | None = None
    unresolved: str | None = None
    problems: list[OverrideProblem] = field(default_factory=list)
    entry: str | None = None  # the entry module
    group_overrides: list[str] = field(default_factory=list)
    applied: list[AppliedOverride] = field(default_factory=list)
    base: dict | None = None  # the composed tree before value overrides (shared: read only)
    missing: list[str] = field(default_factory=list)  # keys still `???` after the overrides
    absent_module: str | None = None  # VL211: the entry module is not in that verl
    not_hydra: str | None = None  # the module has no `@hydra.main`: nothing to compose
    entry_point: EntryPoint | None = None  # what was composed (config folder and name)


CODES: dict[str, str] = {
    "unknown-key": "VL201", "not-a-field": "VL201", "missing-plus": "VL202",
    "append-existing": "VL203", "renamed": "VL204", "type": "VL206", "syntax": "VL207",
    "unknown-group": "VL208",
}


def analyze_launch(release: VerlRelease, launch: Launch,
                   workspace: Workspace | None = None) -> LaunchAnalysis:
    module = entry_module(launch)
    if module is None:
        return LaunchAnalysis(unresolved="the entry point is not a verl module")
    res = _resolve(release, launch, module, workspace)
    if res.entry is None:
        return LaunchAnalysis(entry=module, unresolved=res.unresolved, absent_module=res.missing,
                              not_hydra=res.not_hydra)
    entry = res.entry
    name = entry.config_name
    if isinstance(launch.config_name, Unknown):
        return LaunchAnalysis(entry=module, entry_point=entry,
                              unresolved=f"--config-name is not known statically "
                                         f"({launch.config_name.reason})")
    if launch.config_name:
        name = launch.config_name.strip().strip("'\"").removesuffix(".yaml")
        if not release.has_config_name(entry, name) and _extra_config_dirs(launch, entry):
            return LaunchAnalysis(entry=module, entry_point=entry,
                                  unresolved=f"config '{name}' is not in {_where(entry, release)}: it may "
                                             f"come from {_extra_config_dirs(launch, entry)}")
        if not release.has_config_name(entry, name):
            return LaunchAnalysis(entry=module, entry_point=entry, config_name=name,
                                  problems=[OverrideProblem(
                kind="unknown-group", code="VL208", key="--config-name",
                span=launch.config_name_span or launch.span,
                message=f"config '{name}' does not exist for {module} in "
                        f"{_where(entry, release)}; available: "
                        f"{', '.join(release.config_names_of(entry))}")])
    analysis = _Analyzer(release, entry, module, name, launch).run()
    analysis.entry_point = entry
    return analysis


def _where(entry: EntryPoint, release: VerlRelease) -> str:
    """`verl 0.9.1` for the release's own configs, else the config folder on disk."""
    return entry.config_dir if os.path.isabs(entry.config_dir) else f"verl {release.version}"


def _resolve(release: VerlRelease, launch: Launch, module: str,
             ws: Workspace | None) -> entry_lookup.Resolution:
    """The entry point with the config folders this launch composes from, or why there is none."""
    entry = release.entry_point(module)
    if entry is None:
        res = _find_entry(release, launch, module, ws)
        if res.entry is None:
            return res
        entry = res.entry
    return _with_launch_folders(release, launch, entry, ws)


def _find_entry(release: VerlRelease, launch: Launch, module: str,
                ws: Workspace | None) -> entry_lookup.Resolution:
    ours = module.startswith("verl.")
    if ours and release.has_module(module):
        return entry_lookup.Resolution(not_hydra=f"{module} has no `@hydra.main`: its arguments "
                                                 "are not Hydra overrides")
    found = entry_lookup.find_module_file(None if launch.script and not launch.module else module,
                                          launch.script, ws)
    if found is not None:
        return entry_lookup.disk_entry(module, found, release, ws)
    roots = ", ".join(str(r) for r in entry_lookup.search_roots(ws)) or "no workspace folder"
    if ours and release.has_module(module) is False:
        have = [v for v in SUPPORTED_VERSIONS if module in data.release_meta(v).get("modules", ())]
        why = f"{module} does not exist in verl {release.version}"
        if release.root is not None:
            why = f"{module} does not exist in the verl tree {release.root}"
        if have:
            why += f" (verl {_version_span(have)} {'has' if len(have) == 1 else 'have'} it)"
        if have and all(parse_version(v) > parse_version(release.version) for v in have):
            # newer than the release judged against: the script likely runs a newer verl
            return entry_lookup.Resolution(unresolved=why + "; pin the verl the script needs "
                                           "(`--verl-version`, `verl-source`)")
        return entry_lookup.Resolution(missing=why)
    if module.startswith(("recipe.", "recipe/")):
        return entry_lookup.Resolution(unresolved=f"recipe entry point {module}: no "
                                                  f"{module.replace('.', '/')}.py found in {roots}")
    return entry_lookup.Resolution(unresolved=f"{module} has no config in verl {release.version} "
                                              f"and no {module.replace('.', '/')}.py is in {roots}")


def _with_launch_folders(release: VerlRelease, launch: Launch, entry: EntryPoint,
                         ws: Workspace | None) -> entry_lookup.Resolution:
    """`--config-path` replaces the entry's config folder, `--config-dir` adds one."""
    name = launch.config_name if isinstance(launch.config_name, str) else None
    wanted = (name.strip().strip("'\"").removesuffix(".yaml") if name else entry.config_name) + ".yaml"
    if launch.config_path is not None:
        folder = entry_lookup.anchored_path(launch.config_path, ws, must_hold=wanted)
        if folder is None and isinstance(launch.config_path, str):
            folder = _relative_config_path(launch.config_path, entry, release, ws)
        if folder is None:
            why = _config_path_problem(launch.config_path, entry)
            if why:
                return entry_lookup.Resolution(unresolved=why + _looked(launch.config_path, ws))
        elif folder != entry.config_dir:
            if not Path(folder, wanted).is_file() and not release.has_config_name(
                    replace(entry, config_dir=folder, search=[]), wanted[:-5]):
                return entry_lookup.Resolution(
                    unresolved=f"--config-path {launch.config_path}: no {wanted} in {folder}")
            entry = replace(entry, config_dir=folder,
                            search=entry_lookup.searchpath(Path(folder, wanted), release, ws)
                            if os.path.isabs(folder) else entry.search)
    extra, unfound = [], []
    for d in launch.config_dirs:
        folder = entry_lookup.anchored_path(d, ws)
        if folder is None or not Path(folder).is_dir():
            unfound.append(f"--config-dir {d}")
        elif folder not in entry.search:
            extra.append(folder)
    if extra or unfound:
        entry = replace(entry, search=[*entry.search, *extra], unfound=unfound)
    return entry_lookup.Resolution(entry=entry)


def _relative_config_path(path: str, entry: EntryPoint, release: VerlRelease,
                          ws: Workspace | None) -> str | None:
    """Hydra reads a relative `--config-path` against the entry module's own folder."""
    text = posixpath.normpath(path.strip().strip("'\"").replace("\\", "/"))
    if os.path.isabs(entry.config_dir):
        folder = os.path.normpath(os.path.join(os.path.dirname(entry.config_dir), text)) \
            if entry.evidence is None else \
            os.path.normpath(os.path.join(os.path.dirname(entry.evidence.rpartition(":")[0]), text))
        return folder if Path(folder).is_dir() else None
    module_dir = posixpath.dirname(entry.module.replace(".", "/"))
    folder = posixpath.normpath(posixpath.join(module_dir, text))
    return folder if folder in release.groups or folder == entry.config_dir else None


def _looked(value: Any, ws: Workspace | None) -> str:
    anchor = getattr(value, "anchor", None)
    if anchor == "cwd" and ws is not None:
        return f" (as `$(pwd)`, the folder verl-lint runs in, {ws.cwd}, it has no such config)"
    return ""


def _version_span(versions: list[str]) -> str:
    """`0.4.0–0.8.0` for a run of consecutive bundled releases, else a list."""
    at = [SUPPORTED_VERSIONS.index(v) for v in versions]
    if len(versions) > 2 and at == list(range(at[0], at[0] + len(at))):
        return f"{versions[0]}–{versions[-1]}"
    return ", ".join(versions)


def _extra_config_dirs(launch: Launch, entry: EntryPoint) -> str:
    """The folders the launch adds to Hydra's search path that verl-lint could not find on disk
    (`--config-dir`, an override of `hydra.searchpath`), as the script says them; "" when none."""
    dirs = list(entry.unfound)
    dirs += [o.text if isinstance(o.text, str) else "hydra.searchpath=…"
             for o in launch.overrides if o.key == "hydra.searchpath"]
    return ", ".join(dirs)


def entry_module(launch: Launch) -> str | None:
    return entry_lookup.module_of(launch)


def _config_path_problem(config_path: Any, entry: EntryPoint) -> str | None:
    if config_path is None:
        return None
    if isinstance(config_path, Unknown):
        return f"--config-path is not known statically ({config_path.reason})"
    path = posixpath.normpath(str(config_path).strip().strip("'\"").replace("\\", "/"))
    if path in ("config", ".") or path.endswith(entry.config_dir) or \
            posixpath.basename(entry.config_dir) == path == "config":
        return None
    return f"--config-path {config_path} is not a folder verl-lint can find"


def _word(ov: Override) -> str | None:
    """The override as Hydra receives it, when known."""
    if not isinstance(ov.text, Unknown):
        return ov.text
    if isinstance(ov.value, Unknown):
        return None
    return ov.prefix + ov.key + ("" if ov.value is None else "=" + ov.value)


class _Analyzer:
    def __init__(self, release: VerlRelease, entry: EntryPoint, module: str, name: str,
                 launch: Launch) -> None:
        self.release, self.entry, self.module, self.name, self.launch = release, entry, module, name, launch
        self.problems: list[OverrideProblem] = []
        self.applied: list[AppliedOverride] = []
        self.base: dict = {}  # the composed tree the value overrides start from (shared: read only)
        self._group_texts: list[str] = []  # the group overrides that compose it
        self._unresolved: str | None = None  # why it cannot be composed
        self._deleted = False  # a `~key` was applied

    def problem(self, kind: ProblemKind, ov: Override, key: str, message: str, *,
                span: Span | None = None, **extra: Any) -> None:
        self.problems.append(OverrideProblem(kind=kind, code=CODES[kind], key=key, message=message,
                                             span=span or ov.key_span, override=ov, **extra))

    # -- groups -----------------------------------------------------------------------------

    def run(self) -> LaunchAnalysis:
        groups, values = [], []
        group_names = self.release.group_names(self.entry)  # (`is_group` once per launch)
        for ov in self.launch.overrides:
            parsed = self._parse(ov)
            if parsed is None:
                continue
            key = parsed.key
            # (a slice, not `startswith`: a method call per override)
            if key[:5] == "hydra" and key[5:6] in ("", ".", "/"):
                continue  # Hydra's own settings (run dir, logging): not verl's config
            if key in group_names and not isinstance(parsed.value, dict):
                groups.append((ov, parsed))
            elif "." not in key and isinstance(parsed.value, str) and \
                    _extra_config_dirs(self.launch, self.entry):
                # `+my_backend=remote`: a config group from the folders the script adds
                return LaunchAnalysis(config_name=self.name, entry=self.module,
                                      unresolved=f"{key}={parsed.value} may be a config group "
                                      f"from {_extra_config_dirs(self.launch, self.entry)}")
            elif parsed.package is not None:
                self.problem("unknown-group", ov, key,
                             f"'{key}@{parsed.package}' looks like a config group override, but "
                             f"config group '{key}' does not exist in verl {self.release.version}")
            else:
                values.append((ov, parsed))
        base = self._compose_groups(groups)
        if base is None:
            return LaunchAnalysis(config_name=self.name, unresolved=self._unresolved,
                                  problems=self.problems, entry=self.module,
                                  group_overrides=self._group_texts)
        self.base = base
        state = hs.Tree(base)
        origins: dict[tuple[str, ...], tuple[int, Override]] = {}
        for seq, (ov, parsed) in enumerate(values):
            self._apply(state, origins, seq, ov, parsed)
        config = build_effective(self.release.version, self.name, state.root, origins, base,
                                 only_sets=not self._deleted)
        missing = [k for k in _base_missing(base)
                   if hs.lookup(state.root, tuple(k.split("."))) == hs.MISSING]
        missing += [a.key for a in self.applied if a.value == hs.MISSING and a.key not in missing]
        _mark_consequences(self)
        # `base` is the shared composed tree: the rules' per-tree caches key on its identity
        return LaunchAnalysis(
            config=config, config_name=self.name, unresolved=None, problems=self.problems,
            entry=self.module, group_overrides=list(self._group_texts), applied=self.applied,
            base=base, missing=missing)

    def _parse(self, ov: Override) -> hs.Parsed | None:
        word = ov.text
        if isinstance(word, Unknown):  # (`_word`, without a call for the word most overrides are)
            word = _word(ov)
        if word is None:  # value unknown: parse the key alone, the value stays Unknown
            p = hs.parse(f"{ov.prefix}{ov.key}=0")
            if p.error is None:
                p = hs.Parsed(prefix=p.prefix, key=p.key, package=p.package, value=ov.value)
        else:
            p = hs.parse(word)
            if p.error is None and p.key and not p.sweep:
                return p  # the common word: a key, a value Hydra reads alone
        if p.error is None and not p.key:
            p = hs.Parsed(prefix=p.prefix, key="", error="the override has no key")
        if p.error is not None:
            message = f"Hydra cannot parse override '{word or ov.key}': {p.error}"
            if word is not None and not word.strip():
                message = (f"Hydra cannot parse the argument '{word}' (only blanks): a stray "
                           "`\\ ` escapes a space into an argument of its own")
            self.problem("syntax", ov, ov.key, message, span=ov.span, hydra_message=p.error)
            return None
        if p.sweep:
            self.problem("syntax", ov, p.key,
                         f"ambiguous value for '{p.key}': Hydra reads '{word}' as a sweep; use "
                         f"[a,b] for a list or quote it ('a,b') for a string",
                         span=ov.value_span or ov.span,
                         hydra_message=f"Ambiguous value for argument '{word}'")
            return None
        return p

    def _compose_groups(self, groups: list[tuple[Override, hs.Parsed]]) -> dict | None:
        texts: list[str] = []
        known = []
        for ov, p in groups:
            if isinstance(p.value, Unknown):
                self._unresolved = f"config group override {ov.key} is not known statically " \
                                   f"({p.value.reason})"
                return None
            options = self.release.group_options(self.entry, p.key)
            if options is not None and p.prefix in ("", "+") and isinstance(p.value, str) \
                    and p.value not in options and _extra_config_dirs(self.launch, self.entry):
                self._unresolved = f"config group option {p.key}={p.value} is not bundled: " \
                                   f"it may come from {_extra_config_dirs(self.launch, self.entry)}"
                return None
            if options is not None and p.prefix in ("", "+") and isinstance(p.value, str) \
                    and p.value not in options:
                # Hydra would fail with "Could not find '<group>/<option>'": no need to ask it
                self.problem("unknown-group", ov, p.key, self._group_message(
                    p, ComposeFailure(kind="missing-config", message="")), span=ov.span,
                    hydra_message=f"Could not find '{p.key}/{p.value}'")
                continue
            texts.append(_word(ov) or "")
            known.append((ov, p))
        groups = known
        self._group_texts = texts
        result = composed(self.release, self.entry, self.name, tuple(texts))
        if isinstance(result, dict):
            return result
        if _extra_config_dirs(self.launch, self.entry):  # what Hydra misses may be in the user's folders
            self._unresolved = f"Hydra cannot compose {self.name} from the bundled configs " \
                               f"alone: {_extra_config_dirs(self.launch, self.entry)} is not bundled"
            return None
        # find the culprits one by one, report them, compose without them
        kept = []
        for (ov, p), text in zip(groups, texts):
            alone = composed(self.release, self.entry, self.name, (*kept, text))
            if isinstance(alone, ComposeFailure):
                self.problem("unknown-group", ov, p.key, self._group_message(p, alone),
                             span=ov.span, hydra_message=alone.message)
            else:
                kept.append(text)
        self._group_texts = kept
        result = composed(self.release, self.entry, self.name, tuple(kept))
        if isinstance(result, ComposeFailure):
            self._unresolved = f"Hydra cannot compose {self.name}: {result.message}"
            return None
        return result

    def _group_message(self, p: hs.Parsed, failure: ComposeFailure) -> str:
        options = self.release.group_options(self.entry, p.key)
        v = self.release.version
        if failure.kind == "missing-config" and options is not None:
            return (f"config group '{p.key}' has no option '{p.value}' in verl {v}; "
                    f"available: {', '.join(options)}")
        first = failure.message.splitlines()[0]
        word = f"{p.prefix}{p.key}" + (f"={p.value}" if p.has_value and p.value is not None else "")
        return f"Hydra cannot apply group override '{word}' in verl {v}: {first}"

    # -- value overrides ----------------------------------------------------------------------

    def _apply(self, state: hs.Tree, origins: dict, seq: int, ov: Override, p: hs.Parsed) -> None:
        # the fields by one unpacking: each `p.field` of a NamedTuple is a descriptor call, and
        # this runs for every override of every launch (≈ 11,000 over verl's scripts)
        prefix, key, _, value, _, _, _ = p
        parts = key_path(key)
        try:
            existed = hs.apply(state, p, parts)  # Unmodeled when the verdict depends on an Unknown
        except hs.HydraReject as rej:
            self._rejected(state, ov, p, rej)
            return
        except hs.Unmodeled:
            existed = hs.lookup(state.root, parts) is not hs.ABSENT  # (the tree is unchanged)
            if prefix != "~":
                try:
                    state.set(parts, value)
                except (TypeError, ValueError, IndexError, KeyError):
                    return
        if prefix != "~":
            origins[parts] = (seq, ov)
            self.applied.append(_applied(ov, key, prefix, value, existed))
            if not existed and prefix in ("+", "++"):
                self._check_fields(state, ov, p, parts)
        else:
            self._deleted = True

    def _check_fields(self, state: hs.Tree, ov: Override, p: hs.Parsed,
                      parts: tuple[str, ...]) -> None:
        """Hydra added a new key; verl instantiates `_target_` dataclasses and dies on non-fields."""
        node: Any = state.root
        for i, k in enumerate(parts):
            if not isinstance(node, dict):
                return
            fields = self.release.fields_of(node.get("_target_"))
            if fields is not None and k not in fields and k != "_target_":
                evidence = self.release.converts(parts[:i], self.entry)
                if evidence is None:
                    return  # verl reads this node with `.get()`: an extra key is harmless
                owner = ".".join(parts[:i]) or "<root>"
                sugg = closest_keys(k, fields)
                self.problem("not-a-field", ov, p.key,
                             f"'{k}' is not a field of {node['_target_'].rsplit('.', 1)[-1]} "
                             f"({owner}) in verl {self.release.version}: Hydra adds "
                             f"'{p.key}' but verl fails when it builds the dataclass "
                             f"({evidence})"
                             + _did_you_mean(sugg), rejected_by="verl", suggestions=sugg)
                return
            if fields is not None and _is_free(fields.get(k)):
                return  # a dict-typed field: anything goes below it
            node = node.get(k)
            if hs.is_interp(node):
                return

    def _rejected(self, state: hs.Tree, ov: Override, p: hs.Parsed, rej: hs.HydraReject) -> None:
        key, v = p.key, self.release.version
        if rej.kind == "append":
            parts = tuple(key.split("."))
            inherited = _inherited(state.root, parts)
            new = "++" if inherited else ""
            try:
                current, where = hs.follow(state.root, parts)
            except (hs.Unresolvable, hs.HydraReject):
                current, where = hs.hydra_select(state.root, parts), None
            if inherited:
                source = f" from {'.'.join(where)}" if where and where != parts else ""
                what = f" (inherited{source}: {_short(current)})"
                advice = "use '++' to override the inherited value"
            else:
                what, advice = f" (value {_short(current)})", "drop the '+'"
            start = ov.key_span.start - len(ov.prefix) if _literal_key(ov) else ov.key_span.start
            self.problem("append-existing", ov, key,
                         f"'{key}' already exists in verl {v}{what}: Hydra cannot append it "
                         f"with '+'; {advice}", hydra_message=rej.message,
                         span=ov.span if not _literal_key(ov) else
                         _span_from(ov.key_span, start),
                         fix=_prefix_fix(ov, new, "Use '++'" if new else "Drop the '+'"))
            return
        if rej.kind == "delete":
            sugg = self._suggest(key)
            self.problem("unknown-key", ov, key, f"cannot delete '{key}' in verl {v}: "
                         f"{rej.message}" + _did_you_mean(sugg), hydra_message=rej.message,
                         suggestions=sugg)
            return
        if rej.kind == "type":
            self.problem("type", ov, key, f"Hydra cannot apply '{key}' in verl {v}: {rej.message}",
                         span=ov.value_span or ov.span, hydra_message=rej.message)
            return
        # missing key (struct): a rename, a key that needs '+', or an unknown key
        if self._renamed(ov, p) or self._group_elsewhere(ov, p):
            return
        hydra_msg = f"Could not override '{key}'."
        at = rej.at or tuple(key.split("."))
        if self._needs_plus(state, at):
            parts = tuple(key.split("."))
            plus_ok = True
            try:
                plus_ok = hs.hydra_select(state.root, parts) is None
            except hs.HydraReject:
                plus_ok = False
            new = "+" if plus_ok else "++"
            parent = ".".join(at[:-1])
            self.problem("missing-plus", ov, key,
                         f"'{key}' is not in verl {v}'s config, but '{parent}' accepts new keys: "
                         f"add it with '{new}{key}=…'", hydra_message=hydra_msg,
                         fix=_prefix_fix(ov, new, f"Add '{new}'"))
            return
        sugg = self._suggest(key, p.value)
        self.problem("unknown-key", ov, key, f"unknown key '{key}' in verl {v} ({self.name})"
                     + _did_you_mean(sugg) + _set_already(sugg, self.launch),
                     hydra_message=hydra_msg, suggestions=sugg,
                     fix=_rename_fix(ov, sugg[0], "unsafe", self.launch) if len(sugg) == 1
                     else None)

    def _group_elsewhere(self, ov: Override, p: hs.Parsed) -> bool:
        """`model_engine=megatron` on a release without that config group."""
        if "." in p.key or isinstance(p.value, hs.CONTAINERS):
            return False
        have = [v for v in SUPPORTED_VERSIONS
                if p.key in data.release_meta(v)["groups"].get(self.entry.config_dir, {})]
        if not have:
            return False
        self.problem("unknown-group", ov, p.key,
                     f"config group '{p.key}' does not exist in verl {self.release.version} "
                     f"(verl {', '.join(have)} have it)", span=ov.span,
                     hydra_message=f"Could not override '{p.key}'.")
        return True

    def _needs_plus(self, state: hs.Tree, at: tuple[str, ...]) -> bool:
        """Can the first missing component `at[-1]` be added under `at[:-1]` with '+'?"""
        parent = hs.lookup(state.root, at[:-1])
        if hs.is_interp(parent):
            return True  # an inherited node (`${oc.select:…}`): '+'/'++' replace it
        grand = hs.lookup(state.root, at[:-2]) if len(at) >= 2 else state.root
        if isinstance(grand, dict) and len(at) >= 2:
            fields = self.release.fields_of(grand.get("_target_"))
            if fields is not None and _is_free(fields.get(at[-2])):
                return True  # a dict-typed dataclass field (override_transformer_config…)
        if parent == {}:
            return True  # an empty dict in the YAML is there to be filled (engine_kwargs.vllm)
        if isinstance(parent, dict):
            fields = self.release.fields_of(parent.get("_target_"))
            return fields is not None and at[-1] in fields  # a field the YAML omits
        return False

    def _renamed(self, ov: Override, p: hs.Parsed) -> bool:
        strategy = self._strategy(p.key)
        entries = [e for e in self.release.renames_of(p.key) if e["kind"] != "value"
                   and (e.get("scope") is None or strategy is None or
                        (strategy.startswith("fsdp") if e["scope"] == "fsdp" else
                         strategy == e["scope"]))]
        if not entries:
            return False
        entry = entries[0]
        if entry["kind"] == "requires_plus":
            return False  # VL202's business: the key exists, as an engine kwarg, with '+'
        v = self.release.version
        new = entry.get("new")
        since = entry.get("since")
        hops = self._follow_renames(new) if new else []
        when = f"in verl {since}" if since else "in a past verl release"
        if len(hops) > 1:  # a chain through a shared key must not lose the role it started in
            hops[-1] = (self._same_role(p.key, hops[-1][0]), hops[-1][1])
        if hops:
            new = hops[-1][0]
            msg = f"'{p.key}' was renamed to '{hops[0][0]}' {when}"
            for key, hop_since in hops[1:]:
                msg += f", then to '{key}' in verl {hop_since}"
            msg += f" (linting against verl {v})"
        else:
            msg = f"'{p.key}' was removed {when} (linting against verl {v})"
        if entry.get("note"):
            msg += f"; {entry['note']}"
        npu = self._same_role(p.key, new.replace(".tool_config.nsys.", ".tool_config.npu.")) \
            if new and ".tool_config.nsys." in new else None
        if npu and hs.lookup(self.base, tuple(npu.split("."))) is not hs.ABSENT:
            msg += f"; on Ascend NPUs the profiler is '{npu}'"  # nsys is NVIDIA's
        certain = bool(new) and "value_map" not in entry and \
            hs.lookup(self.base, tuple(new.split("."))) is not hs.ABSENT
        fix = _rename_fix(ov, new, "safe" if certain else "unsafe", self.launch) if new else None
        also = next((o for o in self.launch.overrides if new and o.key == new), None)
        if also is not None:  # renaming would set it twice: this one is only to drop
            msg += f"; the script sets '{new}' already (line {also.span.line}): remove this one"
        self.problem("renamed", ov, p.key, msg, since=since, new_key=new,
                     hydra_message=f"Could not override '{p.key}'.", fix=fix)
        return True

    def _strategy(self, key: str) -> str | None:
        """The training engine of the role a key belongs to (renames can be engine-scoped)."""
        role = "critic" if key.startswith("critic.") else "actor_rollout_ref.actor"
        try:
            value, _ = hs.follow(self.base, tuple(f"{role}.strategy".split(".")))
        except (hs.Unresolvable, hs.HydraReject):
            return None
        return value if isinstance(value, str) and not hs.is_interp(value) else None

    def _follow_renames(self, key: str) -> list[tuple[str, str | None]]:
        """[(new key, release)…] following later renames of the new key too."""
        hops: list[tuple[str, str | None]] = [(key, None)]
        for _ in range(5):
            nxt = [e for e in self.release.renames_of(key) if e.get("new") and e["kind"] == "key"]
            if not nxt or hs.lookup(self.base, tuple(key.split("."))) is not hs.ABSENT:
                break
            key = nxt[0]["new"]
            hops.append((key, nxt[0].get("since")))
        return hops

    def _same_role(self, old: str, new: str) -> str:
        """`new` moved to the role `old` belongs to, when this release has that key: a
        `ref.profiler.discrete` renamed through the shared `actor_rollout_ref.profiler` in
        0.5.0 lands in `ref.profiler…` again in 0.6.0, not in the actor's."""
        old_role, new_role = _role(old), _role(new)
        if old_role is None or new_role is None or old_role == new_role:
            return new
        moved = old_role + new[len(new_role):]
        return moved if hs.lookup(self.base, tuple(moved.split("."))) is not hs.ABSENT else new

    def _suggest(self, key: str, value: Any = NO_VALUE) -> list[str]:
        return closest_keys(key, tree=self.base, value=value)


_ROLES = ("actor_rollout_ref.actor.", "actor_rollout_ref.ref.", "actor_rollout_ref.rollout.")


def _role(key: str) -> str | None:
    """`actor_rollout_ref.ref` for `actor_rollout_ref.ref.…`: the role section a key is in."""
    return next((r[:-1] for r in _ROLES if key.startswith(r)), None)


_MISSING_CACHE: dict[int, tuple[dict, list[str]]] = {}


def _base_missing(base: dict) -> list[str]:
    """Keys that are `???` in a shared composed tree (computed once per tree, and kept in the
    disk cache beside it: reading them back costs a fraction of the walk)."""
    hit = _MISSING_CACHE.get(id(base))
    if hit is None or hit[0] is not base:
        hit = _MISSING_CACHE[id(base)] = (
            base, configs.derived(base, "missing", _missing, __file__))
    return hit[1]


def _missing(tree: dict) -> list[str]:
    """The `???` leaves of the dicts of `tree`, in order (one walk of a few thousand nodes for
    each composed tree: a loop, no generator per dict)."""
    out: list[str] = []
    stack = [("", iter(tree.items()))]
    while stack:
        prefix, items = stack[-1]
        for k, v in items:
            path = f"{prefix}.{k}" if prefix else k
            if isinstance(v, dict):
                stack.append((path, iter(v.items())))
                break  # into it; this dict's iterator goes on after it
            if v == hs.MISSING:
                out.append(path)
        else:
            stack.pop()
    return out


def _is_free(annotation: str | None) -> bool:
    """A dataclass field typed as a dict: Hydra and verl accept any key under it."""
    if not annotation:
        return False
    a = annotation.replace("typing.", "").replace(" ", "")
    return a.startswith(("dict", "Dict", "Optional[dict", "Optional[Dict", "dict|", "Any")) or \
        a in ("Optional[dict]", "Optional[Any]")


def _inherited(root: dict, parts: tuple[str, ...]) -> bool:
    """Is the value at `parts` (or a node above it) an interpolation, i.e. inherited?"""
    node: Any = root
    for k in parts:
        if hs.is_interp(node):
            return True
        node = hs.child(node, k) if hs.is_container(node) else hs.ABSENT
        if node is hs.ABSENT:
            return False
    return hs.is_interp(node)


def _span_from(span: Span, start: int) -> Span:
    """`span` widened to the left by the (single-line) prefix that precedes it."""
    delta = span.start - start
    return Span(start=start, end=span.end, line=span.line, column=max(1, span.column - delta),
                end_line=span.end_line, end_column=span.end_column)


def _short(value: Any) -> str:
    text = repr(value) if isinstance(value, str) else str(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _did_you_mean(sugg: list[str]) -> str:
    if not sugg:
        return ""
    return "; did you mean " + " or ".join(f"'{s}'" for s in sugg) + "?"


def _literal_key(ov: Override) -> bool:
    return ov.key_span != ov.span


def _prefix_fix(ov: Override, new_prefix: str, title: str) -> Fix | None:
    """Replace the override's `+`/`++` prefix (literal in the script) by `new_prefix`."""
    if not _literal_key(ov):
        return None
    start = ov.key_span.start - len(ov.prefix)
    return Fix(title=title, edits=(Edit(start=start, end=ov.key_span.start, replacement=new_prefix),))


def _setting(launch: Launch, key: str, besides: Override | None = None) -> list[Override]:
    """The launch's overrides that set `key` (a `~key` deletes it: that is no setting)."""
    return [o for o in launch.overrides if o is not besides and o.key == key and o.prefix != "~"]


def _set_already(sugg: list[str], launch: Launch) -> str:
    """Say so when the launch sets the only suggestion already: renaming is then no fix (and a
    scenario where it does not is told apart, so its fix is not taken for this one's)."""
    also = _setting(launch, sugg[0]) if len(sugg) == 1 else []
    return f" (the launch sets it already, line {also[0].span.line})" if also else ""


def _rename_fix(ov: Override, new_key: str, applicability: Literal["safe", "unsafe"],
                launch: Launch) -> Fix | None:
    """Rename the override's key — never onto a key the launch already sets: the launch would
    then set it twice and the later value would silently win. When both say the same (literal
    values), the old override is only to drop: the fix deletes it."""
    if not _literal_key(ov):
        return None
    if any(o.key == new_key and o.prefix == "~" for o in launch.overrides):
        return None  # `~new_key` too: whether the renamed word then needs a `+` is the order's
    already = _setting(launch, new_key, besides=ov)
    if not already:
        return Fix(title=f"Rename to '{new_key}'", applicability=applicability,
                   edits=(Edit(start=ov.key_span.start, end=ov.key_span.end, replacement=new_key),))
    if ov.value_span is None or any(o.value_span is None or o.value != ov.value for o in already):
        return None  # different values, or values from variables that may differ per scenario
    # the word only: `checked_fix` widens it to the element or continuation line it stands on
    return Fix(title=f"Remove it: '{new_key}' is set to {ov.value} already",
               applicability=applicability,
               edits=(Edit(start=ov.span.start, end=ov.span.end, replacement=""),))

# what a key that only follows from a misplaced group override can be reported as
_CONSEQUENTIAL = ("unknown-key", "not-a-field", "missing-plus", "renamed")


def _brought_by(moved: dict, base: dict, parts: tuple[str, ...]) -> bool:
    """Is the key, or its deepest ancestor in `moved`, a node `base` lacks — i.e. does the key
    lie in a section the group override brings (`actor.megatron.grad_offload`, renamed in that
    section, included)?"""
    for i in range(len(parts), 0, -1):
        if hs.lookup(moved, parts[:i]) is not hs.ABSENT:
            return hs.lookup(base, parts[:i]) is hs.ABSENT
    return False


def _mark_consequences(an: _Analyzer) -> None:
    """A group override written under a role (`actor_rollout_ref.actor.model_engine=megatron`,
    whose fix moves it to `model_engine=megatron`) makes every key of that group's config look
    unknown (`actor.megatron.*`). Those findings follow from it: they say so and carry no fix of
    their own, so `--fix` moves the group first and judges the rest on the fixed text."""
    for cause in an.problems:
        ov = cause.override
        if cause.kind != "unknown-key" or cause.fix is None or ov is None or \
                len(cause.suggestions) != 1 or not isinstance(ov.value, str):
            continue
        group = cause.suggestions[0]
        if not an.release.is_group(an.entry, group):
            continue
        moved = f"{group}={ov.value}"
        tree = composed(an.release, an.entry, an.name, (*an._group_texts, moved))
        if not isinstance(tree, dict):
            continue
        for p in an.problems:
            if p is cause or p.caused_by is not None or p.kind not in _CONSEQUENTIAL or \
                    not _brought_by(tree, an.base, tuple(p.key.split("."))):
                continue
            p.caused_by, p.fix = ov, None
            # a guess elsewhere in the tree is moot once the group is chosen
            p.message = p.message.removesuffix(_did_you_mean(p.suggestions))
            p.suggestions = []
            p.message += f"; it exists once '{moved}' selects the group (line {ov.span.line}): " \
                         "fix that first"

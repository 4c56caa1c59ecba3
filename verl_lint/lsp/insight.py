"""What the editor asks about a script besides diagnostics: hover text and key completions.

Pure functions of (source, settings, chosen verl version); the server wraps them in LSP types.
One `Insight` per document version; the shell model, scenario runs and launch analyses are
computed on first use and shared by every hover/completion request on that version.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from functools import cached_property
from typing import TYPE_CHECKING, Any, Iterator

from verl_lint.source import SourceText

if TYPE_CHECKING:
    from verl_lint.evaluate.model import Launch, Override
    from verl_lint.settings import Settings
    from verl_lint.verl.analysis import LaunchAnalysis
    from verl_lint.verl.choice import VersionChoice

_KEY_CHARS = re.compile(r"[A-Za-z0-9_.@+~\-]*$")
# `key=partial value` before the cursor, the key as Hydra reads it (prefix, optional package)
_VALUE_BEFORE = re.compile(r"(?:^|[\s\"'(])[+~]*(?P<key>[A-Za-z_][\w.\-]*)(?:@[\w.\-]*)?="
                           r"(?P<typed>[\w.\-]*)$")
_UNKNOWN_KINDS = ("unknown-key", "not-a-field")


@dataclass(frozen=True)
class KeyCompletion:
    label: str  # the next key segment
    key: str  # the full dotted key it completes to
    leaf: bool
    default: Any = None
    needs_plus: bool = False  # the word must start with `+` (and does not yet)
    open_dict: bool = False  # a dict field (`engine_kwargs.vllm: {}`): keys under it need `+`
    type: str | None = None  # the dataclass annotation, else the default's YAML type
    doc: str | None = None  # verl's YAML comment for the key


@dataclass(frozen=True)
class ValueCompletion:
    label: str  # the value as it is written after `=`
    detail: str  # where the choice comes from
    default: bool = False  # verl's default for the key


def _fed_by(ov: "Override") -> str:
    """Where the variables in an override's value were assigned (`, $PP from line 30`)."""
    if not ov.fed_by:
        return ""
    names = ", ".join(f"${v}" for v in ov.variables)
    lines = ", ".join(str(span.line) for span in ov.fed_by)
    return f", {names or 'value'} from line{'s' if len(ov.fed_by) > 1 else ''} {lines}"


def _selects_group(analysis: "LaunchAnalysis", ov: "Override") -> bool:
    """Whether the override chose a config group's option (Hydra composes it in)."""
    return any(g.split("=", 1)[0].lstrip("+~") == ov.key for g in analysis.group_overrides)


def _unique(messages: Iterator[str]) -> str:
    return "; ".join(dict.fromkeys(messages))


def _fmt(value: Any) -> str:
    text = value if isinstance(value, str) else str(value)
    return f"`{text}`" if "`" not in text else text


def _yaml_type(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if value is None:
        return "null"
    return {int: "int", float: "float", str: "str", list: "list", dict: "dict"}.get(
        type(value), type(value).__name__)


class Insight:
    def __init__(self, source: SourceText, settings: "Settings",
                 version: "VersionChoice | str | None") -> None:
        self.source = source
        self.settings = settings
        self._choice = None if isinstance(version, str) else version
        self._version = version if isinstance(version, str) else None
        self._analyses: dict[int, "LaunchAnalysis | None"] = {}
        self._bare: dict[tuple, "Launch"] = {}

    # --- pipeline, lazily ------------------------------------------------------------------

    @cached_property
    def model(self):
        from verl_lint.shell import parse_script

        return parse_script(self.source)

    @cached_property
    def choice(self) -> "VersionChoice":
        """Which verl the document is judged against (hover names it): what the lint used,
        else what it would choose."""
        if self._choice is not None:
            return self._choice
        if self._version:
            from verl_lint.verl.choice import choose_version

            return choose_version(cli=self._version)
        return self.settings.choose_verl_version(self.source.text, self.source.path)

    @cached_property
    def version(self) -> str:
        return self.choice.version

    @cached_property
    def release(self):
        from verl_lint.verl.release import release_for

        return release_for(self.choice)

    @cached_property
    def runs(self) -> list:
        from verl_lint.evaluate import evaluate_script

        return evaluate_script(self.model, device=self.settings.device,
                               pins=dict(self.settings.pins) or None,
                               known_env=frozenset(self.settings.known_env))

    def analysis(self, launch: "Launch") -> "LaunchAnalysis | None":
        if id(launch) not in self._analyses:
            from verl_lint.verl.analysis import analyze_launch

            try:
                self._analyses[id(launch)] = analyze_launch(
                    self.release, launch, self.settings.workspace(self.source.path))
            except Exception:  # a hover must not take the server down; diagnostics report it
                self._analyses[id(launch)] = None
        return self._analyses[id(launch)]

    def launches(self) -> Iterator[tuple[str, "Launch"]]:
        for run in self.runs:
            for launch in run.launches:
                yield run.scenario.label, launch

    # --- hover -----------------------------------------------------------------------------

    def hover(self, offset: int) -> tuple[str, tuple[int, int]] | None:
        """Markdown and the byte range it describes, or None."""
        return self._hover_suppression(offset) or self._hover_key(offset)

    @cached_property
    def suppressions(self):
        """The directives as the engine reads them (`verl_lint.suppressions`)."""
        from verl_lint.suppressions import parse_suppressions

        return parse_suppressions(self.source, self.model)

    def _hover_suppression(self, offset: int) -> tuple[str, tuple[int, int]] | None:
        from verl_lint.rules.registry import get_rule

        for directive in self.suppressions.directives:
            for c in directive.codes:
                if not c.span.start <= offset <= c.span.end:
                    continue
                if c.code is None:
                    text = f"`{c.token}`: no verl-lint rule has this code or name"
                elif c.code == "ALL":
                    text = f"`{c.token}`: suppresses every verl-lint rule"
                else:
                    rule = get_rule(c.code)
                    text = (f"**{rule.code}** `{rule.name}` ({rule.severity.value})\n\n"
                            f"{rule.summary}\n\n[Documentation]({rule.url()})")
                return text, (c.span.start, c.span.end)
        return None

    def overrides_at(self, offset: int) -> list[tuple[str, "Launch", "Override"]]:
        """The overrides whose word (key, `=` or value) holds the offset, per scenario."""
        out = []
        for label, launch in self.launches():
            for ov in launch.overrides:
                if ov.span.start <= offset <= ov.span.end or \
                        ov.key_span.start <= offset <= ov.key_span.end:
                    out.append((label, launch, ov))
        return out

    def _hover_key(self, offset: int) -> tuple[str, tuple[int, int]] | None:
        """On an override's key or value: the key's effective value and where it comes from
        (per scenario when they differ), verl's default and comment, and what the launch was
        judged against; on a key verl does not have, that it is unknown."""
        hits = self.overrides_at(offset)
        if not hits:
            return None
        _, first_launch, first = hits[0]
        key = first.key.split("@", 1)[0]
        on_key = first.key_span.start <= offset <= first.key_span.end
        where = (first.key_span.start, first.key_span.end) if on_key or first.value_span is None \
            else (first.value_span.start, first.value_span.end)
        rows, unknown = [], []
        for label, launch, ov in hits:
            analysis = self.analysis(launch)
            problem = next((p for p in analysis.problems if p.override is ov
                            and p.kind in _UNKNOWN_KINDS), None) if analysis else None
            if problem is not None:
                unknown.append((label, problem.message))
                continue
            config = analysis.config if analysis is not None else None
            resolved = config.get(key) if config is not None else None
            if resolved is not None:
                # a group option (`model_engine=megatron`) is composed in, not a value override
                own = resolved.origin.span == ov.span or _selects_group(analysis, ov)
                origin = resolved.describe() if resolved.origin.span == ov.span or not own \
                    else f"config group option, set at line {ov.span.line}"
                rows.append((label, _fmt(resolved.value), origin + (_fed_by(ov) if own else "")))
            else:
                value = "(deleted with ~)" if ov.prefix == "~" else \
                    ov.value if ov.value is not None else "(no value)"
                rows.append((label, _fmt(value), f"set at line {ov.span.line}"
                             + ("" if config is not None else "; config not resolved")))
        lines = [f"**`{key}`**", ""]
        if unknown and not rows:
            lines += [f"Unknown key: {_unique(m for _, m in unknown)}"]
        else:
            if unknown:  # known in some scenarios only (another config or group there)
                rows += [(label, "(unknown key)", message) for label, message in unknown]
            if len({(v, o) for _, v, o in rows}) == 1:
                lines.append(f"Effective value: {rows[0][1]} ({rows[0][2]})")
            else:
                lines += ["| scenario | effective value | origin |", "|---|---|---|"]
                lines += [f"| {lab or '(all)'} | {v} | {o} |" for lab, v, o in rows]
            default = self.verl_default(first_launch, key)
            if default is not _NOTHING:
                lines += ["", f"verl default: {_fmt(default)}"]
            comment = self.yaml_comment(key)
            if comment:
                lines += ["", "\n".join(f"> {c}" for c in comment.splitlines())]
        lines += ["", self.judged_against(first_launch)]
        return "\n".join(lines), where

    def judged_against(self, launch: "Launch") -> str:
        """Which verl source and config files the launch was judged against, for hover: the
        chosen verl (a bundled release's data or a verl tree on disk, and why), the entry point
        and the config file. The one place hover says so: a new kind of source adds its words
        here."""
        from verl_lint import __version__
        from verl_lint.verl.analysis import entry_module

        choice = self.choice
        text = f"Judged against {choice.describe()}"
        if choice.kind == "bundled":
            text += f": the release data bundled with verl-lint {__version__}"
        analysis = self.analysis(launch)
        module = entry_module(launch)
        entry = self.release.entry_point(module) if module else None
        if entry is not None and analysis is not None and analysis.config_name:
            where = f"{choice.path}/" if choice.path else ""
            text += f"; entry point `{module}`, config `{where}{entry.config_dir}/" \
                    f"{analysis.config_name}.yaml`"
            if analysis.group_overrides:
                text += " with " + ", ".join(f"`{g}`" for g in analysis.group_overrides)
        elif analysis is not None and analysis.unresolved:
            text += f"; config not resolved: {analysis.unresolved}"
        return text + "."

    def verl_default(self, launch: "Launch", key: str) -> Any:
        """verl's default for `key`: its value in the launch's config composed without the
        script's overrides."""
        analysis = self.bare_analysis(launch)
        resolved = analysis.config.get(key) if analysis and analysis.config else None
        return _NOTHING if resolved is None else resolved.value

    def bare_analysis(self, launch: "Launch") -> "LaunchAnalysis | None":
        """The analysis of the launch's entry point and config without the script's overrides
        (verl's defaults), once per (entry point, config)."""
        key = (launch.module, launch.script, str(launch.config_path), str(launch.config_name))
        bare = self._bare.get(key)
        if bare is None:
            bare = self._bare[key] = replace(launch, overrides=[], passthrough=[])
        return self.analysis(bare)

    def yaml_comment(self, key: str) -> str | None:
        from verl_lint.lsp.yaml_docs import key_comment

        return key_comment(self.version, key)

    # --- completion ------------------------------------------------------------------------

    def in_launch(self, offset: int) -> bool:
        """Whether the offset is in a verl launch's command or in an array of its overrides:
        the only places a Hydra key is typed."""
        for _, launch in self.launches():
            if launch.span.start <= offset <= launch.span.end:
                return True
            arrays: dict[str, list[int]] = {}
            for ov in launch.overrides:
                if ov.array is not None:
                    arrays.setdefault(ov.array, []).extend((ov.span.start, ov.span.end))
            if any(min(at) <= offset <= max(at) for at in arrays.values()):
                return True
        return False

    def key_prefix(self, offset: int) -> tuple[str, int] | None:
        """The override-key text before the cursor and its byte start, if the cursor is in one."""
        before = self._line_before(offset)
        m = _KEY_CHARS.search(before)
        word = m.group() if m else ""
        typed = word.lstrip("+~")
        # after `=` it is a value; a key starts with a letter or `_`
        if before[: m.start()].endswith("=") or not typed or not (typed[0].isalpha()
                                                                  or typed[0] == "_"):
            return None
        return word, offset - len(word.encode())

    def _line_before(self, offset: int) -> str:
        line0 = self.source.line_of(offset)
        return self.source.data[self.source.line_starts[line0]:offset].decode("utf-8", "replace")

    @cached_property
    def schema(self) -> tuple[dict[str, Any], dict[str, Any]]:
        """(every key of the release's config for this script's entry point → default, the
        keys only `+` can add → None); the same for every edit, so cached per entry point."""
        for _, launch in self.launches():
            key = (self.version, launch.module, launch.script, str(launch.config_path),
                   str(launch.config_name))
            if key in _SCHEMAS:
                return _SCHEMAS[key]
            analysis = self.bare_analysis(launch)
            if analysis is not None and analysis.config is not None:
                config = analysis.config
                keys = {k: config.value(k) for k in config.keys()}
                _SCHEMAS[key] = (keys, self.plus_fields(keys))
                return _SCHEMAS[key]
        return {}, {}

    def plus_fields(self, schema: dict[str, Any]) -> dict[str, Any]:
        """Keys Hydra only accepts with `+`: fields of a `_target_` dataclass that verl's YAML
        leaves out (the dataclass default applies unless the script adds them)."""
        present = set(schema)
        for key in schema:  # every ancestor node counts as present too
            parts = key.split(".")
            present.update(".".join(parts[:i]) for i in range(1, len(parts)))
        out: dict[str, Any] = {}
        for key, target in schema.items():
            if key.endswith("._target_"):
                node = key[: -len("._target_")]
                for name in self.release.fields_of(target) or {}:
                    if f"{node}.{name}" not in present:
                        out[f"{node}.{name}"] = None
        return out

    def completions(self, offset: int) -> tuple[list[KeyCompletion], int] | None:
        """Next-segment completions for the key before the cursor, and the byte offset where
        the segment being typed starts."""
        found = self.key_prefix(offset)
        if found is None or not self.in_launch(offset):
            return None
        word, word_start = found
        typed = word.lstrip("+~")
        plus_typed = word.startswith("+")
        parent, _, partial = typed.rpartition(".")
        seg_start = offset - len(partial.encode())
        items: dict[str, KeyCompletion] = {}
        schema, plus = self.schema
        for keys, needs_plus in ((schema, False), (plus, True)):
            for key, default in keys.items():
                if parent and not key.startswith(parent + "."):
                    continue
                rest = key[len(parent) + 1:] if parent else key
                seg = rest.split(".", 1)[0]
                if not seg.startswith(partial) or seg.startswith("_"):
                    continue
                leaf = seg == rest
                prev = items.get(seg)
                if prev is not None and not prev.needs_plus:
                    continue
                open_dict = leaf and isinstance(default, dict) and not default
                full = (parent + "." if parent else "") + seg
                items[seg] = KeyCompletion(
                    label=seg, key=full, leaf=leaf,
                    default=default if leaf else None, open_dict=open_dict,
                    needs_plus=(needs_plus and leaf or open_dict) and not plus_typed,
                    type=self.key_type(full, default, schema) if leaf else None,
                    doc=self.yaml_comment(full))
        return sorted(items.values(), key=lambda c: (c.needs_plus, c.label)), seg_start

    def key_type(self, key: str, default: Any, schema: dict[str, Any]) -> str:
        """The annotation of the dataclass field behind `key` (`Optional[int]`), else the YAML
        type of verl's default."""
        node, _, name = key.rpartition(".")
        fields = self.release.fields_of(schema.get(f"{node}._target_")) or {}
        return fields.get(name) or _yaml_type(default)

    def value_completions(self, offset: int) -> tuple[list[ValueCompletion], int] | None:
        """After `key=` in a launch: the values the key takes (its enum in this release, the
        options of a config group, true/false for a boolean), and where the typed value
        starts."""
        m = _VALUE_BEFORE.search(self._line_before(offset))
        if m is None or not self.in_launch(offset):
            return None
        key, typed = m.group("key"), m.group("typed")
        schema, _ = self.schema
        default = schema.get(key, _NOTHING)
        items: list[ValueCompletion] = []
        enum = self.release.enum_for(key)
        options = self.group_options(key)
        if enum is not None:
            values, open_registry, _ = enum
            note = "registered in verl" + (" (plugins may add more)" if open_registry else "")
            items = [ValueCompletion(v, note, v == default) for v in values]
        elif options is not None:
            items = [ValueCompletion(v, f"option of config group {key}") for v in options]
        elif isinstance(default, bool):
            items = [ValueCompletion(v, "bool", (v == "true") == default)
                     for v in ("true", "false")]
        items = [c for c in items if c.label.startswith(typed)]
        return (items, offset - len(typed.encode())) if items else None

    def group_options(self, key: str) -> list[str] | None:
        """The options of the config group `key` names (`model_engine` → dp, megatron, …) for
        the entry point of this script's launches."""
        from verl_lint.verl.analysis import entry_module

        for _, launch in self.launches():
            module = entry_module(launch)
            entry = self.release.entry_point(module) if module else None
            if entry is not None:
                options = self.release.group_options(entry, key.replace(".", "/"))
                if options is not None:
                    return [o for o in options if not o.startswith("_")]
        return None


_NOTHING = object()
_SCHEMAS: dict[tuple, tuple[dict[str, Any], dict[str, Any]]] = {}

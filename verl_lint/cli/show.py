"""`verl-lint show SCRIPT`: what verl-lint understands of a script.

For each scenario (device branch, or what --device/--set pin), each verl launch with its Hydra
overrides as they reach verl: key, value after shell expansion (or why it is unknown), and the
script line. `--effective KEY` adds the value verl ends up with, and where it comes from.
This is the way to debug every later stage: a rule can only be as right as this view. It runs
under the settings `check` uses for the script (config file, then the command line).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Sequence

import click

from verl_lint.evaluate.model import Launch, Override, ScenarioRun, Unknown


class ShowError(Exception):
    """A problem with the input (exit 2, no traceback)."""


def _fmt(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, Unknown):
        return str(value)
    if isinstance(value, (list, dict, bool)):
        return json.dumps(value)
    return str(value)


def _json_value(value: Any) -> Any:
    if isinstance(value, Unknown):
        return {"unknown": value.reason}
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if isinstance(value, (list, tuple)):
        return [_json_value(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _json_value(v) for k, v in value.items()}
    return str(value)


def load(path: str):
    """(SourceText, ScriptModel) or ShowError with a one-line reason."""
    from verl_lint.fileio import read_script
    from verl_lint.shell import parse_script

    p = Path(path)
    if not p.exists():
        raise ShowError(f"{path}: no such file")
    if p.is_dir():
        raise ShowError(f"{path}: is a directory; `show` takes one script "
                        f"(use `verl-lint {path}` to lint a folder)")
    source, problem = read_script(p)
    if source is None:
        raise ShowError(f"{path}: {problem}")
    model = parse_script(source)
    if model.unread:
        raise ShowError(f"{path}: {model.unread}")
    return source, model


def judged_against(launch: Launch, release, workspace, choice) -> tuple[dict[str, Any], Any]:
    """({"verl": which verl, "config": the config folder/name/search path composed, or None,
    "unresolved": why not}, the launch's analysis): what `show` says a launch is judged against."""
    from verl_lint.verl.analysis import analyze_launch

    analysis = analyze_launch(release, launch, workspace)
    ep = analysis.entry_point
    config = None if ep is None else {
        "folder": ep.config_dir, "name": analysis.config_name or ep.config_name,
        "search": list(ep.search), "entry_point": ep.evidence}
    why = analysis.unresolved or analysis.absent_module or analysis.not_hydra
    return {"verl": choice.as_json(), "describe": choice.describe(), "config": config,
            "unresolved": why}, analysis


def effective_entries(analysis, patterns: Sequence[str], version: str,
                      groups: "GroupOrigins | None" = None) -> dict[str, Any]:
    """{"version", "entries": [(key, value, origin)], "unresolved"} for `--effective`;
    `groups` names the group override behind a default."""
    out: dict[str, Any] = {"version": version, "entries": [], "unresolved": None}
    config = analysis.config
    if config is None:
        out["unresolved"] = analysis.unresolved or analysis.absent_module or \
            analysis.not_hydra or "the launch's config cannot be resolved"
        return out
    for pattern in patterns:
        keys = sorted(k for k in config.keys() if k == pattern or k.startswith(pattern + "."))
        if not keys:
            out["entries"].append((pattern, None, "not in the effective config"))
        for k in keys:
            r = config.get(k)
            out["entries"].append((k, r.value, _origin(r, groups)))
    return out


def _origin(r, groups: "GroupOrigins | None") -> str:
    """`r.describe()`, with "verl default" named after the group override that chose it."""
    if groups is None:
        return r.describe()
    if r.origin.kind == "default":
        return groups.origin(r.key) or "verl default"
    if r.origin.kind == "inherited" and r.inherited_origin is not None and \
            r.inherited_origin.kind == "default":
        return f"{r.origin.describe()}, {groups.origin(r.origin.from_key) or 'verl default'}"
    return r.describe()


class GroupOrigins:
    """Which group override of a launch (`model_engine=megatron`, line 102) gives a key its
    value: the group's own key, or a default only that group's config has. The effective
    config calls both "verl default"; the user wrote the line that chose them."""

    def __init__(self, release, launch: Launch, analysis) -> None:
        self.release, self.analysis = release, analysis
        self.entry = analysis.entry_point
        texts = set(analysis.group_overrides)
        self.groups = [(o, text) for o in launch.overrides
                       if isinstance(o.text, str) and (text := o.text) in texts]
        self._without: dict[str, Any] = {}

    def origin(self, key: str) -> str | None:
        from verl_lint.verl import hydra_semantics as hs

        if self.entry is None or self.analysis.base is None:
            return None
        parts = tuple(key.split("."))
        for o, text in self.groups:
            line = o.span.line
            if o.key.split("@", 1)[0].lstrip("+") == key:
                return f"set at line {line} by the config group override {text}"
            without = self._tree_without(text)
            if isinstance(without, dict) and \
                    hs.lookup(without, parts) != hs.lookup(self.analysis.base, parts):
                return f"default of the config group {text}, chosen at line {line}"
        return None

    def _tree_without(self, text: str) -> Any:
        from verl_lint.verl.configs import composed

        if text not in self._without:
            rest = tuple(t for t in self.analysis.group_overrides if t != text)
            self._without[text] = composed(self.release, self.entry,
                                           self.analysis.config_name, rest)
        return self._without[text]


def _override_row(o: Override) -> dict[str, Any]:
    return {
        "prefix": o.prefix, "key": o.key, "value": _json_value(o.value),
        "text": _json_value(o.text), "line": o.span.line, "column": o.key_span.column,
        "array": o.array, "variables": list(o.variables),
    }


def to_json(path: str, model, runs: list[ScenarioRun], effective: dict | None,
            judged: dict) -> dict:
    scenarios = []
    for si, run in enumerate(runs):
        launches = []
        for li, launch in enumerate(run.launches):
            item = {
                "line": launch.span.line, "module": launch.module, "script": launch.script,
                "launcher": launch.launcher, "config_path": _json_value(launch.config_path),
                "config_name": _json_value(launch.config_name),
                "overrides": [_override_row(o) for o in launch.overrides],
                "passthrough": [{"line": p.span.line, "reason": p.reason}
                                for p in launch.passthrough],
                "verl": judged[(si, li)]["verl"], "config": judged[(si, li)]["config"],
                "unresolved": judged[(si, li)]["unresolved"],
            }
            if effective is not None:
                eff = effective[(si, li)]
                item["effective"] = {
                    "verl_version": eff["version"], "unresolved": eff["unresolved"],
                    "entries": [{"key": k, "value": _json_value(v), "origin": o}
                                for k, v, o in eff["entries"]]}
            launches.append(item)
        scenarios.append({
            "label": run.scenario.label, "device": run.scenario.device,
            "pins": dict(run.scenario.pins), "nounset": run.nounset,
            "visible_devices": _json_value(run.visible_devices), "launches": launches,
        })
    return {"path": path,
            "parse_errors": [{"line": e.span.line, "column": e.span.column,
                              "message": e.message} for e in model.errors],
            "scenarios": scenarios}


def print_table(path: str, model, runs: list[ScenarioRun], effective: dict | None,
                judged: dict) -> None:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    console = Console(width=None if sys.stdout.isatty() else 200, highlight=False)
    console.print(f"[bold]{escape(path)}[/bold]")
    for e in model.errors:
        console.print(f"  [red]parse error[/red] line {e.span.line}:{e.span.column}: "
                      f"{escape(e.message)}")
    for si, run in enumerate(runs):
        sc = run.scenario
        title = f"scenario {sc.label}" if sc.label else "single scenario"
        extra = [f"set -u: {'on' if run.nounset else 'off'}"]
        if run.visible_devices is not None:
            extra.append(f"visible devices: {_fmt(run.visible_devices)}")
        console.print(f"\n[bold cyan]{escape(title)}[/bold cyan] ({escape(', '.join(extra))})")
        if not run.launches:
            console.print("  no verl launch found")
        for li, launch in enumerate(run.launches):
            entry = launch.module or launch.script or "?"
            bits = [f"line {launch.span.line}", launch.launcher, entry]
            if launch.config_path is not None:
                bits.append(f"--config-path {_fmt(launch.config_path)}")
            if launch.config_name is not None:
                bits.append(f"--config-name {_fmt(launch.config_name)}")
            table = Table(title=escape(" · ".join(bits)), title_justify="left")
            table.add_column("line", justify="right", style="dim")
            # keys are what the user greps for: never cut; the value column wraps instead
            keys = [f"{o.prefix}{o.key}" for o in launch.overrides] or [""]
            table.add_column("key", no_wrap=True, min_width=max(map(len, keys)))
            table.add_column("value", overflow="fold")
            table.add_column("from", style="dim")
            for o in launch.overrides:
                source = [f"{o.array}[@]"] if o.array else []
                source += [f"${v}" for v in o.variables]
                table.add_row(str(o.span.line), escape(f"{o.prefix}{o.key}"),
                              escape(_fmt(o.value)), escape(" ".join(source)))
            for p in launch.passthrough:
                table.add_row(str(p.span.line), "[italic]…[/italic]",
                              f"[italic]{escape(p.reason)}[/italic]", "")
            console.print(table)
            seen = judged[(si, li)]
            console.print(f"  judged against {seen['describe']}", markup=False)
            if seen["config"] is not None:
                c = seen["config"]
                search = f" (search path: {', '.join(c['search'])})" if c["search"] else ""
                console.print(f"  config {c['name']} from {c['folder']}{search}", markup=False)
            if seen["unresolved"]:
                console.print(f"  config not resolved: {seen['unresolved']}", markup=False)
            if effective is not None:
                eff = effective[(si, li)]
                console.print(f"  effective config (verl {eff['version']}):")
                if eff["unresolved"]:
                    console.print(f"    unavailable: {eff['unresolved']}", markup=False)
                for k, v, origin in eff["entries"]:
                    if v is None and origin == "not in the effective config":
                        console.print(f"    {k}: {origin}", markup=False)
                    else:
                        shown = "null" if v is None else _fmt(v)
                        console.print(f"    {k} = {shown} ({origin})", markup=False)


def run_show(script: str, device: str | None, set_: Sequence[str], fmt: str,
             effective: Sequence[str], verl_version: str | None) -> int:
    from verl_lint.cli.check import UsageError, check_verl_version, device_mismatch, parse_pins
    from verl_lint.evaluate import evaluate_script
    from verl_lint.engine import file_budget, gave_up, unexpected_error
    from verl_lint.settings import SettingsError, SettingsResolver
    from verl_lint.verl.release import release_for

    try:
        # the settings `check` would use for this script: its config file plus these options
        cli = {"device": device, "pins": parse_pins(set_),
               "verl_version": check_verl_version(verl_version)}
        settings = SettingsResolver(cli)(Path(script))
        # the same time budget and error handling as `check`: one line, never a traceback
        with file_budget() as budget:
            source, model = load(script)
            mismatch = device_mismatch(source, settings.device, dict(settings.pins))
            if mismatch:
                raise ShowError(f"{script}: {mismatch}")
            runs = evaluate_script(model, device=settings.device,
                                   pins=dict(settings.pins) or None,
                                   known_env=frozenset(settings.known_env))
            choice = settings.choose_verl_version(source.text, script)
            release = release_for(choice)
            workspace = settings.workspace(script)
            judged, eff = {}, None
            for si, run in enumerate(runs):
                for li, launch in enumerate(run.launches):
                    judged[(si, li)], analysis = judged_against(launch, release, workspace,
                                                                choice)
                    if effective:
                        eff = eff or {}
                        eff[(si, li)] = effective_entries(
                            analysis, effective, choice.version,
                            GroupOrigins(release, launch, analysis))
            if effective and eff is None:
                eff = {}
        if budget.expired:
            raise ShowError(f"{script}: {gave_up(budget)}")
    except (ShowError, UsageError, SettingsError) as exc:
        click.echo(f"error: {exc}", err=True)
        return 2
    except Exception as exc:  # noqa: BLE001
        click.echo(f"error: {script}: {unexpected_error(exc, 'in show')}", err=True)
        return 2
    if fmt == "json":
        click.echo(json.dumps(to_json(script, model, runs, eff, judged), indent=2,
                              ensure_ascii=False))
    else:
        print_table(script, model, runs, eff, judged)
    return 0


@click.command("show")
@click.argument("script", type=click.Path())
@click.option("--device", help="Show only this device scenario (gpu, npu, …); default: the "
              "config file's `device`.")
@click.option("--set", "set_", multiple=True, metavar="VAR=VALUE",
              help="Pin a shell variable (repeatable).")
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table",
              show_default=True, help="Output format.")
@click.option("--effective", multiple=True, metavar="KEY_OR_PREFIX",
              help="Also print the effective value of these keys (repeatable; a prefix shows "
                   "every key under it).")
@click.option("--verl-version", metavar="X.Y.Z", help="verl release for --effective.")
def command(script: str, device: str | None, set_: tuple[str, ...], fmt: str,
            effective: tuple[str, ...], verl_version: str | None) -> None:
    """Print each scenario's verl launches and their overrides as verl-lint understands them."""
    sys.exit(run_show(script, device, set_, fmt, effective, verl_version))

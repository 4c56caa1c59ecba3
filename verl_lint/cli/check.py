"""`verl-lint check [PATHS…]` (also `verl-lint PATHS…`).

The command runs in four steps, each a function: `resolver_for` the options into settings,
`find_targets` (files, or stdin), `iter_reports` (the result cache, then the engine, serially or
with a process pool, a batch of files at a time) or, with a fix option,
`verl_lint.fixes.run_fix_mode`, then `report` (the chosen format or statistics, written as
the reports come) and the `Outcome`. Exit 0 when nothing at or above
`fail-on` was found, 1 when something was, 2 for a usage, configuration or internal error.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
from pathlib import Path
from typing import Any, Iterable, Iterator, Sequence

import click

from verl_lint.diagnostics import Severity
from verl_lint.records import shared_dataclass
from verl_lint.report import FORMATS

SEVERITIES = [s.value for s in Severity]


class UsageError(Exception):
    """A problem with the command line or the inputs (exit 2, no traceback)."""


# a docstring, and no `__eq__`: on Python < 3.13 each generated method is compiled at start-up
@shared_dataclass(frozen=True, eq=False)
class CheckOptions:
    """The options of one `check` run, as click parsed them."""

    paths: tuple[str, ...] = ()
    select: tuple[str, ...] = ()
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    output_format: str = "full"
    output: str | None = None
    fail_on: str | None = None
    exit_zero: bool = False
    statistics: bool = False
    device: str | None = None
    set_: tuple[str, ...] = ()
    verl_version: str | None = None
    verl_source: str | None = None
    config: str | None = None
    no_color: bool = False
    quiet: bool = False
    jobs: int | None = None
    stdin_filename: str | None = None
    force_exclude: bool = False
    show_settings: bool = False
    fix: bool = False
    unsafe_fixes: bool = False
    diff: bool = False
    show_fixes: bool = False
    add_suppressions: bool = False
    no_cache: bool = False
    watch: bool = False

    @property
    def fixing(self) -> bool:
        """A fix option is given: the files go through fixes.py, not the report-only path."""
        return self.fix or self.diff or self.show_fixes or self.add_suppressions


@shared_dataclass(frozen=True, eq=False)
class Target:
    """One thing to lint: a file on disk, or stdin's bytes (`data`) under `display`; `error`
    says why it will not be linted (a missing path, a device the script never tests)."""

    path: Path
    display: str
    data: bytes | None = None
    error: str | None = None


# compiled when first used (by `re`): most runs never check a version
_VERSION_TEXT = r"\d+(\.\d+){1,3}((a|b|rc)\d+)?(\.post\d+)?(\.dev\d+)?(\+[\w.]+)?"


def check_verl_version(value: str | None) -> str | None:
    """`--verl-version` must look like a release (`0.9.1`, `0.10.0.dev0`): anything else is a
    usage error, not a release to fall back from."""
    if value is not None and not re.fullmatch(_VERSION_TEXT, value.strip()):
        raise UsageError(f"--verl-version {value!r} is not a verl version (X.Y.Z, e.g. 0.9.1)")
    return value


def device_mismatch(source, device: str | None, pins=None) -> str | None:
    """Why the device pinned by `--device` (or `--set DEVICE=…`) is not a scenario of this
    script — it tests the device, but never for this one —, or None. Linting the way through
    no branch would report on a run nobody makes."""
    from verl_lint.evaluate.scenarios import device_branches, device_name
    from verl_lint.shell import parse_script

    if not device and not pins:
        return None
    var, values = device_branches(parse_script(source))
    device = device or (pins or {}).get(var or "DEVICE")
    if var is None or not values or not device:
        return None
    tested = {device_name(v) or v for v in values}
    if (device_name(device) or device) in tested:
        return None
    return (f"device {device!r} is not one this script tests (${var}: "
            f"{', '.join(values)}); nothing to lint for it")


def _split(values: Sequence[str]) -> tuple[str, ...]:
    # `--select VL1,VL2` and `--select VL1 --select VL2` mean the same
    return tuple(v.strip() for value in values for v in value.split(",") if v.strip())


def parse_pins(values: Sequence[str]) -> dict[str, str]:
    pins: dict[str, str] = {}
    for item in values:
        name, sep, value = item.partition("=")
        if not sep or not name.strip().isidentifier():
            raise UsageError(f"--set expects VAR=VALUE, got {item!r}")
        pins[name.strip()] = value
    return pins


def cli_overrides(opts: CheckOptions) -> dict[str, Any]:
    """The settings the command line gives (snake_case keys, as `load_settings` takes them)."""
    return {
        "select": _split(opts.select),
        "extend_select": _split(opts.extend_select),
        "ignore": _split(opts.ignore),
        "fail_on": opts.fail_on,
        "device": opts.device,
        "pins": parse_pins(opts.set_),
        "verl_version": check_verl_version(opts.verl_version),
        "verl_source": str(Path(opts.verl_source).absolute()) if opts.verl_source else None,
    }


def resolver_for(opts: CheckOptions):
    from verl_lint.settings import SettingsResolver

    config = Path(opts.config) if opts.config else None
    if config is not None and not config.is_file():
        raise UsageError(f"--config {opts.config}: "
                         f"{'is a directory' if config.is_dir() else 'no such file'}")
    return SettingsResolver(cli_overrides(opts), config)


def settings_for_args(args: Sequence[str], path: Path):
    """The settings `verl-lint check ARGS PATH` uses for PATH (rule fixtures, docs examples)."""
    ctx = command.make_context("check", [*args, str(path)])
    return resolver_for(CheckOptions(**ctx.params))(path)


def find_targets(opts: CheckOptions, settings_for) -> list[Target]:
    """The files to lint, in command-line order. A path that does not exist is a target with an
    error: reported, while the others are still linted (exit 2 at the end). A script that
    never tests the pinned device is told apart when it would be linted (`device_errors`,
    `_lint_ok`): one the result cache answers is not parsed for it."""
    from verl_lint.discovery import DiscoveryError, discover, display_name

    paths = list(opts.paths) or ["."]
    if "-" in paths:
        if len(paths) > 1:
            raise UsageError("`-` (stdin) cannot be combined with other paths")
        name = opts.stdin_filename or "-"
        path = Path(opts.stdin_filename) if opts.stdin_filename else Path.cwd() / "-"
        if opts.force_exclude and settings_for(path).is_excluded(path):
            return []
        from verl_lint.fileio import MAX_BYTES

        # bounded like a file (`verl-lint - < /dev/zero`); one byte more tells it is too large
        data = sys.stdin.buffer.read(MAX_BYTES + 1)
        return [Target(path, name, data, _device_error(data, name, settings_for(path)))]
    targets: list[Target] = []
    seen: set[str] = set()  # a file named twice, or reached twice, is linted once
    for given in paths:
        try:
            files = discover([Path(given)], settings_for.lenient,
                             force_exclude=opts.force_exclude, seen=seen)
        except DiscoveryError:
            targets.append(Target(Path(given), display_name(given),
                                  error="no such file or directory"))
            continue
        targets += [Target(f, display_name(f), error=_config_error(f, settings_for))
                    for f in files]
    if not targets and not opts.force_exclude:
        raise UsageError(f"no shell scripts (*.sh, or a bash/sh shebang) found in "
                         f"{', '.join(paths)}")
    return targets


def _pins_device(settings) -> bool:
    # only then is the script read before linting (a device variable is named like one)
    return bool(settings.device) or any("DEVICE" in k.upper() for k in settings.pins)


def _device_error(data: bytes, name: str, settings) -> str | None:
    from verl_lint.fileio import script_problem
    from verl_lint.source import SourceText

    if not _pins_device(settings) or script_problem(data) is not None:
        return None  # the engine reports unreadable input itself
    return device_mismatch(SourceText(data, name), settings.device, dict(settings.pins))


def _config_error(path: Path, settings_for) -> str | None:
    from verl_lint.settings import UnreadableConfig

    try:
        settings_for(path)
    except UnreadableConfig as exc:  # this file's configuration, not the run's
        return str(exc)
    return None


def _file_device_error(path: Path, settings) -> str | None:
    from verl_lint.fileio import read_bounded

    if not _pins_device(settings):
        return None
    data, _ = read_bounded(path)  # regular files only: the engine says what the others are
    return None if data is None else _device_error(data, str(path), settings)


def device_errors(targets: Sequence[Target], settings_for) -> list[Target]:
    """The targets, a script that never tests the pinned device (`--device`, `--set DEVICE=…`)
    with that as its error, as `--fix` needs them before it starts: nothing is fixed for a run
    nobody makes. (A report-only run tells it per file, `_lint_ok`.)"""
    from dataclasses import replace

    return [replace(t, error=_file_device_error(t.path, settings_for(t.path)))
            if t.error is None and t.data is None else t for t in targets]


def error_reports(targets: Sequence[Target], run) -> list:
    """FileReports in target order: `run(targets without error)` for those, an error report
    for the others."""
    from verl_lint.diagnostics import FileReport

    done = iter(run([t for t in targets if t.error is None]))
    return [FileReport(path=t.display, error=t.error) if t.error is not None else next(done)
            for t in targets]


STREAM_FILES = 256  # files linted before their reports are written and let go


def iter_reports(targets: Sequence[Target], settings_for, jobs: int | None,
                 cache: bool = False) -> Iterator:
    """FileReports in target order, linted `STREAM_FILES` at a time: a caller that writes
    each report and lets it go holds one batch of them, not the whole run."""
    from verl_lint.result_cache import ResultCache, enabled

    results = ResultCache() if cache and enabled() else None
    for start in range(0, len(targets), STREAM_FILES):
        yield from error_reports(targets[start:start + STREAM_FILES],
                                 lambda ok: _lint_ok(ok, settings_for, jobs, results))


def lint_reports(targets: Sequence[Target], settings_for, opts: CheckOptions) -> Iterator:
    """The reports of a report-only run (check, each `--watch` pass), linted while written:
    each file's report is let go once its output is out."""
    jobs = opts.jobs if opts.jobs != 0 else os.cpu_count() or 1  # None: the engine decides
    return once_per_run(iter_reports(targets, settings_for, jobs, cache=not opts.no_cache))


def _lint_ok(targets: Sequence[Target], settings_for, jobs: int | None, results) -> list:
    from verl_lint.result_cache import COLD_AFTER

    disk = [t for t in targets if t.data is None]
    # what the cache answers first: a run it answers whole never imports the engine and rules.
    # One whose first files all missed is cold: the engine asks for the rest in the processes
    # that lint them (unless a pinned device must be asked of each file before linting)
    defer = results is not None and jobs != 1 and len(disk) > COLD_AFTER and \
        not any(_pins_device(settings_for(t.path)) for t in disk)
    stored: list = results.look_up(((t.path, settings_for(t.path), t.display) for t in disk),
                                   defer=defer) if results else [None] * len(disk)
    unasked = disk[len(stored):]
    todo = [t for t, r in zip(disk, stored) if r is None]
    # a script that never tests the pinned device is not linted: asked of what the cache missed
    # only (an entry was made by linting the script, so it tests the device)
    skipped = {t.path: error for t in todo
               if (error := _device_skip(t, settings_for(t.path), results)) is not None}
    if skipped:
        from verl_lint.diagnostics import FileReport

        stored = [FileReport(path=t.display, error=skipped[t.path]) if t.path in skipped else r
                  for t, r in zip(disk, stored)]
        todo = [t for t in todo if t.path not in skipped]
    todo += unasked
    linted = iter(())
    if todo:
        from verl_lint.engine import lint_paths

        linted = iter(lint_paths([t.path for t in todo], settings_for, jobs=jobs,
                                 display={t.path: t.display for t in todo}.__getitem__,
                                 cache=results, looked_up=not unasked))
    by_path = iter([r if r is not None else next(linted) for r in stored + [None] * len(unasked)])
    return [next(by_path) if t.data is None else _lint_bytes(t, settings_for(t.path))
            for t in targets]


def _device_skip(t: Target, settings, results) -> str | None:
    if not _pins_device(settings):
        return None
    # the script the cache read to look it up, which the engine then lints: read once
    source = results.pending(t.path, keep=True).source if results is not None else None
    if source is None:
        return _file_device_error(t.path, settings)
    return _device_error(source.data, str(t.path), settings)


def _lint_bytes(t: Target, settings):
    from verl_lint.diagnostics import FileReport
    from verl_lint.engine import lint_with_budget
    from verl_lint.fileio import script_problem
    from verl_lint.source import SourceText

    problem = script_problem(t.data)
    if problem is not None:
        return FileReport(path=t.display, error=problem)
    return lint_with_budget(SourceText(t.data, t.display), settings, path=t.display)


ONCE_PER_RUN = "VL003"  # an unbundled verl version: the same for every file it applies to


def once_per_run(reports: Iterable) -> Iterator:
    """The same run-wide finding (VL003: this verl version has no bundled data) is reported on
    the first file only, not once per file."""
    seen: set[str] = set()
    for r in reports:
        keep = []
        for d in r.diagnostics:
            again = d.code == ONCE_PER_RUN and d.message in seen
            if d.code == ONCE_PER_RUN:
                seen.add(d.message)
            keep.append(not again)
        if not all(keep):
            r.diagnostics = [d for d, k in zip(r.diagnostics, keep) if k]
            if r.json_texts is not None:  # kept in step
                r.json_texts = tuple(t for t, k in zip(r.json_texts, keep) if k)
        yield r


class Outcome:
    """The exit status, worked out report by report: 2 when a file could not be linted, else
    1 when a finding is at or above its file's `fail-on` (unless `--exit-zero`), else 0."""

    def __init__(self, settings_for, opts: CheckOptions) -> None:
        self.settings_for = settings_for
        self.exit_zero = opts.exit_zero
        self.failed = self.found = False

    def add(self, r) -> None:
        if r.error is not None:
            self.failed = True
        if r.diagnostics and not self.found:
            threshold = self.settings_for(Path(r.path)).fail_on.rank
            self.found = any(d.severity.rank >= threshold for d in r.diagnostics)

    def status(self) -> int:
        return 2 if self.failed else 0 if self.exit_zero else 1 if self.found else 0


def _use_color(opts: CheckOptions, stream) -> bool:
    if opts.no_color or opts.output or os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    return bool(getattr(stream, "isatty", lambda: False)())


def _print_error(r) -> None:
    """The error line of a file that could not be linted."""
    if r.error is not None:
        click.echo(f"error: {r.path}: {r.error}", err=True)


def report(reports: Iterable, opts: CheckOptions, outcome: Outcome | None = None) -> None:
    """Write the reports in the chosen format (or the statistics) as they come, and the error
    lines of files that could not be linted; `outcome` sees each report."""
    from verl_lint.fileio import open_for_replace
    from verl_lint.report import RenderOptions, Statistics, renderer

    # a report file is replaced only once it is complete: a failing render keeps the old one
    with open_for_replace(opts.output) if opts.output else contextlib.nullcontext(sys.stdout) \
            as out:
        options = RenderOptions(color=_use_color(opts, out), quiet=opts.quiet)
        sink = Statistics(out, options) if opts.statistics else \
            renderer(opts.output_format, out, options)
        for r in reports:
            _print_error(r)
            if outcome is not None:
                outcome.add(r)
            _unless_reader_left(sink.add, r)
        _unless_reader_left(sink.finish)


def _unless_reader_left(write, *args) -> None:
    try:
        write(*args)
    except BrokenPipeError:
        # `verl-lint … | head`: the reader left; the rest goes nowhere, the run goes on to its
        # exit status
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def show_settings(opts: CheckOptions, settings_for) -> None:
    path = Path(opts.paths[0] if opts.paths and opts.paths[0] != "-" else
                opts.stdin_filename or ".")
    settings = settings_for(path)
    import json

    source = settings.config_file or "defaults (no configuration file found)"
    click.echo(f"Settings for {path} from {source}:")
    click.echo(json.dumps(settings.toml_dict(), indent=2))


def run_check(opts: CheckOptions) -> int:
    from verl_lint.settings import SettingsError

    try:
        settings_for = resolver_for(opts)
        if opts.show_settings:
            show_settings(opts, settings_for)
            return 0
        if opts.watch:
            from verl_lint.watch import run_watch

            return run_watch(opts)
        targets = find_targets(opts, settings_for)
        # fixes.py (and difflib) only load when a fix option is given
        if opts.fixing:
            targets = device_errors(targets, settings_for)
            from verl_lint.fixes import FixOptions, run_fix_mode

            fixing = FixOptions(opts.fix, opts.unsafe_fixes, opts.diff, opts.show_fixes,
                                opts.add_suppressions)
            status = None

            def fix(ok: Sequence[Target]) -> list:
                nonlocal status
                reports, status = run_fix_mode(ok, settings_for, fixing, quiet=opts.quiet)
                return reports

            reports = list(once_per_run(error_reports(targets, fix)))
            if status is not None:  # --diff, or fixed stdin: fixes.py printed the result
                for r in reports:
                    _print_error(r)
                return 2 if any(r.error is not None for r in reports) else status
        else:
            reports = lint_reports(targets, settings_for, opts)
        outcome = Outcome(settings_for, opts)
        report(reports, opts, outcome)
        return outcome.status()
    except (UsageError, SettingsError) as exc:
        click.echo(f"error: {exc}", err=True)
        return 2
    except OSError as exc:  # e.g. --output into a missing directory
        click.echo(f"error: {exc.filename or ''}: {exc.strerror or exc}", err=True)
        return 2
    except Exception as exc:  # noqa: BLE001 - users get a message, not a traceback
        if os.environ.get("VERL_LINT_DEBUG"):
            raise
        click.echo(f"error: internal error: {type(exc).__name__}: {exc} "
                   "(set VERL_LINT_DEBUG=1 for a traceback, and please report it)", err=True)
        return 2


class _AnyPath(click.Path):
    """A path argument (the shell completes file names) taken as given: `click.Path` would
    `os.stat` each of them, and discovery says what each path is anyway."""

    def convert(self, value: Any, param: Any, ctx: Any) -> Any:
        return value if isinstance(value, str) else super().convert(value, param, ctx)


@click.command("check")
@click.argument("paths", nargs=-1, type=_AnyPath(readable=False))
@click.option("--select", multiple=True, metavar="RULES",
              help="Rules to enable (code, prefix like VL2, name, or ALL); replaces the config.")
@click.option("--extend-select", multiple=True, metavar="RULES",
              help="Rules to enable on top of the selection.")
@click.option("--ignore", multiple=True, metavar="RULES", help="Rules to disable.")
@click.option("--format", "output_format", type=click.Choice(list(FORMATS)), default="full",
              show_default=True, help="Output format.")
@click.option("--output", "-o", type=click.Path(),
              help="Write the report to FILE instead of stdout.")
@click.option("--fail-on", type=click.Choice(SEVERITIES),
              help="Lowest severity that makes the exit status 1 (default: warning).")
@click.option("--exit-zero", is_flag=True, help="Exit 0 even when findings are reported.")
@click.option("--statistics", is_flag=True, help="Print counts per rule instead of findings.")
@click.option("--device", help="Lint only this device scenario (gpu, npu, …).")
@click.option("--set", "set_", multiple=True, metavar="VAR=VALUE",
              help="Pin a shell variable for the scenarios (repeatable).")
@click.option("--verl-version", metavar="X.Y.Z", help="verl release to check against.")
@click.option("--verl-source", metavar="PATH", type=click.Path(),
              help="A verl tree on disk to check against (the folder holding `verl/`).")
@click.option("--config", type=click.Path(),
              help="Use this configuration file instead of discovering one.")
@click.option("--no-color", is_flag=True, help="No colours in the `full` format.")
@click.option("--quiet", "-q", is_flag=True, help="Print findings only (no summary line).")
@click.option("--jobs", "-j", type=click.IntRange(min=0), default=None,
              help="Lint files in N processes (0 = one per CPU; default: one per CPU when "
                   "more than a few dozen files need linting, else 1).")
@click.option("--no-cache", is_flag=True,
              help="Neither read nor write the result cache (also VERL_LINT_NO_CACHE=1).")
@click.option("--watch", is_flag=True,
              help="Lint again whenever a file changes (only the changed files), until Ctrl-C.")
@click.option("--stdin-filename", metavar="PATH",
              help="With `-`: the path the script on stdin is reported (and configured) as.")
@click.option("--force-exclude", is_flag=True,
              help="Apply `exclude` to files named explicitly too (for pre-commit).")
@click.option("--show-settings", is_flag=True,
              help="Print the settings that apply to the first PATH and exit.")
@click.option("--fix", is_flag=True, help="Apply safe fixes, then report what is left.")
@click.option("--unsafe-fixes", is_flag=True,
              help="With --fix/--diff/--show-fixes: include fixes that need review.")
@click.option("--diff", is_flag=True,
              help="Print the fixes as a unified diff; change nothing (exit 1 if any).")
@click.option("--show-fixes", is_flag=True, help="List the fixes applied (or applicable).")
@click.option("--add-suppressions", is_flag=True,
              help="Insert `# verl-lint: disable=…` lines for every current finding.")
def command(**kwargs: Any) -> None:
    """Lint verl launch scripts: files, directories (recursing into *.sh and bash/sh
    shebang files), or `-` for stdin."""
    sys.exit(run_check(CheckOptions(**kwargs)))

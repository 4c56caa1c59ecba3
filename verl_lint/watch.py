"""`verl-lint check --watch`: lint, then lint again whenever a watched file changes.

Polling, not OS notifications: a snapshot is the (mtime, size) of every linted file, its
configuration file and the folders they are in (a new or deleted script changes its folder),
taken twice a second. Each pass is an ordinary `check` run with the result cache, so only the
changed files are linted again.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Callable, Iterable

Snapshot = dict[str, tuple[int, int] | None]


def snapshot(paths: Iterable[Path]) -> Snapshot:
    out: Snapshot = {}
    for p in paths:
        try:
            st = os.stat(p)
            out[str(p)] = (st.st_mtime_ns, st.st_size)
        except OSError:
            out[str(p)] = None  # gone (or not there yet): its coming back is a change
    return out


def watched_paths(files: Iterable[Path], roots: Iterable[Path],
                  config_files: Iterable[str | None]) -> set[Path]:
    files = list(files)
    out = {*files, *(f.parent for f in files), *roots}
    out.update(Path(c) for c in config_files if c)
    return out


def watch(run_once: Callable[[], set[Path]], *, interval: float = 0.5,
          announce: Callable[[str], None] = print,
          keep_going: Callable[[], bool] = lambda: True) -> None:
    """Call `run_once()` (it lints and returns the paths to watch), then again after each
    change, until `keep_going()` is false (Ctrl-C in the CLI)."""
    while True:
        before = snapshot(run_once())
        announce("Watching for file changes (Ctrl-C to stop).")
        while True:
            if not keep_going():
                return
            time.sleep(interval)
            now = snapshot(before)
            if now != before:
                break
        changed = sorted(k for k in now if now[k] != before[k])
        announce(f"\n[{time.strftime('%H:%M:%S')}] {changed[0]}"
                 + (f" and {len(changed) - 1} more" if len(changed) > 1 else "")
                 + " changed: linting again.")


def run_watch(opts) -> int:
    """The `--watch` loop of `verl-lint check` (`opts`: its CheckOptions). A configuration
    error or a folder left without scripts is reported and watched, not fatal."""
    import click

    from verl_lint.cli.check import UsageError, find_targets, lint_reports, report, resolver_for
    from verl_lint.settings import SettingsError, clear_caches

    if "-" in opts.paths:
        raise UsageError("--watch cannot read stdin (`-`)")
    if opts.fixing:
        raise UsageError("--watch only reports; run the fix options without it")
    roots = [Path(p) for p in opts.paths or ["."]]
    watched: set[Path] = {*roots, *([Path(opts.config)] if opts.config else [])}

    def once() -> set[Path]:
        nonlocal watched
        clear_caches()  # a changed configuration file is read again
        try:
            settings_for = resolver_for(opts)
            targets = find_targets(opts, settings_for)
            report(lint_reports(targets, settings_for, opts), opts)
        except (UsageError, SettingsError) as exc:
            click.echo(f"error: {exc}", err=True)
            return watched
        files = [t.path for t in targets]
        configs = {settings_for(f).config_file for f in files}
        watched = watched_paths(files, roots, configs | {opts.config})
        return watched

    try:
        watch(once, announce=lambda message: click.echo(message, err=True))
    except KeyboardInterrupt:
        pass
    return 0

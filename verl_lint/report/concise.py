"""`concise`: one line per finding, `path:line:col: CODE message [scenarios]`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence, TextIO

from verl_lint.report import RenderOptions, one_line, scenario_suffix, summary

if TYPE_CHECKING:
    from verl_lint.engine import FileReport


def render(reports: Sequence["FileReport"], out: TextIO, options: RenderOptions) -> None:
    for r in reports:
        for d in r.diagnostics:
            out.write(f"{r.path}:{d.span.line}:{d.span.column}: {d.code} {one_line(d.message)}"
                      f"{scenario_suffix(d.scenarios)}\n")
    if not options.quiet:
        out.write(summary(reports) + "\n")

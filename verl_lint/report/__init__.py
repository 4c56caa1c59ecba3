"""Output formats. Each format is a module with `render(reports, out, options)`; the registry
below maps `--format` names to modules, imported only when used (rich only for `full`)."""

from __future__ import annotations

import importlib
import re
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Sequence, TextIO

if TYPE_CHECKING:
    from verl_lint.engine import FileReport

FORMATS: dict[str, str] = {
    "full": "verl_lint.report.full",
    "concise": "verl_lint.report.concise",
    "json": "verl_lint.report.json",
    "sarif": "verl_lint.report.sarif",
    "github": "verl_lint.report.github",
}


@dataclass(frozen=True)
class RenderOptions:
    color: bool = False
    quiet: bool = False  # diagnostics only: no summary line


def render(fmt: str, reports: Sequence["FileReport"], out: TextIO,
           options: RenderOptions = RenderOptions()) -> None:
    if fmt not in FORMATS:
        raise ValueError(f"unknown output format {fmt!r}")
    importlib.import_module(FORMATS[fmt]).render(reports, out, options)


def _plural(n: int, word: str) -> str:
    if word == "info":
        return f"{n} info"
    return f"{n} {word}" + ("" if n == 1 else "s")


def summary(reports: Sequence["FileReport"]) -> str:
    """`3 errors, 1 warning in 2 files (5 files checked)`, plus the files that could not be
    linted. "All checks passed" only when every file was linted and no rule crashed: a file
    verl-lint could not read, or one a rule crashed on, was not fully checked."""
    counts: Counter[str] = Counter()
    with_findings = 0
    for r in reports:
        if r.diagnostics:
            with_findings += 1
        counts.update(d.severity.value for d in r.diagnostics)
    failed = sum(1 for r in reports if r.error is not None)
    parts = [_plural(counts[s], s) for s in ("error", "warning", "info") if counts[s]]
    checked = f"({_plural(len(reports), 'file')} checked)"
    if parts:
        text = f"{', '.join(parts)} in {_plural(with_findings, 'file')} {checked}"
    elif failed:
        text = f"No findings {checked}"
    else:
        text = f"All checks passed {checked}"
    if failed:
        text += f"; {_plural(failed, 'file')} could not be linted (see the error lines)"
    return text


SEVERITY_COLUMNS = ("error", "warning", "info")


def statistics(reports: Sequence["FileReport"]) -> str:
    """A table, one row per rule: code, name, a count per severity, total — most frequent
    first (a rule's findings can have several severities: `severity` overrides per file)."""
    per_rule: dict[tuple[str, str], Counter[str]] = {}
    for r in reports:
        for d in r.diagnostics:
            per_rule.setdefault((d.code, d.name), Counter())[d.severity.value] += 1
    if not per_rule:
        return ""
    rows = sorted(per_rule.items(), key=lambda kv: (-sum(kv[1].values()), kv[0][0]))
    table = [("code", "name", *SEVERITY_COLUMNS, "total")]
    table += [(code, name, *(str(c[s]) for s in SEVERITY_COLUMNS), str(sum(c.values())))
              for (code, name), c in rows]
    widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
    lines = []
    for row in table:
        cells = [row[0].ljust(widths[0]), row[1].ljust(widths[1])]
        cells += [cell.rjust(w) for cell, w in zip(row[2:], widths[2:])]
        lines.append("  ".join(cells).rstrip() + "\n")
    return "".join(lines)


def one_line(text: str) -> str:
    """Line-based formats keep each finding on one line."""
    return re.sub(r"\r\n|\r|\n", " ", text)


def scenario_suffix(scenarios: Sequence[str]) -> str:
    return f" [{', '.join(scenarios)}]" if scenarios else ""

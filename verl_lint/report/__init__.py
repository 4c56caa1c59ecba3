"""Output formats. Each format is a module with a `Renderer` (see `Renderer`: reports are added
one by one as they are linted, so a format that can streams); the registry below maps
`--format` names to modules, imported only when used (rich only for `full` in colour)."""

from __future__ import annotations

import importlib
import re
from collections import Counter
from typing import TYPE_CHECKING, Iterable, Sequence, TextIO

from verl_lint.records import shared_dataclass

if TYPE_CHECKING:
    from verl_lint.diagnostics import FileReport

FORMATS: dict[str, str] = {
    "full": "verl_lint.report.full",
    "concise": "verl_lint.report.concise",
    "json": "verl_lint.report.json",
    "sarif": "verl_lint.report.sarif",
    "github": "verl_lint.report.github",
}


@shared_dataclass(frozen=True)
class RenderOptions:
    """How a format writes (`verl-lint check --no-color`, `--quiet`)."""

    color: bool = False
    quiet: bool = False  # diagnostics only: no summary line


class Totals:
    """What the summary line, `--statistics` and GitHub's step summary need, added up report by
    report: a run writes each file's findings as they come and keeps no report."""

    def __init__(self) -> None:
        self.files = 0
        self.with_findings = 0
        self.failed = 0
        self.severities: Counter[str] = Counter()
        self.per_rule: dict[tuple[str, str], Counter[str]] = {}

    def add(self, report: "FileReport") -> None:
        self.files += 1
        if report.error is not None:
            self.failed += 1
        if not report.diagnostics:
            return
        self.with_findings += 1
        for d in report.diagnostics:
            severity = d.severity.value
            self.severities[severity] += 1
            rule = self.per_rule.get((d.code, d.name))
            if rule is None:
                rule = self.per_rule[(d.code, d.name)] = Counter()
            rule[severity] += 1

    def summary(self) -> str:
        """`3 errors, 1 warning in 2 files (5 files checked)`, plus the files that could not be
        linted. "All checks passed" only when every file was linted and no rule crashed: a
        file verl-lint could not read, or one a rule crashed on, was not fully checked."""
        counts, failed = self.severities, self.failed
        parts = [_plural(counts[s], s) for s in ("error", "warning", "info") if counts[s]]
        checked = f"({_plural(self.files, 'file')} checked)"
        if parts:
            text = f"{', '.join(parts)} in {_plural(self.with_findings, 'file')} {checked}"
        elif failed:
            text = f"No findings {checked}"
        else:
            text = f"All checks passed {checked}"
        if failed:
            text += f"; {_plural(failed, 'file')} could not be linted (see the error lines)"
        return text

    def statistics(self) -> str:
        """A table, one row per rule: code, name, a count per severity, total — most frequent
        first (a rule's findings can have several severities: `severity` overrides per file)."""
        if not self.per_rule:
            return ""
        rows = sorted(self.per_rule.items(), key=lambda kv: (-sum(kv[1].values()), kv[0][0]))
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


class Renderer:
    """One run's output in one format: `add` each file's report in order — a format that can
    writes it at once and keeps nothing of it —, then `finish`. Each format module defines one
    as `Renderer`."""

    def __init__(self, out: TextIO, options: RenderOptions) -> None:
        self.out = out
        self.options = options
        self.totals = Totals()

    def add(self, report: "FileReport") -> None:
        self.totals.add(report)
        self.file(report)

    def file(self, report: "FileReport") -> None:
        raise NotImplementedError

    def finish(self) -> None:
        if not self.options.quiet:
            self.out.write(self.totals.summary() + "\n")


class Statistics(Renderer):
    """`--statistics`: the per-rule table (and the summary line) instead of findings."""

    def file(self, report: "FileReport") -> None:
        pass

    def finish(self) -> None:
        self.out.write(self.totals.statistics())
        super().finish()


def renderer(fmt: str, out: TextIO, options: RenderOptions = RenderOptions()) -> Renderer:
    if fmt not in FORMATS:
        raise ValueError(f"unknown output format {fmt!r}")
    return importlib.import_module(FORMATS[fmt]).Renderer(out, options)


def render(fmt: str, reports: Iterable["FileReport"], out: TextIO,
           options: RenderOptions = RenderOptions()) -> None:
    sink = renderer(fmt, out, options)
    for r in reports:
        sink.add(r)
    sink.finish()


def _plural(n: int, word: str) -> str:
    if word == "info":
        return f"{n} info"
    return f"{n} {word}" + ("" if n == 1 else "s")


def _totals(reports: Iterable["FileReport"]) -> Totals:
    totals = Totals()
    for r in reports:
        totals.add(r)
    return totals


def summary(reports: Iterable["FileReport"]) -> str:
    return _totals(reports).summary()


SEVERITY_COLUMNS = ("error", "warning", "info")


def statistics(reports: Iterable["FileReport"]) -> str:
    return _totals(reports).statistics()


def one_line(text: str) -> str:
    """Line-based formats keep each finding on one line."""
    return re.sub(r"\r\n|\r|\n", " ", text)


def scenario_suffix(scenarios: Sequence[str]) -> str:
    return f" [{', '.join(scenarios)}]" if scenarios else ""

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
    """`3 errors, 1 warning in 2 files` (plus files that could not be linted)."""
    counts: Counter[str] = Counter()
    with_findings = 0
    for r in reports:
        if r.diagnostics:
            with_findings += 1
        counts.update(d.severity.value for d in r.diagnostics)
    failed = sum(1 for r in reports if r.error is not None)
    parts = [_plural(counts[s], s) for s in ("error", "warning", "info") if counts[s]]
    if parts:
        text = f"{', '.join(parts)} in {_plural(with_findings, 'file')}"
        text += f" ({_plural(len(reports), 'file')} checked)"
    else:
        text = f"All checks passed ({_plural(len(reports), 'file')} checked)"
    if failed:
        text += f"; {_plural(failed, 'file')} could not be linted"
    return text


def statistics(reports: Sequence["FileReport"]) -> str:
    """One line per code: count, code, name, severity — most frequent first."""
    counts: Counter[tuple[str, str, str]] = Counter()
    for r in reports:
        counts.update((d.code, d.name, d.severity.value) for d in r.diagnostics)
    rows = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0][0]))
    width = max((len(str(n)) for _, n in rows), default=1)
    return "".join(f"{n:>{width}}  {code}  {name}  [{sev}]\n" for (code, name, sev), n in rows)


def one_line(text: str) -> str:
    """Line-based formats keep each finding on one line."""
    return re.sub(r"\r\n|\r|\n", " ", text)


def scenario_suffix(scenarios: Sequence[str]) -> str:
    return f" [{', '.join(scenarios)}]" if scenarios else ""

"""`full`: each finding with a code frame (the offending token underlined, secondary labels),
its scenarios, help, fix and docs link, then a summary line — in the style of ruff and rustc.

The frame is built as (text, style) segments; rich is imported only to print them in colour.
"""

from __future__ import annotations

import unicodedata
from typing import TYPE_CHECKING, Sequence, TextIO

from verl_lint.report import RenderOptions, one_line, summary

if TYPE_CHECKING:
    from verl_lint.diagnostics import Diagnostic
    from verl_lint.engine import FileReport
    from verl_lint.source import SourceText, Span

Segments = list[tuple[str, str]]  # (text, rich style)

SEVERITY_STYLE = {"error": "bold red", "warning": "bold yellow", "info": "bold blue"}
GUTTER = "bold blue"
SECONDARY = "cyan"
TAB = "    "


def _cells(text: str) -> int:
    """Terminal cells of `text` (CJK comments are common in verl scripts: 2 cells each)."""
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


def _display(line: str) -> str:
    return line.replace("\t", TAB)


def _annotation(source: "SourceText", span: "Span") -> tuple[int, int, int]:
    """(0-based line, start cell, width in cells) of a span's first line."""
    line0 = span.line - 1
    text = source.line_text(line0)
    start = span.column - 1
    end = span.end_column - 1 if span.end_line == span.line else len(text.rstrip())
    end = max(end, start + 1)
    before = _cells(_display(text[:start]))
    return line0, before, max(1, _cells(_display(text[start:end])))


def diagnostic_segments(path: str, source: "SourceText | None", d: "Diagnostic") -> Segments:
    sev = d.severity.value
    style = SEVERITY_STYLE[sev]
    seg: Segments = [(f"{sev}[{d.code}]", style), (f": {one_line(d.message)}\n", "bold")]
    width = len(str(max([d.span.line] + [lab.span.line for lab in d.labels])))
    pad = " " * width
    seg += [(f"{pad}--> ", GUTTER), (f"{path}:{d.span.line}:{d.span.column}\n", "")]
    if source is not None and d.span.line - 1 < len(source.line_starts):
        seg.append((f"{pad} |\n", GUTTER))
        # (line0, start cell, width, marker, message, style) — primary first on its line
        marks = [(*_annotation(source, d.span), "^", d.name or "", style)]
        marks += [(*_annotation(source, lab.span), "-", lab.message, SECONDARY)
                  for lab in d.labels]
        previous = None
        for line0 in sorted({m[0] for m in marks}):
            if previous is not None and line0 > previous + 1:
                seg.append(("...\n", GUTTER))
            previous = line0
            seg += [(f"{line0 + 1:>{width}} | ", GUTTER),
                    (_display(source.line_text(line0)) + "\n", "")]
            for _, start, length, marker, message, mstyle in (m for m in marks if m[0] == line0):
                seg += [(f"{pad} | ", GUTTER), (" " * start, ""),
                        (marker * length + (f" {message}" if message else "") + "\n", mstyle)]
        seg.append((f"{pad} |\n", GUTTER))
    notes = []
    if d.scenarios:
        notes.append(("when", ", ".join(d.scenarios)))
    if d.help:
        notes.append(("help", d.help))
    if d.fix is not None:
        notes.append(("fix", f"{d.fix.title} ({d.fix.applicability})"))
    if d.url:
        notes.append(("docs", d.url))
    for label, text in notes:
        seg += [(f"{pad} = ", GUTTER), (f"{label}: ", "bold"), (text + "\n", "")]
    seg.append(("\n", ""))
    return seg


def render(reports: Sequence["FileReport"], out: TextIO, options: RenderOptions) -> None:
    segments: Segments = []
    for r in reports:
        for d in r.diagnostics:
            segments += diagnostic_segments(r.path, r.source, d)
    if not options.quiet:
        segments.append((summary(reports) + "\n", "bold"))
    if not options.color:
        out.write("".join(text for text, _ in segments))
        return
    from rich.console import Console
    from rich.text import Text

    console = Console(file=out, force_terminal=True, highlight=False, soft_wrap=True,
                      emoji=False, markup=False)
    text = Text()
    for chunk, style in segments:
        text.append(chunk, style=style or None)
    console.print(text, end="")

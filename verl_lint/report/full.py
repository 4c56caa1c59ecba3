"""`full`: each finding with a code frame (the offending token underlined, secondary labels),
its scenarios, help, fix and docs link, then a summary line — in the style of ruff and rustc.

The frame is built as (text, style) segments; rich is imported only to print them in colour (and
prints only what it would rewrite: see `_Colors`).
"""

from __future__ import annotations

import re
import unicodedata
from typing import TYPE_CHECKING, TextIO

from verl_lint.report import Renderer as Base
from verl_lint.report import RenderOptions, one_line

if TYPE_CHECKING:
    from verl_lint.diagnostics import Diagnostic, FileReport
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


class Renderer(Base):
    """Writes each file's findings as soon as it is added (its source is needed for the code
    frames, and dropped with the report)."""

    def __init__(self, out: TextIO, options: RenderOptions) -> None:
        super().__init__(out, options)
        self._colors = _Colors(out) if options.color else None

    def file(self, report: "FileReport") -> None:
        for d in report.diagnostics:
            self._write(diagnostic_segments(report.path, report.source, d))

    def finish(self) -> None:
        if not self.options.quiet:
            self._write([(self.totals.summary() + "\n", "bold")])

    def _write(self, segments: Segments) -> None:
        if self._colors is None:
            self.out.write("".join(text for text, _ in segments))
        else:
            self._colors.write(segments)


# what rich rewrites in a text (tabs expanded, control characters dropped): such a finding is
# printed by rich itself
_REWRITTEN = re.compile(r"[\x00-\x09\x0b-\x1f\x7f]")


class _Colors:
    """Segments in colour, as rich prints them: each line of a styled segment between its
    style's start and end codes. rich itself takes ≈ 0.3 ms a finding (12 s for 35,000); here
    each style's codes are taken once from the console (so they follow its colour system)."""

    def __init__(self, out: TextIO) -> None:
        from rich.console import Console

        self.out = out
        self.console = Console(file=out, force_terminal=True, highlight=False, soft_wrap=True,
                               emoji=False, markup=False)
        self.codes: dict[str, tuple[str, str]] = {}

    def write(self, segments: Segments) -> None:
        if any(_REWRITTEN.search(text) for text, _ in segments):
            self._rich(segments)
            return
        parts = []
        for text, style in segments:
            if not style:
                parts.append(text)
                continue
            start, end = self.codes.get(style) or self._codes(style)
            parts.append("\n".join(start + line + end if line else ""
                                   for line in text.split("\n")))
        self.out.write("".join(parts))

    def _codes(self, style: str) -> tuple[str, str]:
        from rich.text import Text

        with self.console.capture() as printed:
            self.console.print(Text("\ue000", style=style), end="")
        start, _, end = printed.get().partition("\ue000")
        self.codes[style] = (start, end)
        return start, end

    def _rich(self, segments: Segments) -> None:
        from rich.text import Text

        text = Text()
        for chunk, style in segments:
            text.append(chunk, style=style or None)
        self.console.print(text, end="")

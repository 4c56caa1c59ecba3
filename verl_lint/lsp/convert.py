"""verl-lint objects → LSP objects: positions in the client's encoding, diagnostics, edits."""

from __future__ import annotations

from typing import Iterable

from lsprotocol import types

from verl_lint.diagnostics import Diagnostic, Edit, Severity, rule_url
from verl_lint.report import scenario_suffix
from verl_lint.source import SourceText

_SEVERITY = {
    Severity.ERROR: types.DiagnosticSeverity.Error,
    Severity.WARNING: types.DiagnosticSeverity.Warning,
    Severity.INFO: types.DiagnosticSeverity.Information,
}


class Positions:
    """Byte offsets ↔ LSP positions for one document in the negotiated encoding (UTF-16 unless
    the client offered UTF-8/UTF-32)."""

    def __init__(self, source: SourceText, encoding: str = "utf-16") -> None:
        self.source = source
        self.encoding = str(getattr(encoding, "value", encoding))  # enum or plain string

    def position(self, offset: int) -> types.Position:
        src = self.source
        if self.encoding == "utf-16":
            line, col = src.utf16_position(offset)
        elif self.encoding == "utf-32":  # code points: SourceText's own column, 0-based
            line, col = (n - 1 for n in src.position(offset))
        else:  # utf-8: bytes
            offset = max(0, min(offset, len(src.data)))
            line = src.line_of(offset)
            col = offset - src.line_starts[line]
        return types.Position(line=line, character=col)

    def range(self, start: int, end: int) -> types.Range:
        return types.Range(start=self.position(start), end=self.position(end))

    def offset(self, pos: types.Position) -> int:
        src = self.source
        if self.encoding == "utf-16":
            return src.offset_of_utf16(pos.line, pos.character)
        if pos.line >= len(src.line_starts):
            return len(src.data)
        raw = src.line_bytes(pos.line).rstrip(b"\r\n")
        if self.encoding == "utf-8":
            return src.line_starts[pos.line] + min(pos.character, len(raw))
        text = raw.decode("utf-8", "replace")[: pos.character]
        return src.line_starts[pos.line] + len(text.encode("utf-8"))


def message_of(diag: Diagnostic) -> str:
    """The CLI's message plus the scenarios it is confined to (`[DEVICE=npu]`)."""
    help_text = f"\n{diag.help}" if diag.help else ""
    return f"{diag.message}{scenario_suffix(diag.scenarios)}{help_text}"


def to_lsp_diagnostic(diag: Diagnostic, pos: Positions, uri: str) -> types.Diagnostic:
    href = diag.url or (rule_url(diag.code, diag.name) if diag.name else "")
    return types.Diagnostic(
        range=pos.range(diag.span.start, diag.span.end),
        severity=_SEVERITY.get(diag.severity, types.DiagnosticSeverity.Error),
        code=diag.code,
        code_description=types.CodeDescription(href=href) if href else None,
        source="verl-lint",
        message=message_of(diag),
        related_information=[
            types.DiagnosticRelatedInformation(
                location=types.Location(uri=uri, range=pos.range(lab.span.start, lab.span.end)),
                message=lab.message,
            )
            for lab in diag.labels
        ] or None,
        tags=[types.DiagnosticTag.Unnecessary] if diag.code == "VL002" else None,
    )


def text_edits(edits: Iterable[Edit], pos: Positions) -> list[types.TextEdit]:
    return [types.TextEdit(range=pos.range(e.start, e.end), new_text=e.replacement)
            for e in sorted(edits, key=lambda e: e.start)]


def workspace_edit(uri: str, edits: Iterable[Edit], pos: Positions,
                   version: int | None = None) -> types.WorkspaceEdit:
    """A WorkspaceEdit; versioned (documentChanges) when the document version is known, so a
    client refuses a stale quick fix instead of corrupting the text."""
    if version is None:
        return types.WorkspaceEdit(changes={uri: text_edits(edits, pos)})
    return types.WorkspaceEdit(document_changes=[types.TextDocumentEdit(
        text_document=types.OptionalVersionedTextDocumentIdentifier(uri=uri, version=version),
        edits=text_edits(edits, pos),
    )])


def overlaps(a: types.Range, b: types.Range) -> bool:
    """Whether two ranges touch (a cursor at either end of a diagnostic counts)."""
    def key(p: types.Position) -> tuple[int, int]:
        return (p.line, p.character)

    return key(a.start) <= key(b.end) and key(b.start) <= key(a.end)

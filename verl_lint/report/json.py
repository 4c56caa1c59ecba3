"""`json`: one object, a stable schema other tools parse (documented in the README).

{"verl_lint_version": str, "verl_version": str | null (null when files differ),
 "files": [{"path", "verl_version", "error"}],
 "diagnostics": [{"code", "name", "severity", "message", "path", "line", "column",
                  "end_line", "end_column", "scenarios", "help", "labels", "fix", "url"}]}
Lines and columns are 1-based (columns count characters); fix edits are byte offsets.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TextIO

from verl_lint import __version__
from verl_lint.report import Renderer as Base
from verl_lint.report import RenderOptions
from verl_lint.report.encode import Raw, dumps

if TYPE_CHECKING:
    from verl_lint.diagnostics import Diagnostic, FileReport, Fix
    from verl_lint.source import SourceText, Span


def _position(span: "Span") -> dict[str, int]:
    return {"line": span.line, "column": span.column,
            "end_line": span.end_line, "end_column": span.end_column}


def fix_dict(fix: "Fix | None", source: "SourceText | None") -> dict[str, Any] | None:
    if fix is None:
        return None
    edits = []
    for e in fix.edits:
        edit: dict[str, Any] = {"start": e.start, "end": e.end, "replacement": e.replacement}
        if source is not None:
            edit.update(_position(source.span(e.start, e.end)))
        edits.append(edit)
    return {"title": fix.title, "applicability": fix.applicability, "edits": edits}


def diagnostic_dict(d: "Diagnostic", path: str, source: "SourceText | None") -> dict[str, Any]:
    return {
        "code": d.code,
        "name": d.name,
        "severity": d.severity.value,
        "message": d.message,
        "path": path,
        **_position(d.span),
        "scenarios": list(d.scenarios),
        "help": d.help,
        "labels": [{"message": lab.message, **_position(lab.span)} for lab in d.labels],
        "fix": fix_dict(d.fix, source),
        "url": d.url,
    }


def diagnostic_texts(r: "FileReport") -> "tuple[str, ...]":
    """The JSON text of each of the report's findings as it reads in the document (two levels
    deep: an item of its "diagnostics" list); kept by the result cache with the findings."""
    if r.json_texts is not None:
        return r.json_texts
    return tuple(dumps(diagnostic_dict(d, r.path, r.source), 2) for d in r.diagnostics)


def file_dict(r: "FileReport") -> dict[str, Any]:
    return {"path": r.path, "verl_version": r.version.version if r.version is not None else None,
            "verl": r.version.as_json() if r.version is not None else None, "error": r.error}


def file_text(r: "FileReport") -> str:
    """The JSON text of the report's item in the document's "files" list (kept by the result
    cache with the findings)."""
    return r.json_entry if r.json_entry is not None else dumps(file_dict(r), 2)


class Renderer(Base):
    """The document above. Each finding becomes its text when its file is added: what is kept
    until the end (the list of files comes first) is text, not the reports."""

    def __init__(self, out: TextIO, options: RenderOptions) -> None:
        super().__init__(out, options)
        self._versions: set[str] = set()
        self._files: list[Raw] = []
        self._diagnostics: list[Raw] = []

    def file(self, report: "FileReport") -> None:
        if report.version is not None:
            self._versions.add(report.version.version)
        self._files.append(Raw(file_text(report)))
        self._diagnostics += map(Raw, diagnostic_texts(report))

    def finish(self) -> None:
        versions = self._versions
        self.out.write(dumps({
            "verl_lint_version": __version__,
            "verl_version": next(iter(versions)) if len(versions) == 1 else None,
            "files": self._files,
            "diagnostics": self._diagnostics,
        }) + "\n")

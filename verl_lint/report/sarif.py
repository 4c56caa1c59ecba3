"""`sarif`: SARIF 2.1.0 for GitHub code scanning and other viewers.

`tool.driver.rules` lists every registered rule (help text = its docs page, helpUri); results
carry the primary location, labels as relatedLocations, scenarios in `properties`, and fixes
as byte-offset replacements. Columns are Unicode code points (`run.columnKind`).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO
from urllib.parse import quote

from verl_lint import __version__
from verl_lint.report import Renderer as Base
from verl_lint.report import RenderOptions
from verl_lint.report.encode import Raw, dumps

if TYPE_CHECKING:
    from verl_lint.diagnostics import Diagnostic, FileReport
    from verl_lint.source import Span

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
INFORMATION_URI = "https://github.com/verl-lint/verl-lint"
LEVEL = {"error": "error", "warning": "warning", "info": "note"}


def artifact_uri(path: str) -> str:
    p = Path(path)
    if p.is_absolute():
        return p.as_uri()
    return quote(p.as_posix())


def _region(span: "Span") -> dict[str, int]:
    return {"startLine": span.line, "startColumn": span.column,
            "endLine": span.end_line, "endColumn": span.end_column}


def _location(uri: str, span: "Span", **extra: Any) -> dict[str, Any]:
    return {"physicalLocation": {"artifactLocation": {"uri": uri}, "region": _region(span)},
            **extra}


def rule_descriptors() -> tuple[list[dict[str, Any]], dict[str, int]]:
    """`tool.driver.rules` and each rule's index in it (a cached run loads no rule for it)."""
    from verl_lint.rules.registry import rule_table

    rules = list(rule_table("sarif-rules", _descriptor).values())
    return rules, {rule["id"]: i for i, rule in enumerate(rules)}


def _descriptor(rule) -> dict[str, Any]:
    docs = rule.docs()
    return {
        "id": rule.code,
        "name": rule.name,
        "shortDescription": {"text": rule.summary},
        "fullDescription": {"text": docs.split("\n", 1)[0] or rule.summary},
        "help": {"text": docs or rule.summary, "markdown": docs or rule.summary},
        "helpUri": rule.url(),
        "defaultConfiguration": {"level": LEVEL[rule.severity.value]},
        "properties": {"tags": [rule.code[:3] + "xx"], "fixable": rule.fixable},
    }


def _result(d: "Diagnostic", uri: str, index: dict[str, int]) -> dict[str, Any]:
    result: dict[str, Any] = {
        "ruleId": d.code,
        "level": LEVEL[d.severity.value],
        "message": {"text": d.message + (f"\nhelp: {d.help}" if d.help else "")},
        "locations": [_location(uri, d.span)],
        "properties": {"scenarios": list(d.scenarios)},
    }
    if d.code in index:
        result["ruleIndex"] = index[d.code]
    if d.labels:
        result["relatedLocations"] = [_location(uri, lab.span, id=i,
                                                message={"text": lab.message})
                                      for i, lab in enumerate(d.labels)]
    if d.fix is not None:
        result["fixes"] = [{
            "description": {"text": d.fix.title},
            "artifactChanges": [{
                "artifactLocation": {"uri": uri},
                "replacements": [{"deletedRegion": {"byteOffset": e.start,
                                                    "byteLength": e.end - e.start},
                                  "insertedContent": {"text": e.replacement}}
                                 for e in d.fix.edits],
            }],
        }]
    return result


class Renderer(Base):
    """The SARIF log. Results become text as their file is added (a result sits four levels
    deep: runs, a run, its results); the tool's rules and the run's notifications, which come
    before them, are written at the end."""

    def __init__(self, out: TextIO, options: RenderOptions) -> None:
        super().__init__(out, options)
        self._rules, self._index = rule_descriptors()
        self._results: list[Raw] = []
        self._notifications: list[dict[str, Any]] = []

    def file(self, report: "FileReport") -> None:
        uri = artifact_uri(report.path)
        self._results += [Raw(dumps(_result(d, uri, self._index), 4))
                          for d in report.diagnostics]
        if report.error is not None:
            self._notifications.append({"level": "error", "message": {"text": report.error},
                                        "locations": [{"physicalLocation": {
                                            "artifactLocation": {"uri": uri}}}]})

    def finish(self) -> None:
        self.out.write(dumps({
            "$schema": SCHEMA,
            "version": "2.1.0",
            "runs": [{
                "tool": {"driver": {"name": "verl-lint", "version": __version__,
                                    "semanticVersion": __version__,
                                    "informationUri": INFORMATION_URI, "rules": self._rules}},
                "invocations": [{"executionSuccessful": not self._notifications,
                                 "toolExecutionNotifications": self._notifications}],
                "columnKind": "unicodeCodePoints",
                "results": self._results,
            }],
        }) + "\n")

"""`sarif`: SARIF 2.1.0 for GitHub code scanning and other viewers.

`tool.driver.rules` lists every registered rule (help text = its docs page, helpUri); results
carry the primary location, labels as relatedLocations, scenarios in `properties`, and fixes
as byte-offset replacements. Columns are Unicode code points (`run.columnKind`).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence, TextIO
from urllib.parse import quote

from verl_lint import __version__
from verl_lint.report import RenderOptions
from verl_lint.report.encode import dumps

if TYPE_CHECKING:
    from verl_lint.diagnostics import Diagnostic
    from verl_lint.engine import FileReport
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
    from verl_lint.rules.registry import all_rules

    rules, index = [], {}
    for i, rule in enumerate(all_rules()):
        index[rule.code] = i
        docs = rule.docs()
        rules.append({
            "id": rule.code,
            "name": rule.name,
            "shortDescription": {"text": rule.summary},
            "fullDescription": {"text": docs.split("\n", 1)[0] or rule.summary},
            "help": {"text": docs or rule.summary, "markdown": docs or rule.summary},
            "helpUri": rule.url(),
            "defaultConfiguration": {"level": LEVEL[rule.severity.value]},
            "properties": {"tags": [rule.code[:3] + "xx"], "fixable": rule.fixable},
        })
    return rules, index


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


def document(reports: Sequence["FileReport"]) -> dict[str, Any]:
    rules, index = rule_descriptors()
    results = [_result(d, artifact_uri(r.path), index) for r in reports for d in r.diagnostics]
    notifications = [{"level": "error", "message": {"text": r.error},
                      "locations": [{"physicalLocation": {
                          "artifactLocation": {"uri": artifact_uri(r.path)}}}]}
                     for r in reports if r.error is not None]
    return {
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": "verl-lint", "version": __version__,
                                "semanticVersion": __version__,
                                "informationUri": INFORMATION_URI, "rules": rules}},
            "invocations": [{"executionSuccessful": not notifications,
                             "toolExecutionNotifications": notifications}],
            "columnKind": "unicodeCodePoints",
            "results": results,
        }],
    }


def render(reports: Sequence["FileReport"], out: TextIO, options: RenderOptions) -> None:
    out.write(dumps(document(reports)) + "\n")

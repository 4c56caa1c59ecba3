"""`github`: GitHub Actions workflow commands, one annotation per finding.

`::error file=run.sh,line=12,endLine=12,col=5,endColumn=9,title=VL201::message`; columns are
left out for spans over several lines (GitHub ignores them there). Escaping follows GitHub's
runner: `%`, CR, LF in the message; additionally `:` and `,` in properties.
When `$GITHUB_STEP_SUMMARY` is set, a markdown table of findings per rule is appended to it
(the run's summary page).
"""

from __future__ import annotations

import os
from collections import Counter
from typing import TYPE_CHECKING, Sequence, TextIO

from verl_lint.report import RenderOptions, scenario_suffix, summary

if TYPE_CHECKING:
    from verl_lint.engine import FileReport

LEVEL = {"error": "error", "warning": "warning", "info": "notice"}


def escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def render(reports: Sequence["FileReport"], out: TextIO, options: RenderOptions) -> None:
    for r in reports:
        for d in r.diagnostics:
            s = d.span
            props = [f"file={escape_property(r.path)}", f"line={s.line}",
                     f"endLine={s.end_line}"]
            if s.line == s.end_line:
                props += [f"col={s.column}", f"endColumn={s.end_column}"]
            props.append(f"title={escape_property(d.code)}")
            message = f"{d.message}{scenario_suffix(d.scenarios)}"
            if d.help:
                message += f"\nhelp: {d.help}"
            out.write(f"::{LEVEL[d.severity.value]} {','.join(props)}::{escape_data(message)}\n")
        if r.error is not None:
            out.write(f"::error file={escape_property(r.path)},title=verl-lint::"
                      f"{escape_data(r.error)}\n")
    step_summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if step_summary:
        with open(step_summary, "a", encoding="utf-8") as f:
            f.write(markdown_summary(reports))


def markdown_summary(reports: Sequence["FileReport"]) -> str:
    counts = Counter((d.code, d.name, d.severity.value) for r in reports for d in r.diagnostics)
    lines = ["### verl-lint", "", summary(reports), ""]
    if counts:
        lines += ["| Rule | Name | Severity | Findings |", "|---|---|---|---|"]
        lines += [f"| {code} | {name} | {sev} | {n} |"
                  for (code, name, sev), n in sorted(counts.items())]
        lines.append("")
    return "\n".join(lines) + "\n"

"""`github`: GitHub Actions workflow commands, one annotation per finding.

`::error file=run.sh,line=12,endLine=12,col=5,endColumn=9,title=VL201::message`; columns are
left out for spans over several lines (GitHub ignores them there). Escaping follows GitHub's
runner: `%`, CR, LF in the message; additionally `:` and `,` in properties.
When `$GITHUB_STEP_SUMMARY` is set, a markdown table of findings per rule is appended to it
(the run's summary page).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from verl_lint.report import Renderer as Base
from verl_lint.report import Totals, scenario_suffix

if TYPE_CHECKING:
    from verl_lint.diagnostics import FileReport

LEVEL = {"error": "error", "warning": "warning", "info": "notice"}


def escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


class Renderer(Base):
    def file(self, report: "FileReport") -> None:
        path = escape_property(report.path)
        lines = []
        for d in report.diagnostics:
            s = d.span
            props = [f"file={path}", f"line={s.line}", f"endLine={s.end_line}"]
            if s.line == s.end_line:
                props += [f"col={s.column}", f"endColumn={s.end_column}"]
            props.append(f"title={escape_property(d.code)}")
            message = f"{d.message}{scenario_suffix(d.scenarios)}"
            if d.help:
                message += f"\nhelp: {d.help}"
            lines.append(f"::{LEVEL[d.severity.value]} {','.join(props)}::{escape_data(message)}\n")
        if report.error is not None:
            lines.append(f"::error file={path},title=verl-lint::{escape_data(report.error)}\n")
        self.out.write("".join(lines))

    def finish(self) -> None:
        # no summary line in the log (annotations only); the run's summary page gets a table
        step_summary = os.environ.get("GITHUB_STEP_SUMMARY")
        if step_summary:
            with open(step_summary, "a", encoding="utf-8") as f:
                f.write(markdown_summary(self.totals))


def markdown_summary(totals: Totals) -> str:
    counts = sorted(((code, name, sev), n) for (code, name), per in totals.per_rule.items()
                    for sev, n in per.items())
    lines = ["### verl-lint", "", totals.summary(), ""]
    if counts:
        lines += ["| Rule | Name | Severity | Findings |", "|---|---|---|---|"]
        lines += [f"| {code} | {name} | {sev} | {n} |" for (code, name, sev), n in counts]
        lines.append("")
    return "\n".join(lines) + "\n"

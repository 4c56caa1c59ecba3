"""`concise`: one line per finding, `path:line:col: CODE message [scenarios]`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from verl_lint.report import Renderer as Base
from verl_lint.report import one_line, scenario_suffix

if TYPE_CHECKING:
    from verl_lint.diagnostics import FileReport


class Renderer(Base):
    def file(self, report: "FileReport") -> None:
        path = report.path
        self.out.write("".join(f"{path}:{d.span.line}:{d.span.column}: {d.code} "
                               f"{one_line(d.message)}{scenario_suffix(d.scenarios)}\n"
                               for d in report.diagnostics))

"""The one Diagnostic type every rule produces and every renderer (CLI, SARIF, LSP) consumes, and
the FileReport that carries a file's diagnostics from the engine (or the result cache) to them.

Slotted dataclasses, not pydantic models: they are made by verl-lint's own code, never parsed
from user input, and a run answered from the result cache builds and renders them without
importing pydantic (≈ 45 ms of a ≈ 70 ms start). Copies with changes are `dataclasses.replace`.
"""

from __future__ import annotations

from dataclasses import field
from enum import Enum
from typing import TYPE_CHECKING, Literal

from verl_lint.records import shared_dataclass

if TYPE_CHECKING:
    from verl_lint.source import SourceText, Span
    from verl_lint.verl.choice import VersionChoice

DOCS_BASE_URL = "https://github.com/verl-lint/verl-lint/blob/main/docs/rules.md"


class Severity(str, Enum):
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"

    @property
    def rank(self) -> int:
        return _RANK[self.value]

    def __reduce_ex__(self, protocol: int) -> str:
        # pickled as the name it is found by (`Severity.INFO`), not as a call `Severity("info")`
        # that runs Enum's lookup for each of the thousands of findings a cached run restores
        return f"{type(self).__qualname__}.{self.name}"


_RANK = {"error": 3, "warning": 2, "info": 1}


def by_fields(self) -> tuple:
    """`__reduce__` of a frozen slotted dataclass: pickled as a call of the class with its
    fields, as dataclasses' own `__setstate__` lists the fields for each object it restores
    (the result cache restores thousands per run)."""
    return type(self), tuple(getattr(self, name) for name in self.__slots__)


@shared_dataclass(frozen=True, slots=True)
class Edit:
    """Replace bytes [start, end) of the script with `replacement`."""

    __reduce__ = by_fields

    start: int
    end: int
    replacement: str


@shared_dataclass(frozen=True, slots=True)
class Fix:
    """A fix is data: byte edits plus whether applying them without review is safe."""

    __reduce__ = by_fields

    title: str
    edits: tuple[Edit, ...]
    applicability: Literal["safe", "unsafe"] = "safe"


@shared_dataclass(frozen=True, slots=True)
class Label:
    """A secondary location ("first set here")."""

    __reduce__ = by_fields

    span: "Span"
    message: str


@shared_dataclass(slots=True, kw_only=True)
class Diagnostic:
    """One finding. Rules make it with `Rule.diagnostic` (code, name, url, message, span, labels,
    help, fix, default severity); the engine fills path, scenarios and configured severity."""

    code: str
    name: str = ""
    severity: Severity = Severity.ERROR
    message: str
    span: "Span"
    labels: tuple[Label, ...] = ()
    help: str | None = None
    fix: Fix | None = None
    scenarios: tuple[str, ...] = ()
    path: str | None = None
    url: str = ""

    def sort_key(self) -> tuple:
        return (self.path or "", self.span.start, self.span.end, self.code, self.message)


@shared_dataclass(slots=True)
class FileReport:
    """One file's result: its diagnostics, the verl it was judged against, or why it could not
    be linted (`error`)."""

    path: str
    diagnostics: list[Diagnostic] = field(default_factory=list)
    version: "VersionChoice | None" = None
    error: str | None = None
    source: "SourceText | None" = None  # for code frames and fixes
    # files of the workspace the findings also depend on (entry modules looked for), for the
    # result cache; None when they cannot be listed (a config folder read from disk)
    depends_on: "tuple[str, ...] | None" = ()
    # the `json` format's text of this file's entry in its "files" list and of each of
    # `diagnostics`, in order, as the result cache stored them (a cached file is not rendered
    # again); None: worked out from the report
    json_entry: str | None = None
    json_texts: "tuple[str, ...] | None" = None


def rule_url(code: str, name: str) -> str:
    return f"{DOCS_BASE_URL}#{code.lower()}-{name}"

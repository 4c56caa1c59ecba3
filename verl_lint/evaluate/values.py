"""Expanded values with provenance: the evaluator's internal currency.

A scalar value is a tuple of `Part`s (known text or `Unknown`, plus where verbatim text sits in
the script). A `Field` is one argv word after expansion and word splitting, remembering the
script word (or array element) it came from.
"""

from __future__ import annotations

from verl_lint.evaluate.model import Unknown
from verl_lint.source import Span


class Part:
    """`value` (str or Unknown); `src` = byte offset of value[0] in the script when the text is
    verbatim there (literal, unescaped), else None."""

    __slots__ = ("value", "src")

    def __init__(self, value: "str | Unknown", src: int | None = None) -> None:
        self.value = value
        self.src = src

    def __repr__(self) -> str:
        return f"Part({self.value!r}, {self.src})"


Parts = tuple  # tuple[Part, ...]


def parts_value(parts: Parts) -> "str | Unknown":
    """The joined text, or the first Unknown."""
    out = []
    for p in parts:
        if isinstance(p.value, Unknown):
            return p.value
        out.append(p.value)
    return "".join(out)


def parts_known(parts: Parts) -> bool:
    return not any(isinstance(p.value, Unknown) for p in parts)


class Field:
    """One word as the command receives it."""

    __slots__ = ("parts", "span", "array", "fed_by", "variables", "passthrough")

    def __init__(self, parts: list, span: Span, array: str | None = None,
                 fed_by: tuple = (), variables: tuple = (), passthrough: str | None = None):
        self.parts = parts
        self.span = span
        self.array = array
        self.fed_by = fed_by
        self.variables = variables
        self.passthrough = passthrough  # reason when this stands for an unknown number of words

    @property
    def value(self) -> "str | Unknown":
        if self.passthrough is not None:
            return Unknown(reason=self.passthrough)
        return parts_value(self.parts)

    def copy(self, **kw) -> "Field":
        f = Field(list(self.parts), self.span, self.array, self.fed_by, self.variables,
                  self.passthrough)
        for k, v in kw.items():
            setattr(f, k, v)
        return f

    def __repr__(self) -> str:
        return f"Field({self.value!r})"

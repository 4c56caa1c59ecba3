"""Expanded values with provenance: the evaluator's internal currency.

A scalar value is a tuple of `Part`s (known text or `Unknown`, plus where verbatim text sits in
the script). A `Field` is one argv word after expansion and word splitting, remembering the
script word (or array element) it came from.
"""

from __future__ import annotations

from verl_lint.evaluate.model import Anchored, Unknown
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


class BarePart(Part):
    """A Part made without an `__init__` to run, its two fields assigned by the maker: half the
    instructions of `Part(value, src)` (≈ 800 less a part), for the hottest maker
    (`interp._literal_part`, two parts in three). Otherwise the Part it is."""

    __slots__ = ()
    __init__ = object.__init__


Parts = tuple  # tuple[Part, ...]

# A hostile script doubles a value per line (`X="$X$X"`, `ARR+=("${ARR[@]}")`): past these
# bounds a value is Unknown, so no expansion allocates more than a few times this much.
MAX_VALUE = 64 * 1024  # characters in one value
MAX_ELEMENTS = 4096  # words in one array / "$@"
def unknown(reason: str) -> Unknown:
    """`Unknown(reason=…)`, short for the evaluator's many unknown values."""
    return Unknown(reason=reason)


TOO_LONG = unknown("value too long")


def parts_value(parts: Parts) -> "str | Unknown":
    """The joined text, or the first Unknown (`TOO_LONG` past MAX_VALUE characters)."""
    if len(parts) == 1:  # most words
        v = parts[0].value
        return TOO_LONG if isinstance(v, str) and len(v) > MAX_VALUE else v
    out = []
    size = 0
    for i, p in enumerate(parts):
        v = p.value
        if isinstance(v, Unknown):
            if i == 0 and isinstance(v, Anchored):
                continue  # `$PROJECT_DIR/examples/x`: an anchored path with known text after it
            return v
        size += len(v)
        out.append(v)
    if size > MAX_VALUE:
        return TOO_LONG
    head = parts[0].value if parts else ""
    if isinstance(head, Anchored):
        return Anchored(reason=head.reason, anchor=head.anchor, rest=head.rest + "".join(out))
    return "".join(out)


def join_values(vals, sep: str = " ") -> "str | Unknown":
    """`"${ARR[*]}"`: the values joined by `sep` (IFS's first character), or the first Unknown
    / `TOO_LONG`."""
    size = 0
    for v in vals:
        if isinstance(v, Unknown):
            return v
        size += len(v) + 1
    if size > MAX_VALUE + 1:
        return TOO_LONG
    return sep.join(vals)


def capped(value: "str | Unknown") -> "str | Unknown":
    return TOO_LONG if isinstance(value, str) and len(value) > MAX_VALUE else value


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
            return unknown(self.passthrough)
        return parts_value(self.parts)

    def copy(self, **kw) -> "Field":
        f = Field(list(self.parts), self.span, self.array, self.fed_by, self.variables,
                  self.passthrough)
        for k, v in kw.items():
            setattr(f, k, v)
        return f

    def __repr__(self) -> str:
        return f"Field({self.value!r})"

"""Script text and positions.

Everything downstream addresses the script by UTF-8 byte offsets (tree-sitter works in bytes and
fixes are byte edits). `SourceText` converts offsets to the 1-based line/column users see and to
the UTF-16 columns the LSP needs.
"""

from __future__ import annotations

import bisect
import re
from array import array
from itertools import accumulate
from typing import Sequence
from functools import cached_property



class Span:
    """A half-open byte range [start, end) with its 1-based line/column (columns in characters).

    The parser makes ~200 spans a script and most are never shown, so a span made by a
    `SpanFactory` works out its line and column on first use. Equal spans have the
    same range and positions.
    """

    __slots__ = ("start", "end", "_positions", "_source")

    def __init__(self, *, start: int, end: int, line: int, column: int, end_line: int,
                 end_column: int) -> None:
        self.start = start
        self.end = end
        self._positions = (line, column, end_line, end_column)
        self._source: SourceText | None = None

    @property
    def positions(self) -> tuple[int, int, int, int]:
        """(line, column, end_line, end_column)."""
        pos = self._positions
        if pos is None:
            src = self._source
            pos = self._positions = (*src.position(self.start), *src.position(self.end))
            self._source = None
        return pos

    line = property(lambda self: self.positions[0])
    column = property(lambda self: self.positions[1])
    end_line = property(lambda self: self.positions[2])
    end_column = property(lambda self: self.positions[3])

    def contains(self, other: "Span") -> bool:
        return self.start <= other.start and other.end <= self.end

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Span):
            return NotImplemented
        return self.start == other.start and self.end == other.end and (
            self is other or self.positions == other.positions)

    def __hash__(self) -> int:
        return hash((self.start, self.end))

    def __repr__(self) -> str:
        line, column, end_line, end_column = self.positions
        return (f"Span(start={self.start}, end={self.end}, line={line}, column={column}, "
                f"end_line={end_line}, end_column={end_column})")

    def __reduce__(self):  # pickled (--jobs) with its positions, not the whole source
        return (_span, (self.start, self.end, *self.positions))


def _span(start: int, end: int, line: int, column: int, end_line: int, end_column: int) -> Span:
    return Span(start=start, end=end, line=line, column=column, end_line=end_line,
                end_column=end_column)


class _LazySpan(Span):
    """A `Span` made by `SpanFactory`: no `__init__` of its own to run, so making one is a bare
    allocation (`object.__new__(Span)` parses an argument tuple first: ≈ 290 instructions more
    a span, of ≈ 80,000 over verl's scripts). Pickled, compared and shown as a Span."""

    __slots__ = ()
    __init__ = object.__init__


_CONTINUATION = re.compile(b"[\x80-\xbf]")
_ASTRAL_LEAD = re.compile(rb"[\xf0-\xf4]")  # starts a 4-byte UTF-8 character
_LONG_LINE = 4096  # bytes: beyond, a line's columns are counted with an index


class SourceText:
    """The bytes of one script plus a line index."""

    def __init__(self, data: bytes, path: str | None = None) -> None:
        self.data = data
        self.path = path

    @cached_property
    def text(self) -> str:
        return self.data.decode("utf-8", errors="replace")

    @cached_property
    def line_starts(self) -> Sequence[int]:
        # an array, not a list: 8 bytes a line instead of 36, for every report kept to the end;
        # each line's length plus its newline, summed in C (a regex match a line was 1.5× it)
        lines = self.data.split(b"\n")
        return array("q", accumulate(map((1).__add__, map(len, lines[:-1])), initial=0))

    def trim(self) -> None:
        """Forget the decoded text (decoded again if read): a batch keeps every file's source
        for its code frames until the report is rendered, and the bytes are enough for that."""
        self.__dict__.pop("text", None)

    def line_of(self, offset: int) -> int:
        """0-based line index of a byte offset."""
        return bisect.bisect_right(self.line_starts, offset) - 1

    def line_bytes(self, line0: int) -> bytes:
        starts = self.line_starts
        end = starts[line0 + 1] if line0 + 1 < len(starts) else len(self.data)
        return self.data[starts[line0]:end]

    def line_text(self, line0: int) -> str:
        return self.line_bytes(line0).decode("utf-8", errors="replace").rstrip("\r\n")

    def position(self, offset: int) -> tuple[int, int]:
        """1-based (line, column in characters) of a byte offset, always inside the document:
        the end of a file that ends with a newline is the end of its last line (an N-line file
        has no line N+1 to point at)."""
        data = self.data
        offset = max(0, min(offset, len(data)))
        line0 = self.line_of(offset)
        if line0 and offset == len(data) and self.line_starts[line0] == offset:
            line0 -= 1
            offset -= 2 if data.endswith(b"\r\n") else 1
        start = self.line_starts[line0]
        if offset - start > _LONG_LINE:
            continuations = self._continuations(line0)
            if continuations is not None:  # characters = bytes - UTF-8 continuation bytes
                return line0 + 1, offset - start - bisect.bisect_left(continuations, offset) + 1
        prefix = self.data[start:offset]
        # most lines are ASCII, even in a script with some UTF-8: no decoding for them
        return line0 + 1, (len(prefix) if prefix.isascii()
                           else len(prefix.decode("utf-8", errors="replace"))) + 1

    def _continuations(self, line0: int) -> Sequence[int] | None:
        """Offsets of the UTF-8 continuation bytes of a long line, so that each position on it
        costs a bisection, not a decoding of the line up to it (a 1 MB one-line script with
        30,000 findings: minutes); None for a line that is not valid UTF-8."""
        found = self._long_lines.get(line0, False)
        if found is False:
            line = self.line_bytes(line0)
            try:
                line.decode("utf-8")
            except UnicodeDecodeError:
                found = None
            else:
                start = self.line_starts[line0]
                found = array("q", [start + m.start() for m in _CONTINUATION.finditer(line)])
            self._long_lines[line0] = found
        return found

    @cached_property
    def _long_lines(self) -> dict[int, Sequence[int] | None]:
        return {}

    def utf16_position(self, offset: int) -> tuple[int, int]:
        """0-based (line, UTF-16 code unit column) of a byte offset, as the LSP counts."""
        offset = max(0, min(offset, len(self.data)))
        line0 = self.line_of(offset)
        start = self.line_starts[line0]
        if offset - start > _LONG_LINE:
            continuations = self._continuations(line0)
            if continuations is not None:  # one unit a character, two for a 4-byte one
                astral = self._astral_leads(line0)
                return line0, (offset - start - bisect.bisect_left(continuations, offset)
                               + bisect.bisect_left(astral, offset))
        prefix = self.data[start:offset]
        if prefix.isascii():
            return line0, len(prefix)
        return line0, len(prefix.decode("utf-8", errors="replace").encode("utf-16-le")) // 2

    def _astral_leads(self, line0: int) -> Sequence[int]:
        """Offsets of the lead bytes of a long valid-UTF-8 line's 4-byte characters (two UTF-16
        units each), so that an editor position on it costs a bisection."""
        found = self._astral.get(line0)
        if found is None:
            start = self.line_starts[line0]
            found = self._astral[line0] = array(
                "q", [start + m.start() for m in _ASTRAL_LEAD.finditer(self.line_bytes(line0))])
        return found

    @cached_property
    def _astral(self) -> dict[int, Sequence[int]]:
        return {}

    def offset_of_utf16(self, line0: int, col16: int) -> int:
        """Byte offset of a 0-based (line, UTF-16 column) position, clamped into the document."""
        if line0 < 0:
            return 0
        if line0 >= len(self.line_starts):
            return len(self.data)
        raw = self.line_bytes(line0).decode("utf-8", errors="replace")
        units = 0
        for i, ch in enumerate(raw):
            if units >= col16 or ch in "\r\n":
                return self.line_starts[line0] + len(raw[:i].encode("utf-8"))
            units += 2 if ord(ch) > 0xFFFF else 1
        return self.line_starts[line0] + len(raw.encode("utf-8"))

    def span(self, start: int, end: int) -> Span:
        line, column = self.position(start)
        end_line, end_column = self.position(end)
        return Span(start=start, end=end, line=line, column=column,
                    end_line=end_line, end_column=end_column)

    def slice(self, span: Span) -> str:
        return self.data[span.start:span.end].decode("utf-8", errors="replace")


class SpanFactory:
    """`span(start, end)` for one document: lazy spans (positions worked out when first read).

    No cache of one object per range: with lazy positions sharing saves nothing to compute, and
    over verl's scripts 92% of the calls were misses that paid for the dict lookup and store
    (≈ 1,500 instructions a span, a third of the stage's span cost). Equal ranges make equal
    spans, compared by range and then positions."""

    __slots__ = ("source",)

    def __init__(self, source: SourceText) -> None:
        self.source = source

    def __call__(self, start: int, end: int) -> Span:
        span = _LazySpan()  # built here, not by a call: the parser makes ~330 spans a script
        span.start = start
        span.end = end
        span._positions = None
        span._source = self.source
        return span

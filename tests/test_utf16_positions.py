"""The LSP's UTF-16 columns: equal to decoding the line up to the offset, and cheap on a long
line (a 1 MB one-line script with thousands of findings was quadratic)."""

from __future__ import annotations

import time

from hypothesis import given
from hypothesis import strategies as st

from verl_lint.source import SourceText

CHARS = st.sampled_from(["a", " ", "=", "é", "中", "😀", "\n", "\r", "\x00"])


def naive(src: SourceText, offset: int) -> tuple[int, int]:
    offset = max(0, min(offset, len(src.data)))
    line0 = src.line_of(offset)
    prefix = src.data[src.line_starts[line0]:offset].decode("utf-8", errors="replace")
    return line0, len(prefix.encode("utf-16-le")) // 2


@given(st.lists(CHARS, max_size=40), st.integers(0, 6000), st.lists(st.integers(0, 7000)))
def test_utf16_columns_equal_decoding_the_prefix(chars, padding, offsets):
    # a long line (past the indexed threshold) and short ones, offsets on character boundaries
    text = "".join(chars[: len(chars) // 2]) + "x" * padding + "".join(chars[len(chars) // 2:])
    src = SourceText(text.encode())
    bounds = sorted({len(text[:i].encode()) for i in range(len(text) + 1)})
    for at in offsets:
        offset = bounds[at % len(bounds)]
        assert src.utf16_position(offset) == naive(src, offset)


def test_utf16_columns_on_a_megabyte_line_are_cheap():
    line = ("a=1 😀 é " * 100_000).encode()
    src = SourceText(line + b"\n")
    step = len(line) // 30_000
    started = time.monotonic()
    cols = [src.utf16_position(i * step)[1] for i in range(30_000)]
    assert time.monotonic() - started < 5  # decoding each prefix: minutes
    assert cols == sorted(cols)
    assert src.utf16_position(len(line)) == naive(src, len(line))

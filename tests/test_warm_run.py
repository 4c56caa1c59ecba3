"""The warm run (every file answered from the result cache) does little per file: what each of
its shortcuts replaced still gives the same answer."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from verl_lint.verl.choice import header_pin_range

_PIN = re.compile(r"\bverl\s*==\s*v?([0-9][0-9A-Za-z.+\-]*)")


def _header_pin_range_by_lines(text: str) -> tuple[int, int] | None:
    """The definition: the first `verl==X` among the script's first 40 lines (as
    `str.splitlines` cuts them) while each is blank or a comment."""
    pos = 0
    for line in text.splitlines(keepends=True)[:40]:
        stripped = line.strip()
        if stripped and not stripped.startswith("#"):
            break
        m = _PIN.search(line)
        if m:
            return pos + m.start(1), pos + m.start(1) + len(m.group(1).rstrip("."))
        pos += len(line)
    return None


# pieces that make header lines, pins and every line end or space `str.splitlines`/`strip` know
_PIECES = ["#", "#!/bin/bash", " ", "\t", "\n", "\r", "\r\n", "\v", "\f", "\x1c", "\x1d", "\x1e",
           "\x1f", "\x85", "\xa0", "\u2028", "\u2029", "\u3000", "verl", "==", " == ", "v",
           "0.8.0", "1.", "verl==0.9.1", "pip install verl==0.6.1.", "set -x", "x", "é"]


@settings(max_examples=3000, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), max_size=80), st.integers(0, 45))
def test_header_pin_range_is_the_line_by_line_definition(pieces, comment_lines):
    text = "# c\n" * comment_lines + "".join(pieces)
    assert header_pin_range(text) == _header_pin_range_by_lines(text)


def test_header_pin_range_reads_40_lines_at_most():
    for before, found in ((37, True), (38, True), (39, False)):  # the pin on line 39, 40, 41
        text = "#!/bin/bash\n" + "# c\n" * before + "# verl==0.8.0\n"
        where = header_pin_range(text)
        assert where == _header_pin_range_by_lines(text)
        assert (where is not None and text[where[0]:where[1]] == "0.8.0") == found

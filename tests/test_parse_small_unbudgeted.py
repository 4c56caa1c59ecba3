"""A script under `parser._ALWAYS_IN_TIME` bytes is parsed without the budget's progress
callback (its Python calls were a fifth of a verl script's parse cost beyond tree-sitter's);
a larger one under a pending alarm still goes through it."""

from __future__ import annotations

import time

from verl_lint import engine
from verl_lint.shell import parser
from verl_lint.source import SourceText


def _slow_to_parse(lines: int) -> bytes:  # the slowest input known (tests/test_hostile_input)
    return (b"#!/bin/bash\ncase x in\n  d1) X=1 ;;\nBIG=(\n"
            + b"".join(b"    +data.k%d=%d\n" % (i, i) for i in range(lines))
            + b")\n  d2) X=2 ;;\nesac\n")


def test_only_a_large_script_parses_through_the_callback(monkeypatch):
    seen = []
    through = parser._parse_until

    def recording(p, data, due):
        seen.append(len(data))
        return through(p, data, due)

    monkeypatch.setattr(parser, "_parse_until", recording)
    small = b"X=1\npython3 -m verl.trainer.main_ppo a.b=$X\n"
    large = small * (parser._ALWAYS_IN_TIME // len(small) + 1)
    with engine.file_budget(60):
        assert parser.parse_script(SourceText(small)).commands
        assert not seen
        model = parser.parse_script(SourceText(large))
    assert seen == [len(large)]
    assert model == parser.parse_script(SourceText(large))  # no alarm: the plain parse


def test_the_slowest_input_known_parses_in_time_under_the_size():
    lines = 1
    while len(_slow_to_parse(lines * 2)) < parser._ALWAYS_IN_TIME:
        lines *= 2
    while len(_slow_to_parse(lines + 50)) < parser._ALWAYS_IN_TIME:
        lines += 50
    data = _slow_to_parse(lines)
    started = time.process_time()
    parser._parser().parse(data)
    assert time.process_time() - started < 2  # ≈ 0.1 s; a budget is 20 s unless set lower

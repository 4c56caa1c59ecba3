"""The parse stage's shortcuts (issue 17, cold path) build the model the plain code builds.

Each test parses tricky scripts twice, once with the shortcut taken away, and compares the
whole models (their recursive reprs: every statement, word, piece and span position).
"""

from __future__ import annotations

import pytest

from verl_lint.shell import parse_script
from verl_lint.shell import parser as shell_parser
from verl_lint.source import SourceText


def _model(text: str) -> str:
    model = parse_script(SourceText(text.encode()))
    return repr((model.body, model.comments, model.heredocs, model.errors))


_ESCAPED_BLANKS = [
    "a=1 \\ \\\nb=2\n",
    "x=1 \\  # note\n",
    "python3 -m verl.trainer.main_ppo \\\n    a=1 \\ \n    b=2\n",
    "cmd a \\\t b\n",
    "cmd a \\\t\n",
    "cmd a \\  \n",
    "ARGS=( a=1 \\  b=2 \\\t c=3 )\n",
    "ARGS=(\n  a=1 \\ \n  b=2\n)\n",
    "echo \\\\ x \\ y\n",
    "if true; then cmd 'a' \\ \"b\"; fi\n",
    "cmd a\\ b c\n",
]


@pytest.mark.parametrize("text", _ESCAPED_BLANKS)
def test_the_file_look_for_escaped_blanks_finds_every_one(text, monkeypatch):
    """`_may_hold_escaped_blanks` lets commands and arrays skip their regex search only in a
    file where there is nothing to find (a `\\` before a tab too)."""
    shortcut = _model(text)
    monkeypatch.setattr(shell_parser, "_may_hold_escaped_blanks", lambda data: True)
    assert shortcut == _model(text)


def test_a_file_without_escaped_blanks_skips_the_search():
    assert not shell_parser._may_hold_escaped_blanks(b"a=1 \\\nb='x y' \\\\\n")
    assert all(shell_parser._may_hold_escaped_blanks(t.encode()) for t in _ESCAPED_BLANKS)

"""The parse stage's shortcuts (issue 17, cold path) build the model the plain code builds.

Each test parses tricky scripts twice, once with the shortcut taken away, and compares the
whole models (their recursive reprs: every statement, word, piece and span position).
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from verl_lint.shell import lexer as lexer_module
from verl_lint.shell import parse_script
from verl_lint.shell import parser as shell_parser
from verl_lint.shell.lexer import WordLexer
from verl_lint.source import SourceText, SpanFactory


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


_BITS = st.sampled_from([
    "a", "k=", "b/c", ".", "-", "${X}", "${X:-v}", "${X-a b}", "$X", "$1", "$@", "${A[@]}", "'",
    "'q'", '"', '"$X"', '"a b"', "$(cmd)", "$((1+2))", "\\", "\\ ", "`", "<", ">", "=", "~", "{",
    "}", ":", "é",
])


@settings(max_examples=400, deadline=None)
@given(st.lists(_BITS, min_size=1, max_size=8).map("".join))
def test_a_word_starting_with_a_literal_lexes_as_the_general_lexer_does(word):
    """`word` hands where the word's leading literal ends to `fast_pieces`, which takes it as
    its first piece: the pieces are those `fast_pieces` finds alone, and those of the general
    lexer."""
    data = word.encode()
    lexer = WordLexer(data, SpanFactory(SourceText(data)))
    run = lexer_module._LITERAL_RUN.match(data)
    lead = run.end() if run else 0
    if data.isascii():
        assert _pieces(lexer.fast_pieces(0, len(data), word, lead)) == \
            _pieces(lexer.fast_pieces(0, len(data), word))
    assert _pieces(lexer.word(0, len(data)).pieces) == _pieces(lexer.pieces(0, len(data), "none"))


def _pieces(pieces):
    return None if pieces is None else [repr(p) for p in pieces]


def test_the_builder_makes_its_spans_with_the_models_factory():
    """The builder calls its factory's bound `__call__` (cheaper than calling the factory), the
    one the model's `span` gives: lazy spans of the model's source, equal to those it made."""
    source = SourceText(b"X=${X:-1}\necho \"$X\" a\n")
    model = parse_script(source)
    assert model.span.__func__ is SpanFactory.__call__ and model.span.__self__.source is source
    for s in model.statements:
        assert model.span(s.span.start, s.span.end) == s.span
    for w in model.words:
        assert model.span(w.span.start, w.span.end) == w.span
        for p in w.pieces:
            assert model.span(p.span.start, p.span.end) == p.span
            assert p.span == source.span(p.span.start, p.span.end)

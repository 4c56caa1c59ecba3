"""The fast word lexer takes `${X:-…}`, `$(…)` and `$((…))` itself: every word built of such
pieces, quoted or not, nested or not, gives exactly the general lexer's pieces."""

from __future__ import annotations

from hypothesis import given, settings, strategies as st

from verl_lint.shell.lexer import WordLexer
from verl_lint.shell.parser import SpanFactory
from verl_lint.source import SourceText

PIECES = ["a", "k=", "/x", "'q r'", '"', "${X}", "$Y", "${X:-1}", "${X:-a/b}", "${X-}",
          "${X:=v}", "${X:+on}", "${X:?need}", '${X:-"a ${Y} b"}', "${X:-${Y:-2}}",
          "${X:-$(date +%s)}", "${X:-'s q'}", "${#X}", "${X:0:2}", "${X/a/b}", "${X%.*}",
          "${oc.env:HOME}", "${X", "${X[@]}", "${A[1]:-z}", "$(a)", '$(a "b c" d)', "$( (a) )",
          "$((1 + 2))", "$(( (1+2) * 3 ))", "$((X", "$(", "$", "\\$", "$'\\n'", '$"t"', "`b`",
          "${X:-\\}}", "é", ""]
WORDS = st.lists(st.sampled_from(PIECES), min_size=1, max_size=6).map("".join)
KEY = ("kind", "span", "text", "quoted", "value", "name", "index", "operator", "argument",
       "braced", "body")


@settings(max_examples=600)
@given(WORDS)
def test_fast_pieces_are_the_general_lexers(word):
    data = word.encode()
    lexer = WordLexer(data, SpanFactory(SourceText(data)))
    if not data.isascii():
        return
    fast = lexer.fast_pieces(0, len(data), data.decode())
    if fast is None:
        return
    slow = lexer.pieces(0, len(data), "none")
    assert [[getattr(p, k) for k in KEY] for p in fast] == \
        [[getattr(p, k) for k in KEY] for p in slow]


def test_a_default_is_taken_by_the_fast_lexer():
    data = b'M=${MODEL:-Qwen/Qwen2.5-7B}'
    lexer = WordLexer(data, SpanFactory(SourceText(data)))
    assert lexer.fast_pieces(2, len(data), data.decode()) is not None

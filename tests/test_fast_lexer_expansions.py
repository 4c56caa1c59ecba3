"""The fast word lexer takes `${X:-…}`, `$(…)` and `$((…))` itself (that it gives the general
lexer's pieces is `test_shell_properties.test_fast_word_lexer_agrees_with_the_general_one`)."""

from __future__ import annotations

import pytest

from verl_lint.shell.lexer import WordLexer
from verl_lint.shell.parser import SpanFactory
from verl_lint.source import SourceText


@pytest.mark.parametrize("word", ["M=${MODEL:-Qwen/Qwen2.5-7B}", 'k="${X:-a ${Y}}"', "n=$(nproc)",
                                  "b=$((8 * 1024))"])
def test_defaults_and_substitutions_take_the_fast_lexer(word):
    data = word.encode()
    lexer = WordLexer(data, SpanFactory(SourceText(data)))
    assert lexer.fast_pieces(0, len(data), word) is not None

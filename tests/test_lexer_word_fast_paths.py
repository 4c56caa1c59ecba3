"""`WordLexer.word` finds where a word's leading literal ends in the document's map of the
bytes that end one (no regex call for a plain word; `fast_pieces` takes it as its first piece),
asks the Latin-1 view's slice whether the word is ASCII (no regex search for a UTF-8 byte), and
`fast_pieces` takes a "…" holding one piece as one match: in every mode, in ASCII documents and
in documents holding UTF-8, its words are the general lexer's."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from verl_lint.shell import lexer
from verl_lint.shell.lexer import WordLexer
from verl_lint.source import SourceText, SpanFactory

_BITS = st.sampled_from([
    "a", "k=", "b/c", "${X}", "${X:-v}", "${X:-é}", "$X", "$@", "${A[@]}", "'q'", "'é'", '"',
    '"$X"', '"${X}"', '"$@"', '"$1"0', '"${A[@]}"', '"a b"', '"a é"', "$(cmd é)", "$((1+2))", "\\", "\\ ", "`", "<", ">", "é", "你", " ", "$",
])


def _pieces(pieces):
    return [[p.kind, p.span.start, p.span.end, p.text, p.quoted, p.value, p.name, p.index,
             p.operator, p.braced, p.body, p.argument and _word(p.argument)] for p in pieces]


def _word(word):
    return word.span.start, word.span.end, word.text, _pieces(word.pieces)


@settings(max_examples=500, deadline=None)
@given(st.lists(_BITS, min_size=1, max_size=8).map("".join),
       st.sampled_from(["none", "double", "heredoc"]), st.sampled_from(["", "# é\n"]))
def test_word_is_the_general_lexers(word, mode, head):
    doc = (head + word).encode()
    start = len(head.encode())
    lexer = WordLexer(doc, SpanFactory(SourceText(doc)))
    fast = lexer.word(start, len(doc), mode)
    assert fast.text == word and (fast.span.start, fast.span.end) == (start, len(doc))
    assert _pieces(fast.pieces) == _pieces(lexer.pieces(start, len(doc), mode))


@pytest.mark.parametrize("word", [
    '"$X"', '"${X}"', '"$@"', '"$10"', '"${A[@]}"x', '"${A[*]}"', '"abc"', '"a b"/c', '""',
    'k="$X"', '"$X""$Y"', '"$X"\'y\'', '"${X}/a"', '"${X:-v}"', '"$X', 'a"$X"b',
])
def test_one_piece_in_double_quotes_is_the_general_lexers(word):
    doc = word.encode()
    lexer = WordLexer(doc, SpanFactory(SourceText(doc)))
    fast = lexer.fast_pieces(0, len(doc), word)
    general = lexer.pieces(0, len(doc), "none")
    assert fast is None or _pieces(fast) == _pieces(general)
    assert _pieces(lexer.word(0, len(doc)).pieces) == _pieces(general)


def test_the_map_of_run_ends_is_the_run_regex():
    run = re.compile(lexer._RUN)
    assert [lexer._RUN_END_MAP[b] for b in range(256)] == \
        [int(run.fullmatch(bytes([b])) is None) for b in range(256)]

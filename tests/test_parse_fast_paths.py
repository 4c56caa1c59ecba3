"""The parse stage's fast paths give what the general code gives.

- `WordLexer.fast_pieces` takes `${X:-v}` (any of `-`, `=`, `+`, `?`, with or without `:`,
  whose word is one plain literal) by one regex group instead of `expansion`/`braced`;
- `WordLexer` reads ASCII words of a document holding UTF-8 through a Latin-1 view of it
  (character i is byte i) instead of decoding each word;
- `SpanFactory` builds its spans itself (no cache), positions worked out late.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from verl_lint.shell import parse_script
from verl_lint.shell.lexer import WordLexer
from verl_lint.source import SourceText
from verl_lint.shell.parser import SpanFactory

_KEY = ("kind", "span", "text", "quoted", "value", "name", "index", "operator", "argument",
        "braced", "body")


def _pieces(pieces):
    return [[getattr(p, k) for k in _KEY] for p in pieces]


def _lexer(data: bytes) -> WordLexer:
    return WordLexer(data, SpanFactory(SourceText(data)))


@pytest.mark.parametrize("word", [
    "${MODEL:-Qwen/Qwen2.5-7B}", "${X-a}", "${X:=1}", "${X=1}", "${X:+on}", "${X+on}",
    "${X:?need X}", "${X?msg}x", "k=${N:-8}/x", '"${X:-a b}"', 'a"${X:-1}"${Y-2}',
])
def test_plain_defaults_take_the_regex_group(word, monkeypatch):
    data = word.encode()
    lexer = _lexer(data)

    def general(*_args):
        raise AssertionError("took expansion()")

    monkeypatch.setattr(lexer, "expansion", general)
    fast = lexer.fast_pieces(0, len(data), word)
    assert fast is not None
    monkeypatch.undo()
    assert _pieces(fast) == _pieces(lexer.pieces(0, len(data), "none"))


_BITS = st.sampled_from([
    "${X", "${X_1", ":-", "-", ":=", "=", ":+", "+", ":?", "?", ":", "#", "%", "/", "}", "{",
    "a", "b/c", " ", "'", '"', "\\", "$", "$Y", "${Y}", "<", ">", "`", "[@]", "(", ")", "é",
    "0", "~", ",",
])


@settings(max_examples=400, deadline=None)
@given(st.lists(_BITS, min_size=1, max_size=10).map("".join))
def test_fast_lexer_agrees_with_the_general_one_on_defaults(word):
    data = word.encode()
    if not data.isascii():
        return
    lexer = _lexer(data)
    fast = lexer.fast_pieces(0, len(data), word)
    if fast is not None:
        assert _pieces(fast) == _pieces(lexer.pieces(0, len(data), "none"))


@settings(max_examples=200, deadline=None)
@given(st.lists(_BITS, min_size=1, max_size=10).map("".join),
       st.sampled_from(["none", "double", "heredoc"]))
def test_a_word_in_a_document_with_utf8_lexes_as_alone(word, mode):
    """The Latin-1 view is read only for ASCII words: a word (ASCII or not) after a UTF-8
    comment gives the pieces it gives in a document of its own, shifted."""
    head = "# é ü 你好\n".encode()
    data = word.encode()
    alone = _lexer(data).word(0, len(data), mode)
    doc = head + data
    within = _lexer(doc).word(len(head), len(doc), mode)

    def shape(w):
        return (w.text, [[p.kind, p.text, p.quoted, p.value, p.name, p.operator,
                          p.argument and shape(p.argument), p.span.end - p.span.start]
                         for p in w.pieces])

    assert shape(within) == shape(alone)
    assert within.text == doc[len(head):].decode("utf-8", errors="replace")


def test_span_factory_gives_spans_equal_by_range_with_late_positions():
    src = SourceText("a\nbé c\n".encode())
    spans = SpanFactory(src)
    s = spans(2, 6)
    assert s._positions is None  # not worked out until read
    again = spans(2, 6)
    assert again == s and hash(again) == hash(s) and spans(2, 5) != s
    assert s.positions == (2, 1, 2, 4) == src.span(2, 6).positions
    assert SpanFactory(src)(2, 6) == s == src.span(2, 6)
    assert len({s, again, src.span(2, 6)}) == 1


def test_a_utf8_script_parses_as_its_ascii_twin():
    """Same words and pieces (their texts and values) whether or not a comment holds UTF-8."""
    body = ('X=${MODEL:-Qwen/Qwen2.5-7B}\nA=(\n  a.b=${X}\n  "c=${Y:-1}"\n)\n'
            'python3 -m m k="$X" v=\'w\' ${Z-2} "${A[@]}"\n')

    def words(text):
        model = parse_script(SourceText(text.encode()))
        return [(w.text, [(p.kind, p.text, p.value, p.name, p.operator) for p in w.pieces])
                for w in model.words]

    assert words("# é\n" + body) == words("# e\n" + body)


def test_the_grammar_loads_without_the_package_init():
    """tree-sitter-bash's `__init__` imports importlib.resources (milliseconds of start-up)."""
    import subprocess
    import sys

    code = ("import sys; from verl_lint.shell import parse_script; "
            "from verl_lint.source import SourceText; "
            "m = parse_script(SourceText(b'X=1\\necho $X\\n')); "
            "print(len(m.statements), 'importlib.resources' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == ["2", "False"]


def test_the_grammar_falls_back_to_the_package(monkeypatch):
    import importlib.util

    from tree_sitter import Language, Parser

    from verl_lint.shell import parser

    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    tree = Parser(Language(parser._bash_grammar())).parse(b"echo hi\n")
    assert tree.root_node.children[0].type == "command"


@pytest.mark.parametrize(("line", "exported"), [
    ("export X=1", True), ("declare -x X=1", True), ("declare -ax X=(1)", True),
    ("declare -a X=(1)", False), ("declare +x X=1", False), ("local X=1", False), ("X=1", False),
    ("typeset -r -x X=1", True),
])
def test_exported(line, exported):
    (a,) = parse_script(SourceText(line.encode())).assignments
    assert a.exported is exported


def test_statements_is_the_preorder_of_children():
    """`ScriptModel.statements` skips `children` for the statement types that hold none."""
    from verl_lint.shell.model import children

    text = """set -e
f() { local X=1; echo "$X" | tr a b; }
if [ "$D" = npu ]; then A=1; elif cmd; then (B=2; unset B); else { C=3; }; fi
case "$D" in gpu) for i in 1 2; do echo "$i"; done ;; *) while false; do :; done ;; esac
X=1 cmd && other || ((n++))
"""
    model = parse_script(SourceText(text.encode()))

    def preorder(stmts):
        for s in stmts:
            yield s
            for group in children(s):
                yield from preorder(group)

    expected = list(preorder(model.body))
    assert len(expected) > 20
    assert [id(s) for s in model.statements] == [id(s) for s in expected]

"""Properties of the shell and evaluate stages (hypothesis).

- parsing and evaluating never raise, whatever the input;
- every span lies inside the document, with the line/column `SourceText` gives its ends;
- overrides rendered into each script style (inline `\\` chain, role arrays, one line), with any
  quoting bash allows, are extracted back unchanged.
"""

from __future__ import annotations

import shlex

from hypothesis import given
from hypothesis import strategies as st

from test_robustness import assert_spans_valid, spans_in
from verl_lint.evaluate import Unknown, evaluate_script
from verl_lint.shell import parse_script
from verl_lint.shell.model import children
from verl_lint.source import SourceText

SHELLISH = st.sampled_from(list("abcxyz_=.$:{}[]()'\"\\`#|&;<>!*?-+~ \t\n") + [
    "${X:-", "$((", "$(", "case ", " in ", "esac", "if ", "then", "fi", "<<EOF\n", "EOF\n",
    "python3 -m verl.trainer.main_ppo ", "ARR=(", "\"${ARR[@]}\"", "\"$@\"", "é", "中"])


def check_document(data: bytes) -> None:
    source = SourceText(data)
    model = parse_script(source)
    assert_spans_valid(source, spans_in(model), "parse")
    for s in model.statements:
        for group in children(s):
            for child in group:
                assert s.span.start <= child.span.start and child.span.end <= s.span.end
    for run in evaluate_script(model):
        assert_spans_valid(source, spans_in(run), "evaluate")
        for launch in run.launches:
            for o in launch.overrides:
                assert o.span.start <= o.key_span.start <= o.key_span.end <= o.span.end


@given(st.lists(SHELLISH, max_size=60).map("".join))
def test_shellish_text_never_raises_and_spans_are_inside(text):
    check_document(text.encode())


@given(st.binary(max_size=300))
def test_arbitrary_bytes_never_raise(data):
    check_document(data)


# ---- round trip of generated overrides ---------------------------------------------------------

IDENT = st.from_regex(r"[a-z][a-z0-9_]{0,8}", fullmatch=True)
KEYS = st.lists(IDENT, min_size=1, max_size=4).map(".".join)
SIMPLE = st.one_of(
    st.integers(-10**6, 10**6).map(str),
    st.sampled_from(["True", "False", "null", "1e-6", "0.6", "vllm", "fsdp2", "token-mean"]),
    st.from_regex(r"[A-Za-z0-9_./-]{1,12}", fullmatch=True),
)
QUOTED_ONLY = st.one_of(
    st.lists(st.sampled_from(['"console"', '"wandb"', "1", "2"]), min_size=1, max_size=3)
    .map(lambda xs: "[" + ",".join(xs) + "]"),
    st.from_regex(r"[A-Za-z0-9 _./{}:,'-]{1,16}", fullmatch=True),
)
OVERRIDE = st.tuples(st.sampled_from(["", "+", "++"]), KEYS, st.one_of(SIMPLE, QUOTED_ONLY))


def _dq(value: str) -> str:
    return '"' + "".join("\\" + ch if ch in '"$`\\' else ch for ch in value) + '"'


def render_word(prefix: str, key: str, value: str, style: int) -> str:
    plain = all(ch.isalnum() or ch in "_./-+:" for ch in value) and value != ""
    if style == 0 and plain:
        return f"{prefix}{key}={value}"
    if style == 1 and "'" not in value:
        return f"{prefix}{key}='{value}'"
    if style == 2:
        return f"{prefix}{key}={_dq(value)}"
    return shlex.quote(f"{prefix}{key}={value}")


def render_script(items, layout: str, styles) -> str:
    words = [render_word(p, k, v, s) for (p, k, v), s in zip(items, styles)]
    head = "#!/usr/bin/env bash\nset -xeuo pipefail\n"
    if layout == "chain":
        body = " \\\n    ".join(["python3 -m verl.trainer.main_ppo", *words]) + ' \\\n    "$@"\n'
    elif layout == "arrays":
        half = len(words) // 2
        body = ("ACTOR=(\n" + "".join(f"    {w}\n" for w in words[:half]) + ")\n"
                "TRAINER=(\n    # trailing comments are fine in arrays\n"
                + "".join(f"    {w}\n" for w in words[half:]) + ")\n"
                'python3 -m verl.trainer.main_ppo "${ACTOR[@]}" "${TRAINER[@]}" "$@" '
                "2>&1 | tee log.txt\n")
    else:
        body = "python3 -m verl.trainer.main_ppo " + " ".join(words) + "\n"
    return head + body


@given(st.lists(OVERRIDE, min_size=1, max_size=12),
       st.sampled_from(["chain", "arrays", "line"]),
       st.lists(st.integers(0, 3), min_size=12, max_size=12))
def test_rendered_overrides_round_trip(items, layout, styles):
    text = render_script(items, layout, styles)
    model = parse_script(SourceText(text.encode()))
    assert model.errors == ()
    (run,) = evaluate_script(model)
    (launch,) = run.launches
    got = [(o.prefix, o.key, o.value) for o in launch.overrides]
    assert got == [(p, k, v) for p, k, v in items]
    assert all(not isinstance(o.text, Unknown) for o in launch.overrides)
    src = text.encode()
    for o, (p, k, _) in zip(launch.overrides, items):
        # every rendering leaves the key verbatim in the script: its span is exactly the key
        assert src[o.key_span.start:o.key_span.end].decode() == k


WORDISH = st.lists(st.sampled_from(
    ["a", "b.c=", "=", "/", "-", "'x y'", "''", '""', '"v w"', "${X}", "$Y", '"${Z}"', '"$W"',
     "$", "${X:-1}", "\\ ", "'", '"', "~", "[1,2]", "$HOME", "é", "$@", '"$@"', "$1", "0",
     "$#", "${A[@]}", '"${A[*]}"', "${A[1]}", "[@]", "$*", '"x$Y/z"', '"${X}${Y}"', "`", "<",
     "$((1))", "$(a)",
     # `${…}` and `$(…)` the fast lexer takes as the general one does
     "${X:-a/b}", '${X:-"a ${Y} b"}', "${X:-${Y:-2}}", "${X:-$(date +%s)}", "${X:-'s q'}",
     "${#X}", "${X:0:2}", "${oc.env:HOME}", "${X", '$(a "b c" d)', "$(( (1+2) * 3 ))",
     '"${X:-a b}"', '"$(a)"', '"$((1 + 2))"',
     "$((X", "$(", "${X:-\\}}",
     # inside "…" a `'` in `${…}` does not quote (the fast lexer's double-quote flag)
     "\"${X:-'}'}\""]), min_size=1, max_size=8
).map("".join)


@given(WORDISH)
def test_fast_word_lexer_agrees_with_the_general_one(word):
    from verl_lint.shell.lexer import WordLexer
    from verl_lint.shell.parser import SpanFactory

    data = word.encode()
    lexer = WordLexer(data, SpanFactory(SourceText(data)))
    if not data.isascii():
        return
    fast = lexer.fast_pieces(0, len(data), data.decode())
    if fast is None:
        return
    slow = lexer.pieces(0, len(data), "none")
    key = ("kind", "span", "text", "quoted", "value", "name", "index", "operator", "argument",
           "braced", "body")
    assert [[getattr(p, k) for k in key] for p in fast] == \
        [[getattr(p, k) for k in key] for p in slow]

"""The evaluator's fast paths give what its plain paths give.

- `launch._spans` (an override's key and value spans read from the word's first part) against
  `launch._walked_spans` (the walk over the parts), on generated words: several parts, unknown
  parts, non-ASCII text, text that is not verbatim in the script, spans that do not hold it;
- a lone `"$X"` word, expanded once, against expanding it twice as the loop used to (the
  default of `_assigns` forced), on the fixtures, verl's scripts and words that assign;
- an unquoted `$X` whose value has no blanks (one word, no IFS split) against bash;
- `$X`, `"$X"`, `k=$X`, `k="$X"` made into their one word by `expand_words` against the word
  loop of `split_pieces` (`_one_field` declining every word);
- the label of a branch is made only when a note needs it: a script that notes nothing never
  looks up a line;
- `records.positional` builds the same Override and VarUse as their keyword constructors.
"""

from __future__ import annotations

import dataclasses
import inspect
import shutil
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from verl_lint.dev import bash_oracle
from verl_lint.evaluate import evaluate_script, interp, launch
from verl_lint.evaluate.launch import _spans, _walked_spans
from verl_lint.evaluate.model import Override, Unknown, VarUse
from verl_lint.evaluate.values import Field, Part
from verl_lint.records import positional
from verl_lint.shell import parse_script
from verl_lint.source import SourceText, Span

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "corpus" / "verl-head"
SCRIPTS = sorted((ROOT / "fixtures").rglob("*.sh")) + (
    sorted(CORPUS.rglob("*.sh")) if CORPUS.is_dir() else [])


def _runs(text: bytes):
    return evaluate_script(parse_script(SourceText(text)))


# ---- override spans -------------------------------------------------------------------------

def _span(start: int, end: int) -> Span:
    return Span(start=start, end=end, line=1, column=start + 1, end_line=1, end_column=end + 1)


def _span_fn(start: int, end: int):
    # a span factory that cannot make some ranges (`or span` then falls back to the word)
    return None if (start + end) % 7 == 3 else (start, end)


@st.composite
def _override_words(draw):
    start = draw(st.integers(0, 8))
    span = _span(start, start + draw(st.integers(0, 24)))
    parts = []
    for _ in range(draw(st.integers(1, 4))):
        if draw(st.integers(0, 4)) == 0:
            parts.append(Part(Unknown(reason="run time")))
            continue
        src = draw(st.one_of(st.none(), st.integers(max(0, start - 2), start + 14)))
        parts.append(Part(draw(st.text(alphabet="ab=+.é", max_size=6)), src))
    lead = ""
    for p in parts:  # the known text before the first unknown part, as detect_launch reads it
        if isinstance(p.value, Unknown):
            break
        lead += p.value
    eq = lead.find("=")
    b = eq if eq >= 0 else len(lead)
    a = draw(st.integers(0, min(2, b)))
    return Field(parts, span), a, b, eq, draw(st.booleans())


@settings(max_examples=800)
@given(_override_words())
# the key fills the first part and its `=` starts the next, not next to it in the script
@example((Field([Part("ab", 0), Part("=x", 10)], _span(0, 24)), 0, 2, 2, True))
@example((Field([Part("k=", 3), Part("v", None)], _span(3, 9)), 0, 1, 1, True))  # `k=$V`
@example((Field([Part("é=1", 0)], _span(0, 5)), 0, 1, 1, True))  # bytes are not characters
def test_override_spans_from_the_first_part_are_the_walked_ones(word):
    f, a, b, eq, value_known = word
    assert _spans(f, a, b, eq, value_known, _span_fn) == \
        _walked_spans(f, a, b, eq, value_known, _span_fn)


def test_override_spans_of_plain_and_expanded_words():
    text = (b'V=1\npython3 -m verl.trainer.main_ppo a.b=2 +c.d=$V \'e.f=3\' g="$V"x '
            b'\xc3\xa9.k=4 ~h.i\n')
    (run,) = _runs(text)
    got = {o.key: (text[o.key_span.start:o.key_span.end].decode(),
                   None if o.value_span is None else
                   text[o.value_span.start:o.value_span.end].decode())
           for o in run.launches[0].overrides}
    assert got == {"a.b": ("a.b", "2"), "c.d": ("c.d", None), "e.f": ("e.f", "3'"),
                   "g": ("g", None), "é.k": ("é.k", "4"), "h.i": ("h.i", None)}


# ---- a lone "$X" is expanded once -----------------------------------------------------------

_LONE = [
    b'V=c=3\npython3 -m verl.trainer.main_ppo "$V" "${V:+x=1}" "${W:-y=2}" "${A[@]}"\n',
    b'python3 -m verl.trainer.main_ppo "${K:=a=1}" "$K" "${J:-b=$K}"\n',
    b'set -u\npython3 -m verl.trainer.main_ppo "${K:?}" "${L:-${M:=m=1}}" "$M"\n',
    b'A=(x=1 "y=2 3")\nB=("${A[@]}" "$1")\npython3 -m verl.trainer.main_ppo "${B[@]}" "$@"\n',
]


@pytest.mark.parametrize("text", _LONE)
def test_a_lone_expansion_reads_as_expanding_it_twice(text, monkeypatch):
    once = _runs(text)
    monkeypatch.setattr(interp, "_assigns", lambda p: True)  # the loop expands it again
    assert once == _runs(text)


def test_a_word_that_assigns_is_fed_by_its_own_assignment():
    # "${K:=a=1}" sets K; expanded again, the word reads that K (as it always has)
    text = b'python3 -m verl.trainer.main_ppo "${K:=a=1}"\n'
    (run,) = _runs(text)
    (o,) = run.launches[0].overrides
    assert (o.key, o.value, o.variables) == ("a", "1", ("K",))
    assert [(s.start, s.end) for s in o.fed_by] == [(34, 43)]


def test_lone_expansions_on_real_scripts_read_as_before(monkeypatch):
    assert len(SCRIPTS) > 50
    once = [_runs(p.read_bytes()) for p in SCRIPTS]
    monkeypatch.setattr(interp, "_assigns", lambda p: True)
    for path, runs in zip(SCRIPTS, once):
        assert runs == _runs(path.read_bytes()), path


# ---- an unquoted $X with no blanks, against bash -------------------------------------------

@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_unquoted_expansions_split_as_bash_does(tmp_path):
    values = ["1e-6", "", "a b", "x\ty", "p\nq", "*.parquet", "[a,b]", "~/ckpt", " lead",
              "trail ", "k=v"]
    lines = [f"V{i}={bash_quote(v)}" for i, v in enumerate(values)]
    args = " ".join(f"k{i}=$V{i} $V{i}" for i in range(len(values)))
    lines.append(f"python3 -m verl.trainer.main_ppo {args}")
    script = tmp_path / "run.sh"
    script.write_text("#!/bin/bash\n" + "\n".join(lines) + "\n")
    results = bash_oracle.check_paths([str(script)])
    assert results and not [r for r in results if r.disagreements], bash_oracle.report(results)


def bash_quote(v: str) -> str:
    return "$'" + v.replace("\\", "\\\\").replace("'", "\\'").replace("\t", "\\t") \
        .replace("\n", "\\n") + "'"


# ---- branch labels are made when a note needs them -----------------------------------------

def test_merges_that_note_nothing_look_up_no_line():
    text = (b'if [ "$X" = a ]; then\n  echo x\nelif [ "$Y" = b ]; then\n  echo y\nfi\n'
            b'case "$M" in\n  a) echo a ;;\n  *) echo b ;;\nesac\n'
            b'[ -z "$Q" ] && echo q\n'
            b'python3 -m verl.trainer.main_ppo a=1\n')
    source = SourceText(text)
    evaluate_script(parse_script(source))
    assert "line_starts" not in vars(source)  # no span was asked for its line


def test_an_untaken_branch_still_names_itself_in_the_note():
    text = (b'case "$DEVICE" in\n  npu) TP=2 ;;\n  gpu) echo ;;\nesac\n'
            b'python3 -m verl.trainer.main_ppo a=$TP\n')
    runs = _runs(text)
    notes = {(r.scenario.label, u.name): u.note for r in runs for u in r.var_uses}
    assert notes[("DEVICE=gpu", "TP")] == "only the `npu` branch (line 2) of `case $DEVICE` " \
                                           "assigns it"


# ---- records built positionally ------------------------------------------------------------

@pytest.mark.parametrize("cls", [Override, VarUse])
def test_positional_constructors_build_the_records_own_objects(cls):
    names = [f.name for f in dataclasses.fields(cls)]
    make = positional(cls)
    assert list(inspect.signature(make).parameters) == names  # every field, in field order
    values = {n: f"<{n}>" for n in names}
    built = make(*values.values())
    assert type(built) is cls and built == cls(**values)
    assert all(getattr(built, n) == v for n, v in values.items())


# ---- "${A[@]}" hands out the array's own Fields ---------------------------------------------

def test_an_expansion_that_marks_its_words_leaves_the_array_it_read_alone():
    # `B=($E"$@")` marks the words it takes from "$@" as B's; "$@" itself stays unmarked
    text = b'E=\nf() {\n  B=($E"$@")\n  python3 -m verl.trainer.main_ppo "$@" "${B[@]}"\n}\n' \
           b'f x=1 "y=$Z"\n'
    (run,) = _runs(text)
    assert [(o.key, o.array, o.variables) for o in run.launches[0].overrides] == [
        ("x", None, ()), ("y", None, ("Z",)), ("x", "B", ()), ("y", "B", ("Z",))]


def test_the_positional_calls_name_the_fields_in_the_records_order():
    """`_var_use(...)` and `_new_override(...)` pass fields by position (see
    `records.positional`): a field inserted or moved in the model would shift their values."""
    assert [f.name for f in dataclasses.fields(VarUse)] == [  # interp.record_use's call
        "name", "span", "has_default", "state", "note", "nounset", "required"]
    assert [f.name for f in dataclasses.fields(Override)] == [  # launch._override's call
        "prefix", "key", "value", "text", "span", "key_span", "value_span", "array", "fed_by",
        "variables"]


# ---- `$X`, `"$X"`, `k=$X`, `k="$X"` made into their one word directly ----------------------

_ONE_WORD = [
    b'E=\nB="a b"\nG="*.json"\nL="${E:-}"\n'
    b'python3 -m verl.trainer.main_ppo $E k=$E "$E" k="$E" $B k=$B "$B" k="$B" $G k=$G\n',
    b'set -f\nG="*.json"\npython3 -m verl.trainer.main_ppo $G k=$G "${U:-}" k=${U:-"x y"} '
    b'${U:-"x y"}\n',
    b'IFS=:\nV=a:b\npython3 -m verl.trainer.main_ppo $V k=$V "$V"\n',
    b'A=(x=1 "y=2 3")\npython3 -m verl.trainer.main_ppo k=${A[@]} k="${A[@]}" $@ k=$@ '
    b'k=${K:=a=1} "${J:=b}" k="${J:=c}" $J\n',
    b'shopt -s nullglob\nG="[ab]"\npython3 -m verl.trainer.main_ppo $G k=$G k=$HOME '
    b'k=${#A[@]} $((1+2)) k=~/x k=$(pwd)\n',
    b'C="a=1 m=$HOME/x"\nX=$(printf %070000d 0)\npython3 -m verl.trainer.main_ppo $C k=$C '
    b'k=$X "$X"\n',
]


@pytest.mark.parametrize("text", _ONE_WORD)
def test_one_word_expansions_read_as_the_word_loop_reads_them(text, monkeypatch):
    direct = _runs(text)
    monkeypatch.setattr(interp.Interpreter, "_one_field", lambda self, p, e, st: None)
    assert direct == _runs(text)


def test_one_word_expansions_on_real_scripts_read_as_the_word_loop_reads_them(monkeypatch):
    direct = [_runs(p.read_bytes()) for p in SCRIPTS]
    monkeypatch.setattr(interp.Interpreter, "_one_field", lambda self, p, e, st: None)
    for path, runs in zip(SCRIPTS, direct):
        assert runs == _runs(path.read_bytes()), path


# ---- a one-piece literal value is its text, against bash ------------------------------------

@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_literal_values_read_as_bash_reads_them(tmp_path):
    # `expand_scalar` takes a value of one literal piece as it stands, but for a `~` to expand
    values = ["~/x", '"~/x"', "'~/x'", "a~/x", "x:~/y", "a=~", "", "'a b'", "a\\ b", "~", "~+"]
    lines = [f"V{i}={v}" for i, v in enumerate(values)]
    lines += [f"W{i}=${{U:-{v}}}" for i, v in enumerate(values) if v]
    args = " ".join([f'k{i}="$V{i}"' for i in range(len(values))] +
                    [f'w{i}="$W{i}"' for i, v in enumerate(values) if v])
    lines.append(f"python3 -m verl.trainer.main_ppo {args}")
    script = tmp_path / "run.sh"
    script.write_text("#!/bin/bash\n" + "\n".join(lines) + "\n")
    results = bash_oracle.check_paths([str(script)])
    assert results and not [r for r in results if r.disagreements], bash_oracle.report(results)


# ---- an override's prefix ------------------------------------------------------------------

@settings(max_examples=300)
@given(st.text(alphabet="+~a=", max_size=5))
@example("")
@example("=x")
@example("+~a=1")
def test_the_prefix_taken_off_an_override_key(lead):
    o = launch._override(Field([Part(lead, None)], _span(0, len(lead))), lead, lead,
                         lambda a, b: None)
    key_text = lead.split("=", 1)[0]
    prefix = next((p for p in ("++", "+", "~") if key_text.startswith(p)), "")  # Hydra's
    assert (o.prefix, o.key) == (prefix, key_text[len(prefix):])

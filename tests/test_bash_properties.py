"""Property: for generated scripts whose every value is known (assignments with continuations
and every kind of quoting, arrays and `+=`, case/if on known values, defaults, arithmetic),
verl-lint's reading of the launch is exactly the argv bash passes to the recording shim."""

from __future__ import annotations

import shutil

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from test_undefined_variable import vl101
from verl_lint.dev import bash_oracle
from verl_lint.evaluate import evaluate_script
from verl_lint.shell import parse_script
from verl_lint.source import SourceText

pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")

NAMES = ("A", "B", "C")
UNSET = "U"  # never assigned: only read with an operator
BARE = st.text("abcxyz019_./:,=+-", min_size=1, max_size=6)  # safe unquoted
QUOTED = st.text("abcxy z019_./:,=+-{}'\t", min_size=0, max_size=8)  # safe inside "…" ('…')
CHOICES = ("x", "y", "x y")  # values the case/if tests compare against


@st.composite
def ref(draw) -> str:
    """A variable reference, braced or not, perhaps with a default operator."""
    name = draw(st.sampled_from(NAMES + (UNSET,)))
    op = draw(st.sampled_from(["", ":-", "-", ":+", "+", ":="] if name == UNSET
                              else ["", "", "", ":-", ":+"]))
    if op == "" and name == UNSET:
        op = ":-"
    if op:
        return "${" + name + op + draw(BARE) + "}"
    # `$A` stays in quotes: a letter or digit after it would make another name (`$A0`)
    return draw(st.sampled_from(['"$' + name + '"', "${" + name + "}"]))


@st.composite
def token(draw, in_assignment: bool) -> str:
    kind = draw(st.sampled_from(["bare", "single", "double", "double_ref", "ref", "arith"]))
    if kind == "bare":
        return draw(BARE)
    if kind == "single":
        return "'" + draw(QUOTED).replace("'", "") + "'"
    if kind == "double":
        return '"' + draw(QUOTED).replace("'", "") + '"'
    if kind == "double_ref":
        return '"' + draw(QUOTED).replace("'", "") + draw(ref()) + '"'
    if kind == "arith":
        return "$((N " + draw(st.sampled_from(["+", "*", "-"])) + " " + str(
            draw(st.integers(0, 9))) + "))"
    r = draw(ref())
    return r if in_assignment else '"' + r + '"'


@st.composite
def value(draw, in_assignment: bool = True) -> str:
    """One word made of tokens, joined directly or by a backslash-newline (still one word)."""
    out = ""
    for i in range(draw(st.integers(1, 3))):
        if i and draw(st.booleans()):
            out += "\\\n"
        out += draw(token(in_assignment))
    return out


@st.composite
def statement(draw, depth: int = 0) -> str:
    kind = draw(st.sampled_from(["assign", "assign", "append", "array", "array_append",
                                 "arith", "choice", "assoc"]
                                + (["case", "if"] if depth < 2 else [])))
    name = draw(st.sampled_from(NAMES))
    if kind in ("assign", "append"):
        return f"{name}{'+=' if kind == 'append' else '='}{draw(value())}"
    if kind in ("array", "array_append"):
        elems = " ".join(draw(value(False)) for _ in range(draw(st.integers(0, 3))))
        return f"ARR{'+=' if kind == 'array_append' else '='}({elems})"
    if kind == "arith":
        return f"N=$((N {draw(st.sampled_from(['+', '*']))} {draw(st.integers(1, 3))}))"
    if kind == "assoc":  # the subscript is a string: `M["k1"]`, `M[k2]+=`
        key = draw(st.sampled_from(['k1', '"k1"', "k2", "'k2'"]))
        return f"M[{key}]{draw(st.sampled_from(['=', '+=']))}{draw(value())}"
    if kind == "choice":
        return f"{name}=" + repr(draw(st.sampled_from(CHOICES))).replace("'", '"')
    body = [draw(statement(depth + 1)) for _ in range(draw(st.integers(1, 2)))]
    other = [draw(statement(depth + 1)) for _ in range(draw(st.integers(0, 2)))]
    if kind == "case":
        pat = draw(st.sampled_from(['x', '"x y"', 'y|x', '"x"*', 'z']))
        return (f'case "${name}" in\n  {pat})\n    ' + "\n    ".join(body) + "\n    ;;\n"
                + ("  *)\n    " + "\n    ".join(other) + "\n    ;;\n" if other else "")
                + "esac")
    test = draw(st.sampled_from([f'[ "${name}" = x ]', f'[ -n "${name}" ]',
                                 f'[[ ${name} == "x y" ]]', f'[ "${name}" != y ]',
                                 f'[ "${name}" = x ] && [ "$N" -gt 2 ]',
                                 f'[ -z "${name}" ] || [[ ${name} == x* ]]']))
    return (f"if {test}; then\n  " + "\n  ".join(body)
            + ("\nelse\n  " + "\n  ".join(other) if other else "") + "\nfi")


@st.composite
def launch_word(draw, k: int) -> str:
    kind = draw(st.sampled_from(["kv", "kv", "array", "split", "split_array", "joined",
                                 "arith", "assoc"]))
    if kind == "kv":
        return f"k{k}=" + draw(value(False))
    if kind == "array":
        return '"${ARR[@]}"'
    if kind == "split":
        return "$" + draw(st.sampled_from(NAMES))
    if kind == "split_array":
        return "${ARR[@]}"
    if kind == "joined":
        return f'"j{k}=${{ARR[*]}}"'
    if kind == "assoc":
        return f'"m{k}=${{M[{draw(st.sampled_from(["k1", "k2"]))}]}}"'
    return f"n{k}=$((N * {draw(st.integers(1, 4))}))"


@st.composite
def scripts(draw, strict: bool = False) -> str:
    lines = ['A="a"', "B=''", 'C="x y"', "N=1", "ARR=()", "declare -A M=([k1]=a [k2]='b c')"]
    lines += [draw(statement()) for _ in range(draw(st.integers(1, 6)))]
    if strict:  # `set -u`, and a variable Z nothing assigns used in one statement
        use = draw(st.sampled_from(["A=$Z", 'A="x${Z}"', "ARR+=($Z)", ": ${Z}",
                                    "if true; then\n  B=$Z\nfi"]))
        lines.insert(draw(st.integers(6, len(lines))), use)
        lines.insert(0, "set -u")
    words = [draw(launch_word(k)) for k in range(draw(st.integers(1, 6)))]
    lines.append("python3 -m verl.trainer.main_ppo \\\n    " + " \\\n    ".join(words))
    return "\n".join(lines) + "\n"


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scripts())
def test_reading_of_generated_launches_equals_bash(text):
    run = bash_oracle.run_bash(text.encode(), "gen.sh", {}, None)
    assert run.status == 0, run.stderr
    (argv,) = [a for _, a in run.records]
    theirs = bash_oracle.bash_launch(argv)
    (ours,) = evaluate_script(parse_script(SourceText(text.encode(), "gen.sh")))
    (launch,) = ours.launches
    # every value here is known: the reading must be exact, not merely compatible
    assert bash_oracle._items(launch) == [o.text for o in theirs.overrides]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scripts(strict=True))
def test_vl101_error_exactly_where_bash_stops(text):
    run = bash_oracle.run_bash(text.encode(), "gen.sh", {}, None)
    errors = [d for d in vl101(text) if d.severity.value == "error"]
    if run.abort is not None:
        assert run.abort[0] == "Z"
        assert [d.message.split("`")[1] for d in errors] == ["$Z"]
    else:  # the use sits in a branch bash did not take
        assert errors == [] and run.status == 0

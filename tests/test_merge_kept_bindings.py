"""`Interpreter.merge` keeps a binding every path left alone as it is (`_merges_to_itself`):
the same scenarios, launches and variable uses as merging it field by field, on the rule
fixtures and verl's own scripts."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from verl_lint.evaluate import evaluate_script, interp
from verl_lint.shell import parse_script
from verl_lint.source import SourceText

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "corpus" / "verl-head"
SCRIPTS = sorted((ROOT / "fixtures").rglob("*.sh")) + (
    sorted(CORPUS.rglob("*.sh")) if CORPUS.is_dir() else [])


def _runs(path: Path):
    return evaluate_script(parse_script(SourceText(path.read_bytes(), str(path))))


def test_kept_bindings_evaluate_alike(monkeypatch):
    assert len(SCRIPTS) > 50
    fast = [_runs(p) for p in SCRIPTS]
    monkeypatch.setattr(interp, "_merges_to_itself", lambda v: False)
    slow = [_runs(p) for p in SCRIPTS]
    for path, a, b in zip(SCRIPTS, fast, slow):
        assert a == b, path


@pytest.mark.parametrize("v, kept", [
    (interp.Var(parts=(), status="set"), True),
    (interp.Var(parts=(), status="maybe", note="only the gpu arm assigns it"), True),
    (interp.Var(parts=(), status="set", note="stale"), False),  # merging clears a set var's note
    (interp.Var(parts=(), exported=1), False),  # merging makes it a bool
])
def test_which_bindings_merge_to_themselves(v, kept):
    assert interp._merges_to_itself(v) is kept


_BRANCHY = [  # paths that unset, add, rebind or keep variables; three ways through a `case`
    b'A=1\nB=2\nC=3\nif [ "$X" = 1 ]; then unset A; B=5; D=4; fi\n'
    b'python3 -m verl.trainer.main_ppo a=$A b=$B c=$C d=$D\n',
    b'A=1\ncase "$M" in\n  x) B=2 ;;\n  y) A=3; unset B ;;\n  *) E=1 ;;\nesac\n'
    b'python3 -m verl.trainer.main_ppo a=$A b=$B e=$E\n',
    b'export A=1\n[ -n "$Y" ] && A=1\n[ -n "$Y" ] || export B=2\nL=(a=1)\n'
    b'[ -n "$Z" ] && L+=(b=2)\npython3 -m verl.trainer.main_ppo a=$A b=$B "${L[@]}"\n',
    b'A=1\nwhile read -r l; do A=2; N=$l; done\nf() { A=3; }\n[ -n "$Q" ] && f\n'
    b'python3 -m verl.trainer.main_ppo a=$A n=$N\n',
]


@pytest.mark.parametrize("text", _BRANCHY)
def test_kept_bindings_evaluate_alike_on_branchy_scripts(text, monkeypatch):
    def runs():
        return evaluate_script(parse_script(SourceText(text)))
    fast = runs()
    monkeypatch.setattr(interp, "_merges_to_itself", lambda v: False)
    assert fast == runs()


_POOL = [interp.Var(parts=()), interp.Var(parts=(), note="stale"),  # kept, not kept
         interp.Var(parts=(), exported=1), interp.Var(parts=(), status="maybe", note="n")]


@settings(max_examples=300)
@given(st.lists(st.dictionaries(st.sampled_from("ABCDEF"), st.sampled_from(range(len(_POOL)))),
                min_size=2, max_size=4))
def test_the_names_to_merge_are_those_not_kept_alike_by_every_path(paths):
    bindings = [{name: _POOL[i] for name, i in path.items()} for path in paths]
    for v in _POOL:
        v.kept = None
    names = set().union(*bindings)
    kept = {name for name in names
            if all(b.get(name) is bindings[0].get(name) for b in bindings)
            and interp._merges_to_itself(bindings[0][name])}
    assert set(interp._names_to_merge(bindings)) == names - kept

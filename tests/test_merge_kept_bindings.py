"""`Interpreter.merge` keeps a binding every path left alone as it is (`_merges_to_itself`):
the same scenarios, launches and variable uses as merging it field by field, on the rule
fixtures and verl's own scripts."""

from __future__ import annotations

from pathlib import Path

import pytest

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

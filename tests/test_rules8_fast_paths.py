"""Shortcuts of session 8 (issue 17) against the plain computation they replace."""

from __future__ import annotations

import copy
from pathlib import Path

from hypothesis import given, settings, strategies as st

from verl_lint.verl import hydra_semantics as hs

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT.parent / "shared" / "corpus" / "verl-head"

BASE = {"a": {"b": 1, "l": [1, {"x": 2}], "e": {}, "s": "text", "i": "${a.e}",
              "d": {"k": {"v": 1}}},
        "n": None, "u": "???", "z": {"y": 0}}
WORDS = ["a.b=2", "+a.c=1", "++a.c=1", "++a.b=3", "a.l.0=5", "a.l.1.x=3", "++a.l.5=1",
         "++a.s.deeper=1", "a.e={k: 1}", "+a.e.k=1", "~a.b", "+n=1", "n=1", "u=2",
         "++new.path.here=1", "a.l=[1]", "a.l.x=1", "a.d.k.v=2", "a.d={k: {v: 3}}", "z.y=1",
         "++z.w.q=1", "~z.y", "a.d.k={w: 1}"]


def _run(tree: hs.Tree, words: list[str]) -> list:
    out = []
    for word in words:
        try:
            out.append(hs.apply(tree, hs.parse(word)))
        except (hs.HydraReject, hs.Unmodeled) as exc:
            out.append(type(exc).__name__)
    return out


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(WORDS), max_size=14))
def test_copy_on_write_tree_matches_a_private_copy_and_leaves_the_base_alone(words):
    """The tree copies only what it has not copied yet (the root once, not per override): the
    shared base stays as it was, and the result is what the same words give on a tree that
    owns nothing shared (a deep copy of the base)."""
    pristine = copy.deepcopy(BASE)
    shared = hs.Tree(BASE)
    private = hs.Tree(copy.deepcopy(BASE))
    assert _run(shared, words) == _run(private, words)
    assert shared.root == private.root
    assert BASE == pristine

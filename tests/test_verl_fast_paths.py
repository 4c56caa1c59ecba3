"""The shortcuts the verl analysis and its rules take on the cold path find what the plain
computation finds (the plain one is written out here as the oracle)."""

from __future__ import annotations

from hypothesis import example, given, strategies as st

from verl_lint.verl.suggest import _NameIndex, leaf_similarity

names = st.text(alphabet="abcde_lr", min_size=1, max_size=14)


@given(names, st.lists(names, max_size=12))
@example("lr", ["learning_rate"])  # an acronym, far apart in length
@example("learning_rate", ["lr"])
@example("tensor_parallel_size", ["tensor_model_parallel_size"])  # a dropped word
@example("a_b", ["a_c_b_d_e_e_e"])
@example("a_c_b_d_e_e_e", ["a_b"])
def test_names_near_a_name_hold_every_name_that_scores_08(a, pool):
    """`near` may keep more names than score 0.8 with `a`, never fewer."""
    near = _NameIndex([], pool).near(a)
    assert {b for b in pool if leaf_similarity(a, b) >= 0.8} <= near

"""The shortcuts of `verl_lint.verl.suggest` give difflib's numbers (its suggestions are
ranked by them, so a different bound would change a "did you mean")."""

from __future__ import annotations

import difflib

from hypothesis import example, given, strategies as st

from verl_lint.verl.suggest import (
    _acronym, _quick_ratio, _subsequence, closest_keys, leaf_similarity,
)

names = st.text(alphabet="abcde_lr", min_size=1, max_size=14)


@given(names, names)
def test_quick_ratio_is_difflibs(a, b):
    assert _quick_ratio(a, b) == difflib.SequenceMatcher(None, a, b).quick_ratio()


@given(names, names)
# the acronym and dropped-word shortcuts, which random names rarely reach
@example("lr", "learning_rate")
@example("ab", "a_b")
@example("a_b", "a_c_b")
def test_leaf_similarity_is_the_difflib_score(a, b):
    """As before the shortcuts: difflib's ratio behind its two quick bounds, raised for an
    acronym or dropped words."""
    matcher = difflib.SequenceMatcher(None, a, b)
    score = matcher.ratio() if matcher.real_quick_ratio() >= 0.75 and \
        matcher.quick_ratio() >= 0.75 else 0.0
    if (len(a) >= 2 and _acronym(b) == a) or (len(b) >= 2 and _acronym(a) == b):
        score = max(score, 0.95)
    if _subsequence(a.split("_"), b.split("_")) or _subsequence(b.split("_"), a.split("_")):
        score = max(score, 0.9)
    assert leaf_similarity(a, b) == (1.0 if a == b else score)


def test_closest_in_a_tree_compares_each_leaf_name_once():
    tree = {"actor": {"optim": {"lr": 1, "lr_warmup_steps": 2}, "ppo_epochs": 1},
            "critic": {"optim": {"lr": 1}}}
    assert closest_keys("actor.optim.lr_warmup_step", tree=tree) == ["actor.optim.lr_warmup_steps"]
    assert closest_keys("actor.ppo_epoch", tree=tree) == ["actor.ppo_epochs"]


def test_a_leaf_name_under_several_paths_is_scored_once(monkeypatch):
    from verl_lint.verl import suggest

    tree = {role: {"optim": {"lr": 1, "lr_warmup_steps": 2}} for role in ("actor", "critic", "ref")}
    compared: list[tuple[str, str]] = []
    real = suggest.leaf_similarity
    monkeypatch.setattr(suggest, "leaf_similarity",
                        lambda a, b: compared.append((a, b)) or real(a, b))
    closest_keys("actor.optim.lr_warmup_step", tree=tree)
    names = [b for _, b in compared]
    assert names and len(names) == len(set(names))  # three paths end in each name

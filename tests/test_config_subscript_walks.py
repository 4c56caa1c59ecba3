"""The walks of a config tree by plain subscripts (`check_update`, `follow`, `_descend`) give the
answers of the general step-by-step walks they go before."""

from __future__ import annotations

import itertools

import pytest

from verl_lint.evaluate.model import Unknown
from verl_lint.verl import hydra_semantics as hs


class _StepOnly(dict):
    """A root whose subscripts fail: `check_update` then walks step by step from it."""

    def __getitem__(self, key):
        raise TypeError("step by step")


_TREE = {
    "a": {"b": {"c": 1, "d": [1, {"e": 2}]}, "s": "text", "n": None, "x": {}},
    "lst": [{"k": 1}, 3],
    "u": Unknown(reason="set by the script"),
    "i": "${a.b}",
}
_PATHS = ["a.b.c", "a.b.z", "a.b.d.1.e", "a.b.d.0", "a.b.d.x", "a.s.t", "a.n.t", "a.x.y",
          "a.q.r", "lst.0.k", "lst.1.k", "lst.k", "u.v.w", "i.c", "a.b.c.d", "new.deep.key"]


def _outcome(root: dict, parts: tuple[str, ...], value, force_add: bool):
    try:
        how, parent = hs.check_update(hs.Tree(root), parts, value, force_add)
    except (hs.HydraReject, hs.Unmodeled) as exc:
        return type(exc).__name__, getattr(exc, "kind", None), getattr(exc, "at", None), str(exc)
    return how, parent


@pytest.mark.parametrize("key,value,force_add",
                         list(itertools.product(_PATHS, [5, "v", [1], {"z": 1}], [False, True])))
def test_check_update_walks_like_the_step_by_step_walk(key, value, force_add):
    """The subscript walk over existing dicts finds the parent the step-by-step walk finds, and
    any other path (a list, a value, an Unknown, an interpolation, a missing key on the way)
    gets the step-by-step walk's verdict."""
    parts = tuple(key.split("."))
    assert _outcome(_TREE, parts, value, force_add) == \
        _outcome(_StepOnly(_TREE), parts, value, force_add)


_ENTRY_PATHS = [*_PATHS, "a.b", "a", "i.d", "i.d.1", "u", "u.v", "a.x", "lst.0", "nope"]


@pytest.mark.parametrize("key", _ENTRY_PATHS)
def test_descend_walks_like_the_general_walk(key):
    """`_Entries._descend`'s subscript walk finds what the general walk (through inherited
    dicts and Unknowns, `_descend_from` the root) finds, absent keys included."""
    from verl_lint.verl.effective_build import _Entries

    entries = _Entries(_TREE, {})
    parts = tuple(key.split("."))
    assert entries._descend(parts) == entries._descend_from(entries.root, parts, 0)


@pytest.mark.parametrize("key", _ENTRY_PATHS)
def test_follow_walks_like_the_step_by_step_walk(key):
    """`follow`'s subscript walk gives what the step-by-step walk (through interpolations,
    lists and Unknowns) gives."""
    parts = tuple(key.split("."))

    def followed(root):
        try:
            return hs.follow(root, parts)
        except (hs.Unresolvable, hs.HydraReject) as exc:
            return type(exc).__name__, str(exc)

    assert followed(_TREE) == followed(_StepOnly(_TREE))

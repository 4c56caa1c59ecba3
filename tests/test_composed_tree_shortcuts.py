"""What is answered from the composed config tree and its disk-cached derivations (VL412's keys
ending in a name, the did-you-mean index) is what the plain computation finds (written out
here as the oracle)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from hypothesis import example, given, settings, strategies as st

from verl_lint.verl import hydra_semantics as hs
from verl_lint.verl.effective_build import build_effective

# a composed tree with what makes a launch's keys differ from it: interpolations entering dicts
# (`alias`, `deep`: through one), an interpolation prefix (`a.b`), one into a list element
# (`into`), an empty dict, an inherited scalar (`inh`), a list of dicts
BASE = {
    "d": {"x": {"q": 1}, "m": {"p": 1}},
    "a": {"b": "${d}", "s": 5, "e": {}, "inh": "${oc.select:a.s,1}", "l": [{"k": 1}],
          "model": {"p": 1}},
    "f": {"e": "${a.b.x}", "foo": "${a.model}", "into": "${a.l.0}"},
    "alias": "${a}",
    "n": None,
}
WORDS = [
    "a.model=5",  # a dict replaced: `f.foo` becomes a key of its own
    "++a.b.c=1",  # an interpolation replaced by a dict: `f.e` becomes a key of its own
    "a.s=2", "a.inh=3", "+a.new=1", "+a.enabled=1", "++a.n2.enabled=1", "+a.e.enabled=1",
    "+a.new2={enabled: 1}", "+a.z=${d}", "a.l=[1]", "a.l=[{enabled: 1}]", "++a.s.enabled=1",
    "+d.x.enabled=1", "~a.s", "~d.m", "~a.model", "n=1", "++n.q=1", "+a.x={q: {enabled: 2}}",
]
TAILS = [".enabled", ".e", ".foo", ".q", ".z.x.q", ".into", ".k", ".p", ".n2.enabled",
         ".b.x.enabled", ".alias.enabled", ".into.enabled"]


def _launch_config(words: list[str]):
    """The config as the analysis builds it: the paths set, each with the override (its
    value's text), and whether the overrides only set values."""
    tree = hs.Tree(BASE)
    origins = {}
    for seq, word in enumerate(words):
        p = hs.parse(word)
        parts = tuple(p.key.split("."))
        try:
            hs.apply(tree, p, parts)
        except (hs.HydraReject, hs.Unmodeled):
            continue
        if p.prefix != "~":
            origins[parts] = (seq, SimpleNamespace(value=word.partition("=")[2]))
    only_sets = not any(w.startswith("~") for w in words)
    return build_effective("0.9.1", "t", tree.root, origins, BASE, only_sets=only_sets), tree


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(WORDS), max_size=6), st.sampled_from(TAILS))
@example(["a.model=5"], ".foo")
@example(["~a.model"], ".foo")  # a deletion: `f.foo` a key of its own too
@example(["++a.b.c=1"], ".e")
@example(["+a.z=${d}"], ".z.x.q")
@example(["a.l=[{enabled: 1}]"], ".into.enabled")
@example(["+a.enabled=1"], ".alias.enabled")
@example(["+a.x={q: {enabled: 2}}"], ".q")
def test_keys_ending_from_the_composed_tree_are_the_full_listings(words, tail):
    """A tail the composed tree has no key for is answered without the launch's listing when
    no override can have added one; the answer is what the full listing holds."""
    config, tree = _launch_config(words)
    listed = build_effective("0.9.1", "t", tree.root, {}).keys()
    assert sorted(config.keys_ending(tail)) == sorted(k for k in listed if k.endswith(tail))


def test_the_shortcut_answers_most_tails_from_the_composed_tree():
    """Plain values over plain ones, none named like the tail: no listing of the launch."""
    config, _ = _launch_config(["a.s=2", "a.inh=3", "+a.new=1", "n=1"])
    assert config.keys_ending(".enabled") == []
    assert config._entries._flat is None and config._entries._changes is None


odd_names = st.text(alphabet="ab_1Zé.~", min_size=1, max_size=10)


@given(odd_names, st.lists(odd_names, max_size=10))
@example("aé", ["a~"])  # two characters outside the alphabet share a bit
def test_near_holds_every_name_that_scores_08_whatever_its_characters(a, pool):
    """Characters outside `_BITS` share one bit: `near` may keep more names, never fewer."""
    from verl_lint.verl.suggest import _NameIndex, leaf_similarity

    assert {b for b in pool if leaf_similarity(a, b) >= 0.8} <= _NameIndex([], pool).near(a)


def test_what_is_derived_from_a_composed_tree_is_read_back_from_the_disk_cache(
        tmp_path, monkeypatch):
    """`configs.derived` works a composed tree's data out once, then reads it back (another
    process's answer, for the same tree and code); a tree `composed` did not give is worked
    out every time, never stored."""
    from verl_lint.verl import analysis, cache, configs

    monkeypatch.setenv("VERL_LINT_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("VERL_LINT_NO_CACHE", raising=False)
    cache.cache_root.cache_clear()
    tree = {"a": {"b": "???", "c": 1}, "d": "???"}
    monkeypatch.setitem(configs._keys, id(tree), (tree, "a composed tree's key"))
    calls = []

    def missing(t):
        calls.append(t)
        return analysis._missing(t)

    code = analysis.__file__
    try:
        assert configs.derived(tree, "missing", missing, code) == ["a.b", "d"]
        assert list(tmp_path.rglob("missing/*.pickle")) and len(calls) == 1
        monkeypatch.setattr(configs, "_files_id", configs._files_id.__wrapped__)  # a new process
        assert configs.derived(tree, "missing", missing, code) == ["a.b", "d"]
        assert len(calls) == 1
        copy = dict(tree)
        assert configs.derived(copy, "missing", missing, code) == ["a.b", "d"]
        assert configs.derived(copy, "missing", missing, code) == ["a.b", "d"]
        assert len(calls) == 3 and len(list(tmp_path.rglob("missing/*.pickle"))) == 1
    finally:
        cache.cache_root.cache_clear()


def test_a_did_you_mean_index_read_back_is_the_one_built():
    """The index is kept on disk: pickled and read back, it holds the same paths, names and
    letter masks (the same in every process)."""
    import pickle

    from verl_lint.verl.suggest import _index

    by_leaf, index = _index(BASE)
    by_leaf2, index2 = pickle.loads(pickle.dumps((by_leaf, index)))
    assert by_leaf2 == by_leaf and vars(index2) == vars(index)
    assert index2.near("modle") == index.near("modle") and "model" in index.near("modle")

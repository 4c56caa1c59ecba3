"""`EffectiveConfig.keys_ending` (VL412's `resolve`): the keys of a launch's config that end in a
tail, found from the composed tree's listing when the overrides only set values and add plain
keys, and from the launch's own listing otherwise — always the keys a full listing has."""

from __future__ import annotations

from pathlib import Path

import pytest

from verl_lint.verl import hydra_semantics as hs
from verl_lint.verl.effective_build import build_effective

BASE = {
    "actor_rollout_ref": {
        "actor": {"use_remove_padding": False, "override": {},
                  "optim": {"lr": 1e-6, "model": "${critic.model}"}},  # entered twice over
        "ref": {"use_remove_padding": "${oc.select:actor_rollout_ref.actor.use_remove_padding}",
                "optim": "${actor_rollout_ref.actor.optim}"},  # enters the actor's optim
        "rollout": {"multi_turn": {"enable": False}, "ranks": [0, 1]},
    },
    "critic": {"model": {"use_remove_padding": True},
               "later": "${oc.select:critic.extra2,null}"},  # enters critic.extra2 once added
}


def config_after(words: list[str]):
    tree = hs.Tree(BASE)
    for word in words:
        hs.apply(tree, hs.parse(word))
    return build_effective("0.9.1", "ppo_trainer", tree.root, {}, BASE)


def full_listing(config, tail: str) -> set[str]:
    return {k for k in config.keys() if k.endswith(tail)}


CASES = [
    [],
    ["actor_rollout_ref.actor.use_remove_padding=True"],
    ["actor_rollout_ref.ref.use_remove_padding=True"],  # an interpolation replaced
    ["+actor_rollout_ref.actor.override.use_remove_padding=True"],  # an empty dict filled
    ["+actor_rollout_ref.actor.optim.use_remove_padding=True"],  # listed twice (ref enters it)
    ["+critic.use_remove_padding=1"],
    ["+critic.extra={use_remove_padding: 1}"],  # a dict added
    ["+critic.extra2={use_remove_padding: 1}"],  # a dict added that `later` enters
    ["+critic.extra={a: {}, b: {use_remove_padding: [1]}}"],
    ["actor_rollout_ref.rollout.ranks=[0]"],
    ["~actor_rollout_ref.rollout.multi_turn"],
    ["+actor_rollout_ref.rollout.multi_turn.enable2=True", "+x.actor.use_remove_padding=1"],
    ["+critic.model.use_remove_padding2=1"],  # listed under both optims too
]


@pytest.mark.parametrize("words", CASES)
@pytest.mark.parametrize("tail", ["", ".use_remove_padding", ".actor.use_remove_padding",
                                  ".multi_turn.enable", ".optim.use_remove_padding",
                                  ".actor.override"])
def test_keys_ending_is_the_full_listings(words, tail):
    fast = config_after(words).keys_ending(tail)
    assert len(fast) == len(set(fast))
    assert set(fast) == full_listing(config_after(words), tail)


def test_a_key_added_where_an_interpolation_enters_is_found_twice():
    config = config_after(["+actor_rollout_ref.actor.optim.use_remove_padding=True"])
    assert sorted(config.keys_ending(".optim.use_remove_padding")) == [
        "actor_rollout_ref.actor.optim.use_remove_padding",
        "actor_rollout_ref.ref.optim.use_remove_padding"]


CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus" / "verl-head"


@pytest.mark.skipif(not CORPUS.is_dir(), reason="../shared/corpus is absent")
def test_keys_ending_on_verls_scripts():
    """Every launch of verl's own scripts: the same keys as the full listing."""
    from verl_lint.engine import lint_file
    from verl_lint.settings import SettingsResolver
    from verl_lint.verl import effective_build

    configs = []
    real = effective_build.build_effective

    def keep(*args, **kwargs):
        configs.append(real(*args, **kwargs))
        return configs[-1]

    resolver = SettingsResolver({"verl_version": "0.9.1"})
    mp = pytest.MonkeyPatch()
    mp.setattr("verl_lint.verl.analysis.build_effective", keep)
    try:
        for path in sorted(CORPUS.rglob("*.sh"))[::3]:
            lint_file(path, resolver(path))
    finally:
        mp.undo()
    assert len(configs) > 30
    for config in configs:
        for tail in ("", ".actor.use_remove_padding", ".rollout.disaggregation.enabled",
                     ".multi_turn.enable", ".use_remove_padding"):  # "": every key
            fast = config.keys_ending(tail)
            listed = build_effective(config.version, config.config_name,
                                     config._entries.root, {}).keys()
            assert sorted(fast) == sorted(k for k in listed if k.endswith(tail))
    # and most of them took their keys from the composed tree's one listing (178 of 186 on
    # 0.9.1), which is what the shared listing is for
    shared = sum(c._entries._changes is not None for c in configs)
    assert shared > 0.9 * len(configs), (shared, len(configs))


def test_a_composed_trees_listing_is_kept_in_the_disk_cache(tmp_path, monkeypatch):
    """Worked out once (the ~15 composed trees of verl's scripts cost ~30 ms to list), then
    read back: the same keys, entering interpolations and words."""
    from verl_lint.verl import cache, configs, effective_build
    from verl_lint.verl.release import load_release

    monkeypatch.setenv("VERL_LINT_CACHE_DIR", str(tmp_path))
    cache.cache_root.cache_clear()
    try:
        release = load_release("0.9.1")
        tree = configs.composed(release, release.entry_point("verl.trainer.main_ppo"),
                                "ppo_trainer")
        first = effective_build._Shared(tree)
        assert list((tmp_path).rglob("listing/*.pickle"))
        listed = effective_build._Shared._list
        monkeypatch.setattr(effective_build._Shared, "_list", staticmethod(
            lambda base: pytest.fail("listed again")))
        again = effective_build._Shared(tree)
        assert (again.keys, again.aliases, again.words) == (first.keys, first.aliases, first.words)
        assert first.keys == listed(tree)[0]
        # a tree `composed` did not give (an overridden copy) has no cache key: listed itself
        assert configs.disk_key(dict(tree)) is None
    finally:
        cache.cache_root.cache_clear()

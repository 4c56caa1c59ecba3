"""Differential tests: verl-lint's Hydra fast path against real Hydra on the bundled configs.

The oracle is hydra-core itself: `hydra.compose` for whole launches (group overrides, config
names, value overrides) and, for the large generated sets, Hydra's own
`ConfigLoaderImpl._apply_overrides_to_config` — the function `compose` runs on the composed
config — so thousands of overrides stay affordable. Verdicts (accept/reject) must be equal, and
for accepted overrides the resulting config subtree must be equal too.
`-m slow` runs the large profile over every bundled release.
"""

from __future__ import annotations

import os
import random

import pytest
import verl_oracle as oracle

from verl_lint.evaluate.model import Launch, Override
from verl_lint.source import SourceText
from verl_lint.verl import data
from verl_lint.verl import hydra_semantics as hs
from verl_lint.verl.analysis import analyze_launch
from verl_lint.verl.release import load_release
from verl_lint.verl.versions import SUPPORTED_VERSIONS

BASE = "verl/trainer/config|ppo_trainer|"


def mine(base: dict, text: str) -> tuple[str | None, hs.Tree]:
    """verl-lint's verdict on one override: None (accepted) or the rejection kind."""
    tree = hs.Tree(base)
    parsed = hs.parse(text)
    if parsed.error or parsed.sweep:
        return "syntax", tree
    try:
        hs.apply(tree, parsed)
    except hs.HydraReject as rej:
        return rej.kind, tree
    return None, tree


def compare(version: str, texts: list[str], groups: tuple[str, ...] = ()) -> list[str]:
    key = BASE + " ".join(groups)
    base = data.composed_configs(version)[key]
    cfg = oracle.hydra_cfg(version, "ppo_trainer", groups)
    mismatches = []
    for text in texts:
        err, result = oracle.hydra_apply(cfg, text)
        try:
            verdict, tree = mine(base, text)
        except hs.Unmodeled:
            continue  # the fast path hands these to the exact path: nothing to compare
        if (err is None) != (verdict is None):
            mismatches.append(f"{text}: hydra {'accepts' if err is None else 'rejects'}, "
                              f"verl-lint {'accepts' if verdict is None else 'rejects'} ({verdict})")
        elif err is None and any(tree.root.get(k) != v for k, v in result.items()):
            mismatches.append(f"{text}: same verdict, different resulting config")
    return mismatches


@pytest.mark.parametrize("version", ["0.4.1", "0.6.0", "0.7.1", "0.9.1"])
def test_generated_overrides_match_hydra(version):
    base = data.composed_configs(version)[BASE]
    texts = oracle.generated_overrides(version, base, 25)
    assert len(texts) > 250
    assert compare(version, texts) == []


def test_generated_overrides_match_hydra_megatron_engine():
    groups = ("model_engine=megatron",)
    base = data.composed_configs("0.9.1")[BASE + groups[0]]
    texts = oracle.generated_overrides("0.9.1-megatron", base, 20)
    inherited = [
        "+actor_rollout_ref.ref.megatron.override_transformer_config.recompute_granularity=full",
        "+actor_rollout_ref.ref.megatron.override_transformer_config.attention_backend=fused",
        "++actor_rollout_ref.ref.megatron.override_transformer_config.attention_backend=fused",
        "actor_rollout_ref.ref.megatron.override_transformer_config.attention_backend=fused",
        "+actor_rollout_ref.ref.megatron.override_transformer_config.new_key=1",
        "actor_rollout_ref.ref.megatron.use_remove_padding=False",
        "+actor_rollout_ref.ref.megatron.use_remove_padding=False",
        "~actor_rollout_ref.ref.megatron.use_remove_padding",
        "actor_rollout_ref.actor.megatron.override_transformer_config.recompute_method=uniform",
        "+actor_rollout_ref.actor.megatron.override_transformer_config.moe_router_dtype=fp32",
        "actor_rollout_ref.actor.megatron.override_transformer_config={recompute_method: block}",
        "actor_rollout_ref.actor.megatron.override_transformer_config={new: 1}",
        "+actor_rollout_ref.actor.megatron.override_transformer_config={new: 1}",
        "+actor_rollout_ref.rollout.engine_kwargs.vllm.mm_processor_cache_gb=0",
        "actor_rollout_ref.rollout.engine_kwargs.sglang.attention_backend=fa3",
        "trainer.logger=[console,wandb]", "+trainer.logger=[console]", "trainer.logger=console",
    ]
    assert compare("0.9.1", texts + inherited, groups) == []


@pytest.mark.slow
@pytest.mark.skipif(not os.environ.get("VERL_LINT_LARGE_DIFF"),
                    reason="large profile: set VERL_LINT_LARGE_DIFF=1 (about 10 minutes)")
@pytest.mark.parametrize("version", SUPPORTED_VERSIONS)
def test_generated_overrides_match_hydra_large(version):
    base = data.composed_configs(version)[BASE]
    assert compare(version, oracle.generated_overrides(version, base, 200, seed=1)) == []


def test_override_sequences_match_hydra():
    """Overrides applied one after another (each sees the previous ones' effects)."""
    import copy

    from hydra._internal.config_loader_impl import ConfigLoaderImpl
    from omegaconf import OmegaConf

    version = "0.9.1"
    base = data.composed_configs(version)[BASE]
    cfg = oracle.hydra_cfg(version)
    # overrides accepted one at a time: most sequences then run to the end and compare whole
    # configs (drawn from every generated override, 13 of 15 stopped at their first refusal)
    pool = [text for text in oracle.generated_overrides(version, base, 30, seed=7)
            if mine(base, text)[0] is None]
    rng = random.Random(3)
    compared = 0
    for _ in range(15):
        work = copy.deepcopy(cfg)
        tree = hs.Tree(base)
        for text in rng.sample(pool, 6):
            try:
                parsed_h = oracle._parser().parse_overrides([text])
                if parsed_h[0].is_sweep_override():
                    raise ValueError("sweep")
                ConfigLoaderImpl._apply_overrides_to_config(parsed_h, work)
                hydra_ok = True
            except Exception:  # noqa: BLE001 - any refusal
                hydra_ok = False
            parsed = hs.parse(text)
            try:
                if parsed.error or parsed.sweep:
                    raise hs.HydraReject("syntax", "")
                hs.apply(tree, parsed)
                mine_ok = True
            except hs.HydraReject:
                mine_ok = False
            except hs.Unmodeled:
                break
            assert hydra_ok == mine_ok, text
            if not hydra_ok:
                break  # Hydra may have half-applied it; the sequence ends here
        else:
            assert OmegaConf.to_container(work, resolve=False) == tree.root
            compared += 1
    assert compared >= 10


VALUES = ["1", "-3", "+7", "1_000", "01", "0", "1e-6", "1E5", ".5", "5.", "inf", "-inf", "NaN",
          "nan", "true", "False", "TRUE", "null", "NULL", "None", "abc", "a-b", "a/b/c.parquet",
          "x:y", "a%b", "a*b", "a?b", "a|b", "a@b", "a+b", "1.5.6", "0x10", "1_", "_1", "1__0",
          "1e5_0", "", "fp32", "bf16", "Qwen/Qwen2.5-7B-Instruct", "hdfs://a/b", "-", "--x"]


@pytest.mark.parametrize("value", VALUES)
def test_fast_value_parser_matches_hydra(value):
    text = f"trainer.x={value}"
    fast = hs.parse(text)
    ov = oracle._parser().parse_overrides([text])[0]
    expected = ov.value()
    assert type(fast.value) is type(expected) and (fast.value == expected or
                                                   (expected != expected and fast.value != fast.value))


def _launch(version_words: list[str], config_name: str | None = None) -> Launch:
    text = "python3 -m verl.trainer.main_ppo " + " ".join(version_words)
    src = SourceText(text.encode())
    pos = len("python3 -m verl.trainer.main_ppo ")
    ovs = []
    for w in version_words:
        prefix = "++" if w.startswith("++") else w[:1] if w[:1] in "+~" else ""
        key, eq, value = w[len(prefix):].partition("=")
        ks = pos + len(prefix)
        ovs.append(Override(prefix=prefix, key=key, value=value if eq else None, text=w,
                            span=src.span(pos, pos + len(w)), key_span=src.span(ks, ks + len(key))))
        pos += len(w) + 1
    return Launch(module="verl.trainer.main_ppo", overrides=ovs, config_name=config_name,
                  span=src.span(0, len(text)))


LAUNCHES = [
    ["model_engine=megatron", "actor_rollout_ref.actor.megatron.tensor_model_parallel_size=2"],
    ["model_engine=fsdp"],
    ["model_engine=dp", "actor_rollout_ref.actor.strategy=fsdp2"],
    ["actor@actor_rollout_ref.actor=megatron_actor"],
    ["foo@bar=baz"],
    ["model_engine=megatron", "+actor_rollout_ref.ref.megatron.override_transformer_config"
                              ".attention_backend=fused"],
    ["actor_rollout_ref.actor.learning_rate=1"],
    ["+actor_rollout_ref.rollout.engine_kwargs.vllm.x=1", "trainer.nnodes=2"],
    ["trainer.logger=console,wandb"],
    ["trainer.logger=[console"],
    ["~trainer.nnodes", "trainer.nnodes=2"],
    ["~trainer.does_not_exist"],
    ["+trainer.nnodes=3"],
    ["trainer.logger.wandb=1"],
    ["++trainer.logger.5.x=1"],
    ["++trainer.logger.0.x=1"],
    ["~trainer.logger.0"],
]


@pytest.mark.parametrize("version", ["0.7.1", "0.9.1"])
@pytest.mark.parametrize("words", LAUNCHES, ids=lambda w: " ".join(w)[:50])
def test_launch_verdict_matches_hydra_compose(version, words):
    """Whole launches through analyze_launch vs hydra.compose with the same overrides."""
    rel = load_release(version)
    analysis = analyze_launch(rel, _launch(words))
    hydra_rejects = [p for p in analysis.problems if p.rejected_by == "hydra"]
    error = oracle.hydra_compose_verdict(version, words)
    assert (error is None) == (not hydra_rejects), (error, [p.message for p in hydra_rejects])

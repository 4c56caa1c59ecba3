"""Builders for the VL3xx rule tests: effective configs with origins and a launch context."""

from __future__ import annotations

from typing import Any

from verl_lint.diagnostics import Diagnostic
from verl_lint.evaluate.model import Launch, Scenario, ScenarioRun
from verl_lint.rules.base import LaunchContext, Rule
from verl_lint.source import SourceText, Span
from verl_lint.verl.analysis import LaunchAnalysis
from verl_lint.verl.effective import EffectiveConfig, Origin, Resolved

A = "actor_rollout_ref.actor"
R = "actor_rollout_ref.rollout"
REF = "actor_rollout_ref.ref"

LAUNCH_SPAN = Span(start=0, end=30, line=1, column=1, end_line=40, end_column=2)

# The keys the VL3xx rules read, with verl 0.9.1's defaults (ppo_trainer, FSDP), except that
# the micro batches are set so that a default config is clean.
FSDP: dict[str, Any] = {
    "trainer.nnodes": 1, "trainer.n_gpus_per_node": 8, "trainer.balance_batch": True,
    "actor_rollout_ref.hybrid_engine": True, "actor_rollout_ref.model.use_remove_padding": True,
    "algorithm.adv_estimator": "grpo", "algorithm.use_kl_in_reward": False,
    "data.train_batch_size": 1024, "data.max_prompt_length": 512, "data.max_response_length": 512,
    f"{A}.strategy": "fsdp", f"{A}.use_kl_loss": False, f"{A}.use_dynamic_bsz": False,
    f"{A}.ppo_mini_batch_size": 256, f"{A}.ppo_micro_batch_size": None,
    f"{A}.ppo_micro_batch_size_per_gpu": 4, f"{A}.ppo_max_token_len_per_gpu": 16384,
    f"{A}.ulysses_sequence_parallel_size": 1, f"{A}.fsdp_config.ulysses_sequence_parallel_size": 1,
    f"{R}.name": "vllm", f"{R}.mode": "async", f"{R}.n": 1, f"{R}.nnodes": 0,
    f"{R}.n_gpus_per_node": 8, f"{R}.tensor_model_parallel_size": 2,
    f"{R}.data_parallel_size": 1, f"{R}.expert_parallel_size": 1,
    f"{R}.pipeline_model_parallel_size": 1, f"{R}.log_prob_micro_batch_size": None,
    f"{R}.log_prob_micro_batch_size_per_gpu": 4, f"{R}.log_prob_use_dynamic_bsz": False,
    f"{R}.log_prob_max_token_len_per_gpu": 16384,
    f"{REF}.strategy": "fsdp", f"{REF}.log_prob_micro_batch_size": None,
    f"{REF}.log_prob_micro_batch_size_per_gpu": 4, f"{REF}.log_prob_use_dynamic_bsz": False,
    f"{REF}.log_prob_max_token_len_per_gpu": 16384, f"{REF}.ulysses_sequence_parallel_size": 1,
    f"{REF}.fsdp_config.ulysses_sequence_parallel_size": 1,
    "critic.strategy": "fsdp", "critic.enable": None, "critic.ppo_mini_batch_size": 256,
    "critic.ppo_micro_batch_size": None, "critic.ppo_micro_batch_size_per_gpu": 4,
    "critic.use_dynamic_bsz": False, "critic.ppo_max_token_len_per_gpu": 32768,
    "critic.forward_max_token_len_per_gpu": 32768, "critic.ulysses_sequence_parallel_size": 1,
    "critic.fsdp.ulysses_sequence_parallel_size": 1, "critic.model.use_remove_padding": True,
}


def _megatron(section: str) -> dict[str, Any]:
    m = f"{section}.megatron"
    return {f"{section}.strategy": "megatron", f"{m}.tensor_model_parallel_size": 1,
            f"{m}.pipeline_model_parallel_size": 1, f"{m}.context_parallel_size": 1,
            f"{m}.expert_model_parallel_size": 1, f"{m}.expert_tensor_parallel_size": None}


MEGATRON: dict[str, Any] = {
    k: v for k, v in FSDP.items() if "ulysses" not in k
} | _megatron(A) | _megatron(REF) | _megatron("critic")


def span_at(line: int, column: int = 5, length: int = 20) -> Span:
    start = line * 200 + column
    return Span(start=start, end=start + length, line=line, column=column,
                end_line=line, end_column=column + length)


def config(base: dict[str, Any], script: dict[str, tuple[Any, int]] | None = None, *,
           version: str = "0.9.1", config_name: str = "ppo_trainer",
           drop: tuple[str, ...] = (), inherited: dict[str, tuple[str, int | None]] | None = None,
           **values: Any) -> EffectiveConfig:
    """`script` maps key → (value, line it is set at); `inherited` maps key → (source key,
    line the source was set at or None); keyword arguments override defaults (dots as __)."""
    default = Origin(kind="default")
    entries = {k: Resolved(key=k, value=v, origin=default) for k, v in base.items()
               if k not in drop}
    for k, v in values.items():
        key = k.replace("__", ".")
        entries[key] = Resolved(key=key, value=v, origin=default)
    for k, (v, line) in (script or {}).items():
        entries[k] = Resolved(key=k, value=v, origin=Origin(kind="script", span=span_at(line)))
    for k, (src, line) in (inherited or {}).items():
        source = entries[src]
        entries[k] = Resolved(
            key=k, value=source.value, origin=Origin(kind="inherited", from_key=src),
            inherited_origin=Origin(kind="script", span=span_at(line)) if line else default)
    return EffectiveConfig(version, config_name, entries)


def lint(rule: type[Rule], cfg: EffectiveConfig | None, *, visible: Any = None,
         device: str | None = None) -> list[Diagnostic]:
    """Run one rule on one launch (no parsed script: no variable assignments are known)."""
    launch = Launch(module="verl.trainer.main_ppo", span=LAUNCH_SPAN)
    scenario = Scenario(label=f"DEVICE={device}" if device else "", device=device)
    run = ScenarioRun(scenario=scenario, launches=[launch], visible_devices=visible)
    ctx = LaunchContext(path="test.sh", source=SourceText(b""), model=None, settings=None,
                        run=run, launch=launch, release=None,
                        analysis=LaunchAnalysis(config=cfg, entry=launch.module))
    return list(rule().check(ctx))

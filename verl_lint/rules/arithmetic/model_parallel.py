"""VL301 model-parallel-does-not-divide."""

from __future__ import annotations

from typing import Iterable

from verl_lint.diagnostics import Diagnostic, Severity
from verl_lint.rules.arithmetic._operands import (
    builds_workers, config_of,
    ACTOR, REF, Operand, Skip, World, arithmetic, collect, critic_in_use, culprits, get_int,
    get_str, place, product, ref_in_use, world,
)
from verl_lint.rules.base import LaunchContext, Rule
from verl_lint.rules.registry import register

# Mirrors (constraints.json):
# - megatron_mp_divides_world (>=0.4.0; verl/utils/config.py:89-100, wheel 0.9.1 :112; in
#   ray_trainer._validate_config up to 0.5.0): world % (TP×PP×CP) for the actor. verl checks it
#   only without dynamic batch size, but Megatron-Core's initialize_model_parallel enforces the
#   same divisibility for every Megatron worker (actor, ref, critic) at start, so no condition.
# - megatron_tp_heads (all releases; Megatron-Core, external): world % (TP×PP×CP) and the
#   expert grid world % (EP×ETP×PP); ETP null means "same as TP".
ROLES = (("actor", ACTOR), ("ref", REF), ("critic", "critic"))


@register
class ModelParallelDoesNotDivide(Rule):
    """Megatron's parallel grid does not tile the devices.

    ## What it does
    For every Megatron role in use (actor, reference policy, critic) checks that the world size
    `trainer.nnodes × trainer.n_gpus_per_node` is divisible by `TP×PP×CP`
    (`megatron.tensor_model_parallel_size × pipeline_model_parallel_size ×
    context_parallel_size`) and by the expert grid `EP×ETP×PP` (`expert_model_parallel_size ×
    expert_tensor_parallel_size × pipeline_model_parallel_size`; a null ETP means TP).

    ## Why is this bad?
    Megatron-Core lays the devices out as a grid of data × pipeline × context × tensor ranks.
    When the product does not divide the device count, `initialize_model_parallel` raises at
    worker start — after the cluster has been allocated and Ray has started every worker.

    Where it applies: Megatron actor, ref and critic, every release from 0.4.0, on the entry
    points that build those workers (`main_ppo`, `main_ppo_sync`, `main_ppo_v0`,
    `one_step_off_policy.main_ppo`, `fully_async_main`); not `main_generation_server`, which
    builds no Megatron model.

    ## Example
    ```bash
    python3 -m verl.trainer.main_ppo \
        algorithm.adv_estimator=grpo \
        model_engine=megatron \
        actor_rollout_ref.rollout.name=vllm \
        actor_rollout_ref.actor.megatron.tensor_model_parallel_size=4 \
        actor_rollout_ref.actor.megatron.pipeline_model_parallel_size=3 \
        trainer.nnodes=2 \
        trainer.n_gpus_per_node=8
    ```

    ## Use instead
    ```bash
    python3 -m verl.trainer.main_ppo \
        algorithm.adv_estimator=grpo \
        model_engine=megatron \
        actor_rollout_ref.rollout.name=vllm \
        actor_rollout_ref.actor.megatron.tensor_model_parallel_size=4 \
        actor_rollout_ref.actor.megatron.pipeline_model_parallel_size=2 \
        trainer.nnodes=2 \
        trainer.n_gpus_per_node=8
    ```

    ## References
    - verl `verl/utils/config.py` `validate_config` ("n_gpus must be divisible by
      model_parallel_size times context_parallel_size"), verl ≥ 0.4.0
    - Megatron-Core `parallel_state.initialize_model_parallel`
    """

    code = "VL301"
    name = "model-parallel-does-not-divide"
    severity = Severity.ERROR
    summary = "Megatron TP×PP×CP or EP×ETP×PP does not divide the world size"
    scope = "launch"

    def check(self, ctx: LaunchContext) -> Iterable[Diagnostic]:
        config = config_of(ctx)
        if config is None or not builds_workers(ctx):
            return
        seen: set[tuple[str, tuple[int, ...]]] = set()
        for role, section in ROLES:
            # One finding per role: with EP=1 the expert grid repeats the model grid's TP×PP.
            found = list(collect(lambda grid=grid: self._check(ctx, role, section, grid, seen)
                                 for grid in ("model", "expert")))
            yield from found[:1]

    def _check(self, ctx: LaunchContext, role: str, section: str, grid: str,
               seen: set) -> Diagnostic | None:
        config = config_of(ctx)
        # whether the role runs first: the other VL3xx rules ask it too (once a config), while
        # its strategy is a key of its own to work out
        if role == "ref" and not ref_in_use(config):
            return None
        if role == "critic" and not critic_in_use(config):
            return None
        if get_str(config, f"{section}.strategy").value != "megatron":
            return None
        w = world(config)
        meg = f"{section}.megatron"
        tp = get_int(config, f"{meg}.tensor_model_parallel_size")
        pp = get_int(config, f"{meg}.pipeline_model_parallel_size")
        note = ""
        if grid == "model":
            names = "TP×PP×CP"
            factors = [tp, pp, get_int(config, f"{meg}.context_parallel_size")]
        else:
            names = "EP×ETP×PP"
            etp = get_int(config, f"{meg}.expert_tensor_parallel_size", nullable=True)
            if etp.value is None:
                etp = etp.with_value(tp.value)
                note = "; a null expert_tensor_parallel_size means ETP = TP"
            factors = [get_int(config, f"{meg}.expert_model_parallel_size"), etp, pp]
        if any(op.value <= 0 for op in factors):
            raise Skip(names)
        total = product(factors)
        if w.size % total == 0:
            return None
        # The ref inherits the actor's sizes: report one grid once.
        signature = (grid, (w.size, *(op.value for op in factors)))
        if signature in seen:
            return None
        seen.add(signature)
        return self._report(ctx, role, names, factors, w, note)

    def _report(self, ctx: LaunchContext, role: str, names: str, factors: list[Operand],
                w: World, note: str) -> Diagnostic:
        message = f"{w.text()} is not divisible by {role} {names} = {arithmetic(factors)}{note}"
        span, labels = place(ctx.launch.span, culprits(factors, w.size), w.operands)
        return self.diagnostic(
            span, message, labels=labels,
            help=f"choose {role} parallel sizes whose product {names} divides {w.size}, "
                 "or change the number of nodes or devices per node")

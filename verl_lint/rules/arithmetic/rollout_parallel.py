"""VL302 rollout-parallel-mismatch."""

from __future__ import annotations

from typing import Iterable

from verl_lint.diagnostics import Diagnostic, Severity
from verl_lint.rules.arithmetic._operands import (
    config_of,
    ROLLOUT, Operand, Skip, arithmetic, collect, culprits, get_bool, get_int, get_str,
    literal_fix, place, product, where, world,
)
from verl_lint.rules.base import LaunchContext, Rule
from verl_lint.rules.registry import register
from verl_lint.verl.versions import in_range

# Mirrors (constraints.json), each with the releases it applies to:
# - rollout_world_divides (>=0.4.0; verl/workers/engine_workers.py:654-660, legacy fsdp/megatron
#   workers had the same assert): hybrid engine world % (rollout TP×DP×PP). DP and PP exist
#   from 0.6.0 (1 before).
WORLD_DIVIDES = ">=0.4.0"
# - rollout_ep_eq_tp_dp (>=0.6.0; verl/workers/config/rollout.py:292-295): name != trtllm and
#   EP > 1 => EP == TP×DP.
EP_EQ_TP_DP = ">=0.6.0"
# - rollout_pp_unsupported (>=0.7.0; verl/workers/config/rollout.py:317-321): PP > 1 raises
#   NotImplementedError for vllm, sglang and trtllm.
PP_UNSUPPORTED = ">=0.7.0"
PP_ENGINES = frozenset({"vllm", "sglang", "trtllm"})
# - rollout_replica_nodes (>=0.6.0; verl/workers/rollout/replica.py:107-117): replica size
#   r = TP×DP×PP; r % min(gpus_per_node, r) == 0.
# - vllm_dp_tp_per_node (>=0.6.0; verl/workers/rollout/vllm_rollout/vllm_async_server.py:
#   361-369): vllm and DP > 1 => min(gpus_per_node, r) % TP == 0.
#   Both run when the rollout servers start (async mode: the only mode from 0.7.0).
#   gpus_per_node is rollout.n_gpus_per_node (>=0.7.1, defaults to trainer.n_gpus_per_node).
REPLICA = ">=0.6.0"


def separate_rollout_pool(config) -> bool:
    """The entry point runs the rollout on devices of its own (top-level `rollout:` section)."""
    return "rollout.n_gpus_per_node" in config


@register
class RolloutParallelMismatch(Rule):
    """The rollout engine's parallel sizes do not fit the devices.

    ## What it does
    Checks the rollout (`actor_rollout_ref.rollout.*`) parallel sizes the way verl does when it
    builds the rollout workers and servers: `TP×DP×PP` must divide the world size
    `trainer.nnodes × trainer.n_gpus_per_node` (colocated hybrid engine); an
    `expert_parallel_size` above 1 must equal `TP×DP`; `pipeline_model_parallel_size > 1` is not
    implemented by vLLM, SGLang or TensorRT-LLM; a replica (`TP×DP×PP` devices) larger than a
    node must span whole nodes; vLLM with `data_parallel_size > 1` needs the devices per node to
    be divisible by TP.

    ## Why is this bad?
    verl asserts these when the rollout workers or the inference servers start: the job has
    been queued, the cluster allocated and the models loaded before it fails.

    Where it applies: every entry point that starts rollout servers, `main_generation_server`
    included (it sizes its replicas as world ÷ rollout TP,
    `verl/trainer/main_generation_server.py:41-42` @0.9.1). The world-size check from 0.4.0,
    `expert_parallel_size = TP×DP` from 0.6.0 (`verl/workers/config/rollout.py:294-296` @0.9.1),
    rollout PP > 1 from 0.7.0, the replica-versus-node check from 0.6.0.

    ## Example
    ```bash
    python3 -m verl.trainer.main_ppo \
        algorithm.adv_estimator=grpo \
        actor_rollout_ref.rollout.name=vllm \
        actor_rollout_ref.rollout.tensor_model_parallel_size=4 \
        actor_rollout_ref.rollout.data_parallel_size=2 \
        actor_rollout_ref.rollout.expert_parallel_size=16 \
        trainer.nnodes=2 \
        trainer.n_gpus_per_node=8
    ```

    ## Use instead
    ```bash
    python3 -m verl.trainer.main_ppo \
        algorithm.adv_estimator=grpo \
        actor_rollout_ref.rollout.name=vllm \
        actor_rollout_ref.rollout.tensor_model_parallel_size=4 \
        actor_rollout_ref.rollout.data_parallel_size=2 \
        actor_rollout_ref.rollout.expert_parallel_size=8 \
        trainer.nnodes=2 \
        trainer.n_gpus_per_node=8
    ```

    ## Fix safety
    Unsafe: the fix changes a parallel size the script states literally; the size that
    should change may be another one (or the device count).

    ## References
    - verl `verl/workers/config/rollout.py` (`expert_parallel_size must be equal to
      tensor_model_parallel_size * data_parallel_size`, pipeline parallel not implemented)
    - verl `verl/workers/rollout/replica.py` and `vllm_rollout/vllm_async_server.py`
    - verl `verl/workers/engine_workers.py` ("rollout world_size is not divisible by
      infer_world_size")
    """

    code = "VL302"
    name = "rollout-parallel-mismatch"
    severity = Severity.ERROR
    summary = "rollout TP/DP/PP/EP sizes do not fit the devices"
    scope = "launch"
    fixable = True

    def check(self, ctx: LaunchContext) -> Iterable[Diagnostic]:
        if config_of(ctx) is None:
            return
        yield from collect([
            lambda: self._world_divides(ctx),
            lambda: self._ep_equals_tp_dp(ctx),
            lambda: self._pp_unsupported(ctx),
            lambda: self._replica_fits_nodes(ctx),
        ])

    def _sizes(self, ctx: LaunchContext) -> tuple[Operand, Operand, Operand]:
        config = config_of(ctx)
        tp = get_int(config, f"{ROLLOUT}.tensor_model_parallel_size")
        dp = get_int(config, f"{ROLLOUT}.data_parallel_size", absent=1)
        pp = get_int(config, f"{ROLLOUT}.pipeline_model_parallel_size", absent=1)
        if min(tp.value, dp.value, pp.value) <= 0:
            raise Skip("rollout sizes")
        return tp, dp, pp

    @staticmethod
    def _factors(tp: Operand, dp: Operand, pp: Operand) -> tuple[str, list[Operand]]:
        """Only the sizes this release has (0.4/0.5 have no rollout DP/PP)."""
        pairs = [(n, op) for n, op in (("TP", tp), ("DP", dp), ("PP", pp))
                 if op.resolved is not None]
        return "×".join(n for n, _ in pairs), [op for _, op in pairs]

    def _world_divides(self, ctx: LaunchContext) -> Diagnostic | None:
        config = config_of(ctx)
        if not in_range(config.version, WORLD_DIVIDES):
            return None
        # Only the colocated hybrid engine shares the trainer's devices with the rollout.
        if not get_bool(config, "actor_rollout_ref.hybrid_engine", absent=True).value:
            return None
        if get_int(config, f"{ROLLOUT}.nnodes", absent=0, nullable=True).value not in (0, None):
            return None
        # fully_async / one_step_off_policy give the rollout its own pool (top-level
        # `rollout.nnodes × rollout.n_gpus_per_node`): the trainer's world says nothing here.
        if separate_rollout_pool(config):
            return None
        w = world(config)
        names, factors = self._factors(*self._sizes(ctx))
        total = product(factors)
        if w.size % total == 0:
            return None
        span, labels = place(ctx.launch.span, culprits(factors, w.size), w.operands)
        return self.diagnostic(
            span, f"{w.text()} is not divisible by the rollout {names} = {arithmetic(factors)}",
            labels=labels,
            help=f"choose rollout sizes whose product {names} divides {w.size}")

    def _ep_equals_tp_dp(self, ctx: LaunchContext) -> Diagnostic | None:
        config = config_of(ctx)
        if not in_range(config.version, EP_EQ_TP_DP):
            return None
        ep = get_int(config, f"{ROLLOUT}.expert_parallel_size")
        if ep.value <= 1:
            return None
        if get_str(config, f"{ROLLOUT}.name").value == "trtllm":
            return None
        tp, dp, _ = self._sizes(ctx)
        if ep.value == tp.value * dp.value:
            return None
        span, labels = place(ctx.launch.span, [ep, tp, dp])
        wanted = tp.value * dp.value
        return self.diagnostic(
            span,
            f"rollout expert_parallel_size {ep.value} ({where([ep])}) must equal the rollout "
            f"TP×DP = {arithmetic([tp, dp])} when it is greater than 1",
            labels=labels,
            help=f"set actor_rollout_ref.rollout.expert_parallel_size={wanted}, "
                 "or 1 to disable expert parallelism in the rollout",
            fix=literal_fix(ctx, ep, wanted, f"set the rollout expert_parallel_size to {wanted}"))

    def _pp_unsupported(self, ctx: LaunchContext) -> Diagnostic | None:
        config = config_of(ctx)
        if not in_range(config.version, PP_UNSUPPORTED):
            return None
        pp = get_int(config, f"{ROLLOUT}.pipeline_model_parallel_size")
        if pp.value <= 1:
            return None
        name = get_str(config, f"{ROLLOUT}.name")
        if name.value not in PP_ENGINES:
            return None
        span, labels = place(ctx.launch.span, [pp], [name])
        return self.diagnostic(
            span,
            f"rollout pipeline_model_parallel_size {pp.value} ({where([pp])}) is not "
            f"implemented for the {name.value} rollout (verl {config.version} raises "
            "NotImplementedError for a rollout PP above 1)",
            labels=labels,
            help="set actor_rollout_ref.rollout.pipeline_model_parallel_size=1 and use "
                 "tensor or data parallelism instead")

    def _replica_fits_nodes(self, ctx: LaunchContext) -> Diagnostic | None:
        config = config_of(ctx)
        if not in_range(config.version, REPLICA):
            return None
        # The server replicas exist in async mode (the only mode from 0.7.0).
        if get_str(config, f"{ROLLOUT}.mode", absent="async").value != "async":
            return None
        tp, dp, pp = self._sizes(ctx)
        per_node = get_int(config, f"{ROLLOUT}.n_gpus_per_node", absent=0)
        if per_node.resolved is None and separate_rollout_pool(config):
            per_node = get_int(config, "rollout.n_gpus_per_node")
        if per_node.resolved is None:
            per_node = get_int(config, "trainer.n_gpus_per_node")
        if per_node.value <= 0:
            return None
        factors = [tp, dp, pp]
        replica = product(factors)
        node = min(per_node.value, replica)
        if replica % node != 0:
            span, labels = place(ctx.launch.span, culprits(factors, per_node.value), [per_node])
            return self.diagnostic(
                span,
                f"a rollout replica of TP×DP×PP = {arithmetic(factors)} devices is larger "
                f"than a node ({per_node.show()}, {where([per_node])}) but not a multiple of it",
                labels=labels,
                help=f"make the replica size fit in one node of {per_node.value} devices or "
                     "span whole nodes")
        if dp.value > 1 and node % tp.value != 0 \
                and get_str(config, f"{ROLLOUT}.name").value == "vllm":
            span, labels = place(ctx.launch.span, [tp, per_node], [dp])
            return self.diagnostic(
                span,
                f"vLLM with rollout data_parallel_size {dp.value} > 1 needs the devices per "
                f"node ({per_node.show()}, {where([per_node])}) to be divisible by the rollout "
                f"TP = {arithmetic([tp])}",
                labels=labels,
                help="choose a rollout tensor_model_parallel_size that divides the devices "
                     "per node")
        return None

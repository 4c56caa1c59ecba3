"""VL303 batch-size-not-divisible."""

from __future__ import annotations

from typing import Iterable

from verl_lint.diagnostics import Diagnostic, Severity
from verl_lint.rules.arithmetic._data_parallel import DataParallel, data_parallel
from verl_lint.rules.arithmetic._operands import (
    builds_workers, config_of,
    ACTOR, FSDP_STRATEGIES, ROLLOUT, Operand, Skip, collect, critic_in_use, engine_workers,
    get_bool, get_int, get_str, is_ppo, legacy_workers, place, where, world,
)
from verl_lint.rules.base import LaunchContext, Rule
from verl_lint.rules.registry import register
from verl_lint.verl.effective import EffectiveConfig
from verl_lint.verl.versions import in_range

# Mirrors (constraints.json); all are skipped with dynamic batch size unless noted:
# - real_train_batch_divisible (>=0.4.0; verl/utils/config.py:101-113, wheel 0.9.1 :125):
#   (train_batch_size × rollout.n) % minimal_bsz, minimal_bsz = megatron DP × actor
#   ppo_micro_batch_size_per_gpu for Megatron, else the world size.
# - actor_train_ge_mini (>=0.4.0; verl/workers/config/actor.py:226-231) and
#   critic_train_ge_mini (>=0.4.0; verl/workers/config/critic.py:117-129):
#   train_batch_size >= ppo_mini_batch_size (both in prompts).
# - actor_global_mbs (>=0.4.0; verl/workers/config/actor.py:233-244), critic_mbs_exclusive and
#   critic_global_mbs_ge_ngpus (>=0.4.0; verl/workers/config/critic.py:103-115, 221-232): with the
#   deprecated global ppo_micro_batch_size: mini % micro == 0 and micro × Ulysses SP >= world
#   size (the latter for the FSDP critic only).
# - mini_batch_divides_dp (>=0.7.0 engine workers; verl/workers/engine_workers.py:260-269):
#   (ppo_mini_batch_size × n) % DP == 0 for actor and critic — checked even with dynamic bsz.
# - micro_divides_local_mini (>=0.7.0 engine workers; verl/workers/engine/utils.py:123-127):
#   (mini × n / DP) % ppo_micro_batch_size_per_gpu == 0; for the rollout's log-prob pass
#   (train_batch_size × n / DP) % log_prob_micro_batch_size_per_gpu == 0.
# - legacy_fsdp_mini_normalize (0.4.0-0.7.1 legacy FSDP workers, i.e. unless
#   trainer.use_legacy_worker_impl=disable; verl/workers/fsdp_workers.py
#   @v0.7.1:249-270, critic :1339-1358): m = mini × n // (world // SP) must be > 0 (always)
#   and divisible by ppo_micro_batch_size_per_gpu.
ALL = ">=0.4.0"
ROLES = (("actor", ACTOR), ("critic", "critic"))


def _dynamic(config: EffectiveConfig, section: str) -> bool:
    return get_bool(config, f"{section}.use_dynamic_bsz").value


def _data_parallel_size(config: EffectiveConfig, section: str, *, legacy: bool) -> int | None:
    try:
        return data_parallel(config, section, legacy=legacy).size
    except Skip:
        return None


@register
class BatchSizeNotDivisible(Rule):
    """Batch sizes that do not split evenly over the data-parallel ranks.

    ## What it does
    Repeats the batch arithmetic verl does at startup and at the first update on the effective
    config: `data.train_batch_size × rollout.n` must be divisible by the minimal batch (the
    world size; for Megatron, the data-parallel size × `ppo_micro_batch_size_per_gpu`);
    `ppo_mini_batch_size` must not exceed `train_batch_size`; `ppo_mini_batch_size × rollout.n`
    must be divisible by the actor's (and critic's) data-parallel size; the per-GPU mini batch
    must be divisible by `ppo_micro_batch_size_per_gpu`. The data-parallel size is the world
    size divided by `TP×PP×CP` (Megatron) or by the Ulysses sequence-parallel size (FSDP).

    ## Why is this bad?
    verl asserts these in `validate_config` or, worse, in the workers at the first training
    step — after rollout has already run on the whole cluster.

    Where it applies: the PPO configs on the training entry points (`main_ppo`,
    `main_ppo_sync`, `main_ppo_v0`, `one_step_off_policy.main_ppo`, `fully_async_main`), every
    release from 0.4.0; the per-rank checks on the engine workers from 0.7.0 (the only ones
    from 0.8.0: `verl/workers/engine/utils.py:124-127` @0.9.1 asserts the local batch divides
    by the micro batch), the legacy-worker ones before 0.8.0. When a launch word is the
    script's own unquoted string whose words are not all known (`$ACTOR_CONFIG`), verl's
    defaults are not trusted: the string may set them.

    ## Example
    ```bash
    python3 -m verl.trainer.main_ppo \
        algorithm.adv_estimator=grpo \
        actor_rollout_ref.rollout.name=vllm \
        data.train_batch_size=100 \
        actor_rollout_ref.rollout.n=4 \
        actor_rollout_ref.actor.ppo_mini_batch_size=50 \
        actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4 \
        actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=4 \
        trainer.nnodes=1 \
        trainer.n_gpus_per_node=8
    ```

    ## Use instead
    ```bash
    python3 -m verl.trainer.main_ppo \
        algorithm.adv_estimator=grpo \
        actor_rollout_ref.rollout.name=vllm \
        data.train_batch_size=128 \
        actor_rollout_ref.rollout.n=4 \
        actor_rollout_ref.actor.ppo_mini_batch_size=64 \
        actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4 \
        actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=4 \
        trainer.nnodes=1 \
        trainer.n_gpus_per_node=8
    ```

    ## References
    - verl `verl/utils/config.py` `validate_config` ("real_train_batch_size must be divisible
      by minimal possible batch size")
    - verl `verl/workers/config/actor.py`, `verl/workers/config/critic.py`
    - verl `verl/workers/engine_workers.py`, `verl/workers/engine/utils.py` ("data size must
      be divisible by force_group_size * micro_batch_size_per_gpu")
    """

    code = "VL303"
    name = "batch-size-not-divisible"
    severity = Severity.ERROR
    summary = "train/mini/micro batch sizes do not divide the data-parallel size"
    scope = "launch"

    def check(self, ctx: LaunchContext) -> Iterable[Diagnostic]:
        config = config_of(ctx)
        if config is None or not is_ppo(config) or not in_range(config.version, ALL) \
                or not builds_workers(ctx):
            return
        yield from collect([lambda: self._real_train_batch(ctx)])
        for role, section in ROLES:
            yield from collect([
                lambda: self._train_ge_mini(ctx, role, section),
                lambda: self._global_micro(ctx, role, section),
                lambda: self._mini_per_rank(ctx, role, section),
            ])
        yield from collect([lambda: self._log_prob_micro(ctx)])

    # -- validate_config -------------------------------------------------------------------

    def _real_train_batch(self, ctx: LaunchContext) -> Diagnostic | None:
        config = config_of(ctx)
        if _dynamic(config, ACTOR):
            return None
        tbs = get_int(config, "data.train_batch_size")
        n = get_int(config, f"{ROLLOUT}.n")
        real = tbs.value * n.value
        if get_str(config, f"{ACTOR}.strategy").value == "megatron":
            dp = data_parallel(config, ACTOR, legacy=False)
            micro = get_int(config, f"{ACTOR}.ppo_micro_batch_size_per_gpu", nullable=True)
            if micro.value is None or micro.value <= 0:
                return None  # VL304's finding
            minimal = dp.size * micro.value
            minimal_text = (f"{minimal} = actor data-parallel size {dp.text()} × "
                            f"{micro.show()} ({where([micro])})")
            others: list[Operand] = [micro, *dp.operands]
        else:
            w = world(config)
            minimal = w.size
            minimal_text = f"{minimal}, the {w.text()}"
            others = list(w.operands)
        if minimal <= 0 or real % minimal == 0:
            return None
        span, labels = place(ctx.launch.span, [tbs, n], others)
        return self.diagnostic(
            span,
            f"{tbs.show()} × {n.show()} = {real} ({where([tbs, n])}) is not divisible by "
            f"the minimal batch {minimal_text}",
            labels=labels,
            help=f"make train_batch_size × rollout.n a multiple of {minimal}")

    def _train_ge_mini(self, ctx: LaunchContext, role: str, section: str) -> Diagnostic | None:
        config = config_of(ctx)
        if role == "critic" and not critic_in_use(config):
            return None
        if _dynamic(config, section):
            return None
        tbs = get_int(config, "data.train_batch_size")
        mini = get_int(config, f"{section}.ppo_mini_batch_size")
        if role == "critic" and mini.is_inherited:
            return None  # the actor's value: reported once, for the actor
        if tbs.value >= mini.value:
            return None
        span, labels = place(ctx.launch.span, [mini, tbs])
        return self.diagnostic(
            span,
            f"{mini.show()} ({where([mini])}) is larger than {tbs.show()} "
            f"({where([tbs])}); both count prompts, before × rollout.n",
            labels=labels,
            help=f"use a {section}.ppo_mini_batch_size of at most {tbs.value}")

    def _global_micro(self, ctx: LaunchContext, role: str, section: str) -> Diagnostic | None:
        config = config_of(ctx)
        if role == "critic" and not critic_in_use(config):
            return None
        if _dynamic(config, section):
            return None
        micro = get_int(config, f"{section}.ppo_micro_batch_size", nullable=True)
        if micro.value is None or micro.value <= 0:
            return None
        mini = get_int(config, f"{section}.ppo_mini_batch_size")
        if mini.value % micro.value != 0:
            span, labels = place(ctx.launch.span, [micro, mini])
            return self.diagnostic(
                span,
                f"{mini.show()} ({where([mini])}) is not divisible by {micro.show()} "
                f"({where([micro])})",
                labels=labels,
                help="prefer ppo_micro_batch_size_per_gpu; the global micro batch is deprecated")
        if role == "critic" and get_str(config, f"{section}.strategy").value not in FSDP_STRATEGIES:
            return None  # critic_global_mbs_ge_ngpus is an FSDP critic check
        w = world(config)
        sp = get_int(config, f"{section}.ulysses_sequence_parallel_size", absent=1)
        if micro.value * sp.value >= w.size:
            return None
        span, labels = place(ctx.launch.span, [micro, sp], w.operands)
        return self.diagnostic(
            span,
            f"{micro.show()} × Ulysses SP {sp.value} = {micro.value * sp.value} "
            f"({where([micro, sp])}) is smaller than the {w.text()}: every rank needs at "
            "least one sample per micro batch",
            labels=labels,
            help="prefer ppo_micro_batch_size_per_gpu; the global micro batch is deprecated")

    # -- workers ---------------------------------------------------------------------------

    def _mini_per_rank(self, ctx: LaunchContext, role: str, section: str) -> Diagnostic | None:
        config = config_of(ctx)
        if role == "critic" and not critic_in_use(config):
            return None
        engine = engine_workers(config)
        kind = get_str(config, f"{section}.strategy").value
        if not engine and not (kind in FSDP_STRATEGIES and legacy_workers(config)):
            return None
        mini = get_int(config, f"{section}.ppo_mini_batch_size")
        n = get_int(config, f"{ROLLOUT}.n")
        dp = data_parallel(config, section, legacy=not engine)
        batch = mini.value * n.value
        batch_text = f"{mini.show()} × {n.show()} = {batch} ({where([mini, n])})"
        # A critic that copies the actor's mini batch onto the same ranks repeats its finding.
        repeats_actor = role == "critic" and mini.is_inherited \
            and _data_parallel_size(config, ACTOR, legacy=not engine) == dp.size
        if engine and batch % dp.size != 0 and not repeats_actor:
            return self._per_rank(ctx, [mini, n], dp,
                                  f"{batch_text} is not divisible by the {role} data-parallel "
                                  f"size {dp.text()}",
                                  f"make {section}.ppo_mini_batch_size × rollout.n a multiple of "
                                  f"{dp.size}")
        local = batch // dp.size
        if engine and batch % dp.size != 0:
            return None
        if local == 0 and not repeats_actor:
            return self._per_rank(ctx, [mini, n], dp,
                                  f"{batch_text} is smaller than the {role} data-parallel size "
                                  f"{dp.text()}: the per-rank mini batch is 0",
                                  f"make {section}.ppo_mini_batch_size × rollout.n at least "
                                  f"{dp.size}")
        if local == 0 or _dynamic(config, section):
            return None
        micro = get_int(config, f"{section}.ppo_micro_batch_size_per_gpu", nullable=True)
        if micro.value is None or micro.value <= 0 or local % micro.value == 0:
            return None
        return self._per_rank(ctx, [micro, mini, n], dp,
                              f"the per-rank {role} mini batch {batch} / {dp.size} = {local} "
                              f"({batch_text}; data-parallel size {dp.text()}) is not "
                              f"divisible by {micro.show()} ({where([micro])})",
                              f"choose a {section}.ppo_micro_batch_size_per_gpu that divides "
                              f"{local}")

    def _log_prob_micro(self, ctx: LaunchContext) -> Diagnostic | None:
        config = config_of(ctx)
        if not engine_workers(config):
            return None
        if get_bool(config, f"{ROLLOUT}.log_prob_use_dynamic_bsz").value:
            return None
        micro = get_int(config, f"{ROLLOUT}.log_prob_micro_batch_size_per_gpu", nullable=True)
        if micro.value is None or micro.value <= 0:
            return None
        tbs = get_int(config, "data.train_batch_size")
        n = get_int(config, f"{ROLLOUT}.n")
        dp = data_parallel(config, ACTOR, legacy=False)
        batch = tbs.value * n.value
        if batch % dp.size != 0:
            return None  # the train-batch finding above
        local = batch // dp.size
        if local % micro.value == 0:
            return None
        return self._per_rank(ctx, [micro, tbs, n], dp,
                              f"the per-rank log-prob batch {batch} / {dp.size} = {local} "
                              f"({tbs.show()} × {n.show()}, {where([tbs, n])}; actor "
                              f"data-parallel size {dp.text()}) is not divisible by "
                              f"{micro.show()} ({where([micro])})",
                              f"choose a log_prob_micro_batch_size_per_gpu that divides {local}")

    def _per_rank(self, ctx: LaunchContext, candidates: list[Operand], dp: DataParallel,
                  message: str, help: str) -> Diagnostic:
        span, labels = place(ctx.launch.span, candidates, dp.operands)
        return self.diagnostic(span, message, labels=labels, help=help)


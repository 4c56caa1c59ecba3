"""VL304 micro-batch-conflict."""

from __future__ import annotations

from typing import Iterable

from verl_lint.diagnostics import Diagnostic, Severity
from verl_lint.rules.arithmetic._operands import (
    builds_workers, config_of,
    ACTOR, REF, ROLLOUT, collect, critic_in_use, engine_workers, get_bool, get_int, is_ppo,
    place, ref_in_use, where,
)
from verl_lint.rules.base import LaunchContext, Rule
from verl_lint.rules.registry import register
from verl_lint.verl.versions import in_range

# Mirrors (constraints.json):
# - actor_mbs_exclusive (>=0.4.0; verl/workers/config/actor.py:201-212),
#   logprob_mbs_mutually_exclusive (>=0.4.0; verl/utils/config.py:117-167: rollout, and ref
#   when a reference policy is needed), critic_mbs_exclusive (>=0.4.0;
#   verl/workers/config/critic.py:103-115, when a critic is needed): without dynamic batch size
#   exactly one of the deprecated global micro batch and its `_per_gpu` twin must be set.
# - per_gpu_mbs_required (>=0.7.0 engine workers, the only workers from 0.8.0;
#   verl/workers/engine_workers.py:631-636): without dynamic batch size the actor's
#   ppo_micro_batch_size_per_gpu and the rollout's log_prob_micro_batch_size_per_gpu must be set;
#   the deprecated global keys are not converted any more.
ALL = ">=0.4.0"
# (section, global key, gating dynamic-bsz key, needs a per-GPU key on the engine workers)
SECTIONS = (
    (ACTOR, "ppo_micro_batch_size", f"{ACTOR}.use_dynamic_bsz", True),
    (ROLLOUT, "log_prob_micro_batch_size", f"{ACTOR}.use_dynamic_bsz", True),
    (REF, "log_prob_micro_batch_size", f"{ACTOR}.use_dynamic_bsz", False),
    ("critic", "ppo_micro_batch_size", "critic.use_dynamic_bsz", False),
)


@register
class MicroBatchConflict(Rule):
    """Micro batch sizes set twice, or not at all.

    ## What it does
    Without dynamic batch size (`use_dynamic_bsz=False`), verl needs exactly one micro batch
    size per role: the deprecated global key (`ppo_micro_batch_size`,
    `log_prob_micro_batch_size`) or its per-GPU twin (`…_per_gpu`). This rule fires when both
    are set, when neither is, and — on the engine workers (the only ones from verl 0.8.0) —
    when the actor or rollout sets only the deprecated global key, which those workers no
    longer convert.

    ## Why is this bad?
    verl rejects both and neither in `validate_config`; the global-only case passes validation
    and fails with a bare `AssertionError` when the workers initialise their models.

    Where it applies: the training entry points whose code builds the actor, rollout, ref and
    critic workers — `main_ppo`, `main_ppo_sync` (0.8.0), `main_ppo_v0` (0.9.x),
    `one_step_off_policy.main_ppo` and `fully_async_main` — on every release from 0.4.0; the
    global-only case from 0.7.0 on the engine workers (from 0.8.0 the only ones). Not
    `main_generation_server`, which starts rollout replicas only and reads none of these keys.
    When a word of the launch is the script's own unquoted variable whose value is not known
    (`$ACTOR_CONFIG` holding `$HOME`), the missing key may be in it: no finding. A caller's
    `"$@"` makes the missing-key case `info`.

    ## Example
    ```bash
    python3 -m verl.trainer.main_ppo \
        algorithm.adv_estimator=grpo \
        actor_rollout_ref.rollout.name=vllm \
        actor_rollout_ref.actor.ppo_micro_batch_size=64 \
        actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=8 \
        actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=8
    ```

    ## Use instead
    ```bash
    python3 -m verl.trainer.main_ppo \
        algorithm.adv_estimator=grpo \
        actor_rollout_ref.rollout.name=vllm \
        actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=8 \
        actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=8
    ```

    ## References
    - verl `verl/workers/config/actor.py` ("You have set both 'actor.ppo_micro_batch_size'
      AND 'actor.ppo_micro_batch_size_per_gpu'")
    - verl `verl/utils/config.py` `check_mutually_exclusive`
    - verl `verl/workers/engine_workers.py` (per-GPU micro batch required)
    """

    code = "VL304"
    name = "micro-batch-conflict"
    severity = Severity.ERROR
    summary = "deprecated global micro batch and *_per_gpu both set, or neither"
    scope = "launch"

    def check(self, ctx: LaunchContext) -> Iterable[Diagnostic]:
        config = config_of(ctx)
        if config is None or not is_ppo(config) or not in_range(config.version, ALL) \
                or not builds_workers(ctx):
            return
        for section, key, dynamic_key, per_gpu_required in SECTIONS:
            yield from collect([
                lambda: self._check(ctx, section, key, dynamic_key, per_gpu_required)])

    def _check(self, ctx: LaunchContext, section: str, key: str, dynamic_key: str,
               per_gpu_required: bool) -> Diagnostic | None:
        config = config_of(ctx)
        if section == REF and not ref_in_use(config):
            return None
        if section == "critic" and not critic_in_use(config):
            return None
        dynamic = get_bool(config, dynamic_key)
        if dynamic.value:
            return None
        legacy = get_int(config, f"{section}.{key}", nullable=True)
        per_gpu = get_int(config, f"{section}.{key}_per_gpu", nullable=True)
        if legacy.value is not None and per_gpu.value is not None:
            # A default that copies the global value (critic's `${oc.select:.…}`) is one setting.
            if per_gpu.is_inherited or legacy.is_inherited:
                return None
            span, labels = place(ctx.launch.span, [legacy, per_gpu])
            return self.diagnostic(
                span,
                f"both {legacy.show()} ({where([legacy])}) and {per_gpu.show()} "
                f"({where([per_gpu])}) are set; the global micro batch is deprecated",
                labels=labels,
                help=f"remove {legacy.key} and keep {per_gpu.key}")
        if legacy.value is None and per_gpu.value is None:
            # Nothing to edit: the key must be added to the launch.
            span, labels = place(ctx.launch.span, [], [dynamic])
            # `"$@"` may pass the key: the script alone cannot tell, so only say it softly.
            passthrough = bool(ctx.launch.passthrough)
            return self.diagnostic(
                span,
                f"neither {per_gpu.key} nor {legacy.key} is set, and {dynamic.show()} "
                f"({where([dynamic])}) needs a micro batch size"
                + (' (unless the caller passes it through "$@")' if passthrough else ""),
                labels=labels,
                help=f"set {per_gpu.key}, or enable use_dynamic_bsz",
                severity=Severity.INFO if passthrough else None)
        if per_gpu.value is None and per_gpu_required and engine_workers(config):
            span, labels = place(ctx.launch.span, [legacy])
            return self.diagnostic(
                span,
                f"only the deprecated {legacy.show()} ({where([legacy])}) is set; verl "
                f"{config.version}'s engine workers require {per_gpu.key} (the global value "
                "is no longer converted)",
                labels=labels,
                help=f"set {per_gpu.key} to the per-device micro batch instead")
        return None

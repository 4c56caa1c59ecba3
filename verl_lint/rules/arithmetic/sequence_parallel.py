"""VL306 sequence-parallel-needs-remove-padding."""

from __future__ import annotations

from typing import Iterable

from verl_lint.diagnostics import Diagnostic, Severity
from verl_lint.rules.arithmetic._operands import (
    builds_workers, config_of,
    ACTOR, FSDP_STRATEGIES, REF, collect, critic_in_use, get_bool, get_int, get_str, place, where,
)
from verl_lint.rules.base import LaunchContext, Rule
from verl_lint.rules.registry import register
from verl_lint.verl.versions import in_range

# Mirrors (constraints.json):
# - actor_sp_needs_rmpad (>=0.4.0; verl/workers/config/actor.py:336-343, in
#   ray_trainer._validate_config up to 0.5.0 together with the critic's twin): FSDP actor with
#   ulysses_sequence_parallel_size > 1 => actor_rollout_ref.model.use_remove_padding.
# - fsdp_engine_sp_needs_rmpad (>=0.8.0; verl/workers/engine/fsdp/transformer_impl.py:129-133):
#   the engine config's fsdp_config.ulysses_sequence_parallel_size (critic: critic.fsdp.*) > 1
#   => <model>.use_remove_padding.
# (role, section, model key, [(sequence-parallel key, releases)])
ROLES = (
    ("actor", ACTOR, "actor_rollout_ref.model.use_remove_padding", (
        (f"{ACTOR}.ulysses_sequence_parallel_size", ">=0.4.0"),
        (f"{ACTOR}.fsdp_config.ulysses_sequence_parallel_size", ">=0.8.0"),
        # The reference policy shares the model config (and inherits the actor's size).
        (f"{REF}.ulysses_sequence_parallel_size", ">=0.4.0"),
        (f"{REF}.fsdp_config.ulysses_sequence_parallel_size", ">=0.8.0"),
    )),
    ("critic", "critic", "critic.model.use_remove_padding", (
        ("critic.ulysses_sequence_parallel_size", ">=0.4.0"),
        ("critic.fsdp.ulysses_sequence_parallel_size", ">=0.8.0"),
    )),
)


@register
class SequenceParallelNeedsRemovePadding(Rule):
    """Ulysses sequence parallelism without remove-padding.

    ## What it does
    Fires when an FSDP actor or critic uses Ulysses sequence parallelism
    (`ulysses_sequence_parallel_size > 1`, or the engine config's
    `fsdp_config.ulysses_sequence_parallel_size > 1`) while the effective
    `model.use_remove_padding` is False.

    ## Why is this bad?
    verl's Ulysses implementation splits the packed (padding-free) token stream across ranks;
    it has no padded code path. verl rejects the combination when it validates the config or
    builds the FSDP engine, after the job has started.

    Where it applies: the training entry points, for the actor, ref and critic; the
    `ulysses_sequence_parallel_size` keys from 0.4.0, the `fsdp_config` ones from 0.8.0 (the
    FSDP engine's own check). Not `main_generation_server`, which builds none of them.

    ## Example
    ```bash
    python3 -m verl.trainer.main_ppo \
        algorithm.adv_estimator=grpo \
        actor_rollout_ref.rollout.name=vllm \
        actor_rollout_ref.model.use_remove_padding=False \
        actor_rollout_ref.actor.ulysses_sequence_parallel_size=2
    ```

    ## Use instead
    ```bash
    python3 -m verl.trainer.main_ppo \
        algorithm.adv_estimator=grpo \
        actor_rollout_ref.rollout.name=vllm \
        actor_rollout_ref.model.use_remove_padding=True \
        actor_rollout_ref.actor.ulysses_sequence_parallel_size=2
    ```

    ## References
    - verl `verl/workers/config/actor.py` ("When using sequence parallelism for actor/ref
      policy, you must enable `use_remove_padding`.")
    - verl `verl/workers/engine/fsdp/transformer_impl.py`
    """

    code = "VL306"
    name = "sequence-parallel-needs-remove-padding"
    severity = Severity.ERROR
    summary = "Ulysses sequence parallelism > 1 with use_remove_padding=False"
    scope = "launch"

    def check(self, ctx: LaunchContext) -> Iterable[Diagnostic]:
        if config_of(ctx) is None or not builds_workers(ctx):
            return
        for role, section, model_key, sp_keys in ROLES:
            yield from collect([lambda: self._check(ctx, role, section, model_key, sp_keys)])

    def _check(self, ctx: LaunchContext, role: str, section: str, model_key: str,
               sp_keys: tuple[tuple[str, str], ...]) -> Diagnostic | None:
        config = config_of(ctx)
        if role == "critic" and not critic_in_use(config):
            return None
        if get_str(config, f"{section}.strategy").value not in FSDP_STRATEGIES:
            return None
        sizes = [get_int(config, key) for key, releases in sp_keys
                 if in_range(config.version, releases) and config.get(key) is not None]
        parallel = [op for op in sizes if op.value > 1]
        if not parallel:
            return None
        padding = get_bool(config, model_key)
        if padding.value:
            return None
        sp = parallel[0]
        span, labels = place(ctx.launch.span, [*parallel, padding])
        return self.diagnostic(
            span,
            f"{role} Ulysses sequence parallelism {sp.show()} ({where([sp])}) needs "
            f"{model_key}=True, but it is {padding.value} ({where([padding])})",
            labels=labels,
            help=f"set {model_key}=True, or {sp.key}=1 when the model cannot run without "
                 "padding")

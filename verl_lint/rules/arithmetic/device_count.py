"""VL307 device-count-mismatch."""

from __future__ import annotations

from typing import Iterable

from verl_lint.diagnostics import Diagnostic, Severity
from verl_lint.evaluate.model import VISIBLE_DEVICE_VARS
from verl_lint.rules.arithmetic._operands import (
    config_of,
    Skip, get_bool, get_int, literal_fix, place, where,
)
from verl_lint.rules.base import LaunchContext, Rule
from verl_lint.rules.registry import register

# No verl check mirrors this one: Ray only schedules on the devices the process can see, so a
# trainer asking for more devices per node than are visible waits for a placement group that
# never comes; asking for fewer leaves visible devices idle. All releases.


def visible_count(value: object) -> int | None:
    """How many devices a `CUDA_VISIBLE_DEVICES` / `ASCEND_RT_VISIBLE_DEVICES` value lists
    (None when not a plain comma-separated list)."""
    if not isinstance(value, str) or not value.strip():
        return None
    entries = [entry.strip() for entry in value.split(",")]
    if any(not entry for entry in entries):
        return None
    return len(entries)


# switches that give a role a device pool besides trainer.n_gpus_per_node (verl 0.9.1
# trainer_base.py: `teacher_pool`, `reward_pool`)
_SEPARATE_POOLS = ("distillation.enabled", "reward.reward_model.enable_resource_pool",
                   "reward_model.enable_resource_pool")


def _separate_pools(config) -> bool:
    """A switch is on (null and absent are off); Skip when one is unknown."""
    return any(get_bool(config, key, absent=False, nullable=True).value for key in _SEPARATE_POOLS)


@register
class DeviceCountMismatch(Rule):
    """`n_gpus_per_node` disagrees with the devices the script makes visible.

    ## What it does
    Compares the effective `trainer.n_gpus_per_node` with the number of devices listed in
    `CUDA_VISIBLE_DEVICES` (GPU) or `ASCEND_RT_VISIBLE_DEVICES` (Ascend NPU) as the script
    exports them before the launch, in each device scenario.

    ## Why is this bad?
    Ray only sees the visible devices. Asking for more per node than are visible leaves the
    trainer waiting forever for its placement group; asking for fewer leaves devices idle.
    A common cause is a GPU branch and an NPU branch with different device counts that share
    one `n_gpus_per_node`.

    Where it applies: every entry point and release: Ray's placement groups, not verl's code,
    decide it (a separate reward pool changes how many devices the trainer asks for).

    ## Example
    ```bash
    export CUDA_VISIBLE_DEVICES=0,1,2,3
    python3 -m verl.trainer.main_ppo \
        algorithm.adv_estimator=grpo \
        actor_rollout_ref.rollout.name=vllm \
        trainer.n_gpus_per_node=8
    ```

    ## Use instead
    ```bash
    export CUDA_VISIBLE_DEVICES=0,1,2,3
    python3 -m verl.trainer.main_ppo \
        algorithm.adv_estimator=grpo \
        actor_rollout_ref.rollout.name=vllm \
        trainer.n_gpus_per_node=4
    ```

    ## Fix safety
    Unsafe: the fix sets `trainer.n_gpus_per_node` to the visible device count; it may be
    the device list that is wrong.

    ## References
    - verl docs, "Multinode training" (`trainer.n_gpus_per_node`)
    - Ray docs, "Accelerator support" (`CUDA_VISIBLE_DEVICES`, `ASCEND_RT_VISIBLE_DEVICES`)
    """

    code = "VL307"
    name = "device-count-mismatch"
    severity = Severity.WARNING
    summary = "n_gpus_per_node differs from the visible device list"
    scope = "launch"
    fixable = True

    def check(self, ctx: LaunchContext) -> Iterable[Diagnostic]:
        if config_of(ctx) is None:
            return
        visible = ctx.run.visible_devices
        count = visible_count(visible)
        if count is None:
            return
        # The evaluator reports only the scenario's own device variable; a list from elsewhere
        # (hand-built runs) in a device scenario restricts nothing.
        source = ctx.run.visible_devices_from
        device = ctx.run.scenario.device
        if device in VISIBLE_DEVICE_VARS and source not in VISIBLE_DEVICE_VARS[device]:
            return
        source = source or "the script"
        try:
            per_node = get_int(config_of(ctx), "trainer.n_gpus_per_node")
            if per_node.value < count and _separate_pools(config_of(ctx)):
                return  # a distillation teacher or reward model on devices of its own
        except Skip:
            return
        if per_node.value == count:
            return
        span, labels = place(ctx.launch.span, [per_node])
        yield self.diagnostic(
            span,
            f"{per_node.show()} ({where([per_node])}) but {source} makes {count} "
            f"device{'s' if count != 1 else ''} visible ({visible})",
            labels=labels,
            help=f"set trainer.n_gpus_per_node={count}, or list {per_node.value} devices",
            fix=literal_fix(ctx, per_node, count, f"set trainer.n_gpus_per_node to {count}"))


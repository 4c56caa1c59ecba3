"""VL208 unknown-config-group."""

from __future__ import annotations

from typing import Iterable

from verl_lint.diagnostics import Diagnostic, Severity
from verl_lint.rules.base import LaunchContext, Rule
from verl_lint.rules.overrides._common import problems, report
from verl_lint.rules.registry import register


@register
class UnknownConfigGroup(Rule):
    """A config group option or config name that this verl release does not have.

    ## What it does
    Checks group overrides (`model_engine=megatron`, `actor@actor_rollout_ref.actor=…`) and
    `--config-name` against the config groups and files of the chosen release, composing them
    with Hydra; the message lists the options that exist.

    ## Why is this bad?
    Hydra stops with `Could not find 'model_engine/fsdp'` before anything runs; the valid
    names changed across releases (`model_engine` exists from 0.7.1, its FSDP option is `dp`).

    ## Example
    ```bash
    #!/usr/bin/env bash
    set -xeuo pipefail
    python3 -m verl.trainer.main_ppo \
        model_engine=fsdp \
        actor_rollout_ref.rollout.name=vllm
    ```

    ## Use instead
    ```bash
    #!/usr/bin/env bash
    set -xeuo pipefail
    python3 -m verl.trainer.main_ppo \
        model_engine=dp \
        actor_rollout_ref.rollout.name=vllm
    ```

    ## References
    - verl `verl/trainer/config/model_engine/` (one file per option)
    - Hydra config groups: https://hydra.cc/docs/tutorials/basic/your_first_app/config_groups/
    """

    code = "VL208"
    name = "unknown-config-group"
    severity = Severity.ERROR
    summary = "a config group option or --config-name that does not exist in this release"
    scope = "launch"

    def check(self, ctx: LaunchContext) -> Iterable[Diagnostic]:
        return report(self, ctx, problems(ctx, self.code))

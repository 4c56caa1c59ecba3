"""VL203 append-existing-key."""

from __future__ import annotations

from typing import Iterable

from verl_lint.diagnostics import Diagnostic, Severity
from verl_lint.rules.base import LaunchContext, Rule
from verl_lint.rules.overrides._common import problems, report
from verl_lint.rules.registry import register


@register
class AppendExistingKey(Rule):
    """`+key=value` on a key that already has a value.

    ## What it does
    Fires when `+` appends a key that already exists with a non-null value — including a value
    the node inherits through `${oc.select:…}` (the ref's `megatron.override_transformer_config`
    follows the actor's). Fix: `++` when the value is inherited (it replaces the inherited
    node), else drop the `+`.

    ## Why is this bad?
    Hydra refuses it: `Could not append to config. An item is already at '…'`, and the launch
    fails before training starts.

    ## Example
    ```bash
    #!/usr/bin/env bash
    set -xeuo pipefail
    python3 -m verl.trainer.main_ppo \
        actor_rollout_ref.rollout.name=vllm \
        +trainer.total_epochs=3
    ```

    ## Use instead
    ```bash
    #!/usr/bin/env bash
    set -xeuo pipefail
    python3 -m verl.trainer.main_ppo \
        actor_rollout_ref.rollout.name=vllm \
        trainer.total_epochs=3
    ```

    ## Fix safety
    Safe: dropping the `+` (or using `++` on an inherited value) makes Hydra set the key to
    the value the script already gives it.

    ## References
    - Hydra: `+` appends, `++` appends or overrides,
      https://hydra.cc/docs/advanced/override_grammar/basic/
    """

    code = "VL203"
    name = "append-existing-key"
    severity = Severity.ERROR
    summary = "'+' on a key that already exists (Hydra: Could not append)"
    scope = "launch"
    fixable = True

    def check(self, ctx: LaunchContext) -> Iterable[Diagnostic]:
        return report(self, ctx, problems(ctx, self.code))

"""VL202 missing-plus-prefix."""

from __future__ import annotations

from typing import Iterable

from verl_lint.diagnostics import Diagnostic, Severity
from verl_lint.rules.base import LaunchContext, Rule
from verl_lint.rules.overrides._common import problems, report
from verl_lint.rules.registry import register


@register
class MissingPlusPrefix(Rule):
    """A new key is set without `+` under a node that only accepts it with `+`.

    ## What it does
    Fires when an override's key is absent from the composed config but its parent takes new
    keys: a dict field (`rollout.engine_kwargs.vllm`, `megatron.override_transformer_config`,
    `model.override_config`), a node inherited through `${oc.select:…}`, or a dataclass field
    the YAML leaves out. The fix adds the `+` (or `++` when a plain `+` would collide with an
    inherited value).

    ## Why is this bad?
    Hydra composes verl's config in struct mode: without `+` it refuses the key with
    `Could not override '…'. To append to your config use +…` and the launch fails.

    ## Example
    ```bash
    #!/usr/bin/env bash
    set -xeuo pipefail
    python3 -m verl.trainer.main_ppo \
        actor_rollout_ref.rollout.name=sglang \
        actor_rollout_ref.rollout.engine_kwargs.sglang.attention_backend=fa3
    ```

    ## Use instead
    ```bash
    #!/usr/bin/env bash
    set -xeuo pipefail
    python3 -m verl.trainer.main_ppo \
        actor_rollout_ref.rollout.name=sglang \
        +actor_rollout_ref.rollout.engine_kwargs.sglang.attention_backend=fa3
    ```

    ## Fix safety
    Safe: adding the `+` makes Hydra add the key the script already sets, with the value it
    already has.

    ## References
    - Hydra: appending to the config, https://hydra.cc/docs/advanced/override_grammar/basic/
    - verl `rollout.yaml`: `engine_kwargs.vllm` / `engine_kwargs.sglang` are empty dicts
    """

    code = "VL202"
    name = "missing-plus-prefix"
    severity = Severity.ERROR
    summary = "a new key under a dict field or dataclass node needs a '+' prefix"
    scope = "launch"
    fixable = True

    def check(self, ctx: LaunchContext) -> Iterable[Diagnostic]:
        return report(self, ctx, problems(ctx, self.code))

"""VL201 unknown-override-key."""

from __future__ import annotations

from typing import Iterable

from verl_lint.diagnostics import Diagnostic, Severity
from verl_lint.rules.base import LaunchContext, Rule
from verl_lint.rules.overrides._common import problems, report
from verl_lint.rules.registry import register


@register
class UnknownOverrideKey(Rule):
    """An override key that does not exist in verl's config for this release.

    ## What it does
    Checks every override key against the config the entry point composes in the chosen verl
    release. It fires when Hydra would refuse the key (it is not in the config and its parent
    does not take new keys), when `~key` deletes a key that is not there, and when `+key` adds a
    key under a `_target_` dataclass node that has no such field: Hydra accepts that one, but
    verl fails when it builds the dataclass. The message offers the closest existing keys, by
    spelling of the whole path and by the leaf name anywhere in the tree
    (`actor.learning_rate` → `actor.optim.lr`).

    ## Why is this bad?
    Hydra aborts the launch with `Could not override '…'` — after the job was queued and the
    cluster allocated. A `+` on a non-field passes Hydra and dies minutes later in the workers.

    ## Example
    ```bash
    #!/usr/bin/env bash
    set -xeuo pipefail
    python3 -m verl.trainer.main_ppo \
        actor_rollout_ref.rollout.name=vllm \
        actor_rollout_ref.actor.learning_rate=1e-6 \
        trainer.n_gpus_per_node=8
    ```

    ## Use instead
    ```bash
    #!/usr/bin/env bash
    set -xeuo pipefail
    python3 -m verl.trainer.main_ppo \
        actor_rollout_ref.rollout.name=vllm \
        actor_rollout_ref.actor.optim.lr=1e-6 \
        trainer.n_gpus_per_node=8
    ```

    ## Fix safety
    Unsafe: the fix renames the key to the only suggestion, which is a guess at what was
    meant; it is offered only when there is exactly one suggestion, in the key's role and
    engine section, whose value type fits. A suggestion the launch already sets gets no
    rename (the launch would set it twice); when both values are the same literal, the fix
    deletes this override instead. A key that only follows from another finding (a group
    override written in the wrong place) has no fix: `--fix` fixes the cause first and re-
    lints.

    ## References
    - Hydra override grammar: https://hydra.cc/docs/advanced/override_grammar/basic/
    - verl's config reference: `verl/trainer/config/ppo_trainer.yaml` and `verl/workers/config/`
    """

    code = "VL201"
    name = "unknown-override-key"
    severity = Severity.ERROR
    summary = "the override key does not exist in verl's config for this release"
    scope = "launch"
    fixable = True

    def check(self, ctx: LaunchContext) -> Iterable[Diagnostic]:
        return report(self, ctx, problems(ctx, self.code))

"""VL204 renamed-override-key."""

from __future__ import annotations

from typing import Iterable

from verl_lint.diagnostics import Diagnostic, Severity
from verl_lint.rules.base import LaunchContext, Rule
from verl_lint.rules.overrides._common import problems, report
from verl_lint.rules.registry import register


@register
class RenamedOverrideKey(Rule):
    """An override key that verl renamed or removed in an earlier release.

    ## What it does
    Fires when the key is not in the chosen release's config and verl's history has it renamed
    or removed; the message gives the release it happened in and the key to use now. The fix
    renames the key (marked safe when the new key exists in this release's config).

    ## Why is this bad?
    Scripts copied from older examples keep the old names; Hydra refuses them
    (`Could not override '…'`) and the message does not say what the new name is.

    ## Example
    ```bash
    #!/usr/bin/env bash
    set -xeuo pipefail
    python3 -m verl.trainer.main_ppo \
        actor_rollout_ref.rollout.name=vllm \
        actor_rollout_ref.actor.checkpoint.contents='["model","optimizer"]'
    ```

    ## Use instead
    ```bash
    #!/usr/bin/env bash
    set -xeuo pipefail
    python3 -m verl.trainer.main_ppo \
        actor_rollout_ref.rollout.name=vllm \
        actor_rollout_ref.actor.checkpoint.save_contents='["model","optimizer"]'
    ```

    ## Fix safety
    Safe when the new key exists in this release's config and the rename maps no values: the
    launch then sets the setting the old key named. Unsafe otherwise (a removed key, a value
    that changed meaning). A new key the launch already sets gets no rename; when both
    values are the same literal, the fix deletes the old override.

    ## References
    - verl #1350 (checkpoint `contents` → `save_contents`/`load_contents`) and the other
      entries of verl-lint's `renames.json`, each with the verl commit it comes from
    """

    code = "VL204"
    name = "renamed-override-key"
    severity = Severity.ERROR
    summary = "the key was renamed or removed in a known verl release"
    scope = "launch"
    fixable = True

    def check(self, ctx: LaunchContext) -> Iterable[Diagnostic]:
        return report(self, ctx, problems(ctx, self.code))

"""VL207 override-syntax-error."""

from __future__ import annotations

from typing import Iterable

from verl_lint.diagnostics import Diagnostic, Severity
from verl_lint.rules.base import LaunchContext, Rule
from verl_lint.rules.overrides._common import problems, report
from verl_lint.rules.registry import register


@register
class OverrideSyntaxError(Rule):
    """Hydra cannot parse the override.

    ## What it does
    Parses every override with Hydra's own override grammar and reports what it rejects:
    unbalanced brackets or quotes, characters the grammar does not allow unquoted (`=`, `#`,
    `~`, `!`…), and comma-separated values (`a,b`), which Hydra reads as a sweep and refuses
    outside `--multirun`.

    ## Why is this bad?
    The launch fails while parsing the command line, with a grammar error that points at the
    override text but not at the script line.

    ## Example
    ```bash
    #!/usr/bin/env bash
    set -xeuo pipefail
    python3 -m verl.trainer.main_ppo \
        actor_rollout_ref.rollout.name=vllm \
        trainer.logger=console,wandb
    ```

    ## Use instead
    ```bash
    #!/usr/bin/env bash
    set -xeuo pipefail
    python3 -m verl.trainer.main_ppo \
        actor_rollout_ref.rollout.name=vllm \
        trainer.logger='["console","wandb"]'
    ```

    ## References
    - Hydra override grammar: https://hydra.cc/docs/advanced/override_grammar/basic/
    """

    code = "VL207"
    name = "override-syntax-error"
    severity = Severity.ERROR
    summary = "Hydra cannot parse the override"
    scope = "launch"

    def check(self, ctx: LaunchContext) -> Iterable[Diagnostic]:
        return report(self, ctx, problems(ctx, self.code))

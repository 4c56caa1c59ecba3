"""VL001 shell-parse-error."""

from __future__ import annotations

from typing import Iterable

from verl_lint.diagnostics import Diagnostic, Severity
from verl_lint.rules.base import Rule, ScriptContext
from verl_lint.rules.registry import register


@register
class ShellParseError(Rule):
    """Bash cannot parse part of the script.

    ## What it does
    Reports the places where bash itself would reject the script: an unterminated quote, an
    `if` without `fi`, a `case` without `esac`, a stray `)`. The rest of the file is still
    linted, but what follows the error may be read differently from what you meant.

    ## Why is this bad?
    `bash` refuses to run a script with a syntax error, or runs it up to the error and stops —
    usually after the environment has been set up and the job queued, so the launch never
    happens.

    ## Example
    ```bash
    #!/usr/bin/env bash
    set -xeuo pipefail
    if [ "${DEVICE:-gpu}" = npu ]; then
        export ASCEND_RT_VISIBLE_DEVICES=0,1,2,3,4,5,6,7

    python3 -m verl.trainer.main_ppo trainer.n_gpus_per_node=8
    ```

    ## Use instead
    ```bash
    #!/usr/bin/env bash
    set -xeuo pipefail
    if [ "${DEVICE:-gpu}" = npu ]; then
        export ASCEND_RT_VISIBLE_DEVICES=0,1,2,3,4,5,6,7
    fi

    python3 -m verl.trainer.main_ppo trainer.n_gpus_per_node=8
    ```

    ## References
    - `bash -n script.sh` checks the syntax without running anything
    - [Bash reference manual: Shell Syntax](https://www.gnu.org/software/bash/manual/bash.html#Shell-Syntax)
    """

    code = "VL001"
    name = "shell-parse-error"
    severity = Severity.ERROR
    summary = "bash cannot parse the script here"
    scope = "script"

    def check(self, ctx: ScriptContext) -> Iterable[Diagnostic]:
        for error in ctx.model.errors:
            yield self.diagnostic(error.span, f"bash cannot parse this: {error.message}")

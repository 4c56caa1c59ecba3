"""VL002 unused-suppression."""

from __future__ import annotations

from typing import Iterable

from verl_lint.diagnostics import Diagnostic, Severity
from verl_lint.rules.base import Rule, ScriptContext
from verl_lint.rules.registry import register


@register
class UnusedSuppression(Rule):
    """A `# verl-lint: disable=…` directive suppresses nothing.

    ## What it does
    Reports each code of a suppression directive that did not hide any finding where the
    directive applies (the next command or array element, the line of a trailing directive,
    or the whole file for a directive in the header comments), and codes that name no
    verl-lint rule. Codes of rules that are not enabled for the file are not reported.

    The fix removes the code from the directive, or the directive when nothing is left.

    ## Why is this bad?
    A stale suppression outlives the problem it hid and will silently hide the next real
    problem on that line — often after the script has been edited and the directive now sits
    above a different command.

    ## Example
    ```bash
    #!/usr/bin/env bash
    set -xeuo pipefail

    # verl-lint: disable=VL108
    export HYDRA_FULL_ERROR=1
    ```

    ## Use instead
    ```bash
    #!/usr/bin/env bash
    set -xeuo pipefail

    export HYDRA_FULL_ERROR=1
    ```

    ## Fix safety
    Safe: the fix removes the directive (or the one unused code from it); no finding was
    suppressed by it, so the script and the other findings stay as they are.

    ## References
    - The "Suppressions" part of the verl-lint README
    """

    code = "VL002"
    name = "unused-suppression"
    severity = Severity.WARNING
    summary = "a suppression directive suppressed nothing"
    scope = "script"
    fixable = True

    def check(self, ctx: ScriptContext) -> Iterable[Diagnostic]:
        # The engine reports these after every other rule ran (`Suppressions.unused`): only
        # then is it known which directives were used.
        return ()

"""VL211 unknown-entry-point."""

from __future__ import annotations

from typing import Iterable

from verl_lint.diagnostics import Diagnostic, Severity
from verl_lint.rules.base import LaunchContext, Rule
from verl_lint.rules.registry import register


@register
class UnknownEntryPoint(Rule):
    """The launched verl module does not exist in the verl the script runs.

    ## What it does
    Reports a `python3 -m verl.…` (or `python3 verl/….py`) launch whose module is not part of
    the verl the script is judged against: the bundled release's wheel, or the verl tree in the
    workspace (a vendored copy, `verl-source`). A module verl removed (`verl.trainer.main_ppo_sync`
    after 0.8.0) or a misspelled one is reported; the message names the releases that have it.
    Modules outside `verl.` (recipes, your own package) are looked up on disk instead and are
    never reported here (VL004 says when one cannot be found).

    ## Why is this bad?
    Python stops at once with `No module named …`: the job fails on every node before any
    training starts, after the cluster was allocated.

    ## Example
    ```bash
    #!/usr/bin/env bash
    # verl==0.9.1
    set -xeuo pipefail
    python3 -m verl.trainer.main_ppo_sync \
        trainer.n_gpus_per_node=8
    ```

    ## Use instead
    ```bash
    #!/usr/bin/env bash
    # verl==0.9.1
    set -xeuo pipefail
    python3 -m verl.trainer.main_ppo \
        trainer.n_gpus_per_node=8
    ```

    ## References
    - The module lists of verl's wheels (`scripts/build_verl_data.py` mines them), or the files
      of the verl tree on disk
    """

    code = "VL211"
    name = "unknown-entry-point"
    severity = Severity.ERROR
    summary = "the launched module does not exist in that verl"
    scope = "launch"

    def check(self, ctx: LaunchContext) -> Iterable[Diagnostic]:
        analysis = ctx.analysis
        if analysis is None or not analysis.absent_module:
            return
        yield self.diagnostic(ctx.entry_span(), f"{analysis.absent_module}: `python -m` fails "
                              "with 'No module named …' before training starts")

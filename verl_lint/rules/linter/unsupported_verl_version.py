"""VL003 unsupported-verl-version."""

from __future__ import annotations

from typing import Iterable

from verl_lint.diagnostics import Diagnostic, Severity
from verl_lint.rules.base import Rule, ScriptContext
from verl_lint.rules.registry import register
from verl_lint.verl.choice import header_pin_range
from verl_lint.verl.versions import SUPPORTED_VERSIONS



@register
class UnsupportedVerlVersion(Rule):
    """The requested verl version has no bundled schema.

    ## What it does
    Reports when the verl version asked for (`--verl-version`, `verl-version` in the
    configuration, the installed `verl`, a `verl==X` pin in the script's header comments or a
    `REQUIRED_VERL.txt`) is not one verl-lint bundles, or when the configured `verl-source` is
    not a verl tree. The message lists the bundled versions and says what the script is checked
    against instead. A verl tree on disk (a vendored `verl/`, the installed package's files) is
    never reported: its own configs and code are read.

    ## Why is this bad?
    verl renames and removes configuration keys between releases. Checked against a different
    release, a correct key can be reported as unknown, or a removed key can pass.

    ## Example
    ```bash
    #!/usr/bin/env bash
    # verl==0.3.1
    set -xeuo pipefail
    python3 -m verl.trainer.main_ppo trainer.n_gpus_per_node=8
    ```

    ## Use instead
    ```bash
    #!/usr/bin/env bash
    # verl==0.8.0
    set -xeuo pipefail
    python3 -m verl.trainer.main_ppo trainer.n_gpus_per_node=8
    ```

    ## References
    - The "verl source" part of the verl-lint README
    """

    code = "VL003"
    name = "unsupported-verl-version"
    severity = Severity.WARNING
    summary = "the requested verl version has no bundled schema"
    scope = "script"

    def check(self, ctx: ScriptContext) -> Iterable[Diagnostic]:
        choice = ctx.version
        if choice is not None and choice.problem:
            yield self.diagnostic(ctx.source.span(0, 0), f"{choice.problem}; checking against "
                                  f"{choice.describe()} instead")
        if choice is None or choice.supported:
            return
        requested = choice.requested or "?"
        span = ctx.source.span(0, 0)
        if choice.source == "script header":
            where = header_pin_range(ctx.source.text)
            if where is not None:
                text = ctx.source.text
                start = len(text[:where[0]].encode())
                span = ctx.source.span(start, start + len(text[where[0]:where[1]].encode()))
        bundled = ", ".join(SUPPORTED_VERSIONS)
        yield self.diagnostic(
            span,
            f"verl {requested} (from {choice.source}) has no bundled schema; "
            f"checking against verl {choice.version} instead",
            help=f"bundled verl versions: {bundled}",
        )

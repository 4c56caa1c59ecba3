"""VL210 missing-mandatory-value."""

from __future__ import annotations

from typing import Iterable

from verl_lint.diagnostics import Diagnostic, Severity
from verl_lint.rules.base import LaunchContext, Rule
from verl_lint.rules.registry import register
from verl_lint.verl.effective import MISSING


@register
class MissingMandatoryValue(Rule):
    """A mandatory config value (`???` in verl's YAML) that the launch never sets.

    ## What it does
    Reports keys whose effective value is still OmegaConf's `???` after all overrides, such as
    `actor_rollout_ref.rollout.name` from verl 0.6.0. Keys under a section whose `enable` is
    False are skipped, and so are launches that pass `"$@"` (the caller may set it).

    ## Why is this bad?
    verl reads the value at startup and OmegaConf raises `MissingMandatoryValue`; the job
    fails after it was scheduled.

    ## Example
    ```bash
    #!/usr/bin/env bash
    set -xeuo pipefail
    python3 -m verl.trainer.main_ppo \
        trainer.n_gpus_per_node=8
    ```

    ## Use instead
    ```bash
    #!/usr/bin/env bash
    set -xeuo pipefail
    python3 -m verl.trainer.main_ppo \
        actor_rollout_ref.rollout.name=vllm \
        trainer.n_gpus_per_node=8
    ```

    ## References
    - verl `verl/trainer/config/rollout/rollout.yaml`: `name: ???`
    - OmegaConf missing values: https://omegaconf.readthedocs.io/en/latest/usage.html#mandatory-values
    """

    code = "VL210"
    name = "missing-mandatory-value"
    severity = Severity.ERROR
    summary = "an effective value is still '???' (mandatory, never set)"
    scope = "launch"

    def check(self, ctx: LaunchContext) -> Iterable[Diagnostic]:
        analysis, config = ctx.analysis, ctx.config
        if analysis is None or config is None or ctx.launch.passthrough:
            return
        for key in analysis.missing:
            if config.value(key) != MISSING or self._disabled(config, key):
                continue
            yield self.diagnostic(ctx.entry_span(),
                                  f"{key} is mandatory in verl {ctx.release.version} (its default "
                                  f"is `???`) and this launch does not set it")

    @staticmethod
    def _disabled(config, key: str) -> bool:
        parts = key.split(".")
        for i in range(len(parts) - 1, 0, -1):
            if config.value(".".join(parts[:i] + ["enable"])) is False:
                return True
        return False

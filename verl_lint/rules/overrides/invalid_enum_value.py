"""VL205 invalid-enum-value."""

from __future__ import annotations

from typing import Iterable

from verl_lint.diagnostics import Diagnostic, Severity
from verl_lint.rules.base import LaunchContext, Rule
from verl_lint.rules.overrides._common import applied, is_plain
from verl_lint.rules.registry import register


# verl replaces these values with what it detects at startup from this release on
# (enums.json: trainer.device, `auto_set_device`; RULES.md VL406: since 0.7.0)
_AUTO_SET = {"trainer.device": "0.7.0"}

# keys whose allowed values a file the script names can extend: verl's agent_loop.py loads
# `agent_loop_config_path` and registers every loop it lists
_REGISTERED_BY = {
    "actor_rollout_ref.rollout.agent.default_agent_loop":
        "actor_rollout_ref.rollout.agent.agent_loop_config_path",
}


@register
class InvalidEnumValue(Rule):
    """A value that the field does not accept in this verl release.

    ## What it does
    Checks overrides of enumerated fields (`algorithm.adv_estimator`, `rollout.name`,
    `actor.loss_agg_mode`, `policy_loss.loss_mode`, `trainer.logger`…) against the values the
    chosen release accepts. For registries users can extend from their own code
    (`policy_loss.loss_mode`, `adv_estimator`, reward managers) it is a warning.

    ## Why is this bad?
    verl raises (`Unknown advantage estimator`, `Unsupported loss mode`, an assertion on the
    rollout name) only once the workers start, minutes into the job; values also changed
    across releases (`sglang_async`, `hf`).

    ## Example
    ```bash
    #!/usr/bin/env bash
    set -xeuo pipefail
    python3 -m verl.trainer.main_ppo \
        algorithm.adv_estimator=grpo \
        actor_rollout_ref.actor.loss_agg_mode=seq-mean \
        actor_rollout_ref.rollout.name=vllm
    ```

    ## Use instead
    ```bash
    #!/usr/bin/env bash
    set -xeuo pipefail
    python3 -m verl.trainer.main_ppo \
        algorithm.adv_estimator=grpo \
        actor_rollout_ref.actor.loss_agg_mode=seq-mean-token-mean \
        actor_rollout_ref.rollout.name=vllm
    ```

    ## References
    - verl `verl/trainer/ppo/core_algos.py` (advantage estimators, policy losses, loss
      aggregation), `verl/workers/rollout/base.py` (rollout registry), `verl/utils/tracking.py`
    """

    code = "VL205"
    name = "invalid-enum-value"
    severity = Severity.ERROR
    summary = "the value is not one the field accepts in this release"
    scope = "launch"

    def check(self, ctx: LaunchContext) -> Iterable[Diagnostic]:
        enum_for, enum_keys = ctx.release.enum_for, ctx.release.enum_keys()
        for a in applied(ctx):
            if a.key not in enum_keys:
                continue  # nearly every key: one lookup instead of a call
            enum = enum_for(a.key)
            if enum is None or a.prefix == "~" or not is_plain(a.value) or a.value is None or \
                    ctx.release.at_least(_AUTO_SET.get(a.key)):
                continue
            registry = _REGISTERED_BY.get(a.key)
            if registry is not None and ctx.config is not None and \
                    ctx.config.value(registry) is not None:
                continue  # verl registers the names that file lists (known or not)
            allowed, open_registry, _ = enum
            values = a.value if isinstance(a.value, list) else [a.value]
            sep = ctx.release.enum_separator(a.key)
            if sep and isinstance(a.value, str):  # several options in one string
                values = [v.strip() for v in a.value.split(sep) if v.strip()]
            for value in values:
                if not is_plain(value) or isinstance(value, (dict, list)) or str(value) in allowed:
                    continue
                msg = (f"'{value}' is not a valid value of {a.key} in verl {ctx.release.version}; "
                       f"allowed: {', '.join(allowed)}")
                if open_registry:
                    msg += " (unless your code registers it)"
                renamed = ctx.release.value_renames(a.key).get(str(value))
                if renamed is not None:
                    new = renamed.get("new")
                    when = f" in verl {renamed['since']}" if renamed.get("since") else ""
                    msg += (f" ('{value}' was replaced by '{new.partition('=')[2]}'{when})" if new
                            else f" ('{value}' was removed{when})")
                import difflib  # only for a bad value: keeps it off the start-up path

                close = difflib.get_close_matches(str(value), allowed, n=1, cutoff=0.75)
                if close and renamed is None:
                    msg += f"; did you mean '{close[0]}'?"
                ov = a.override
                yield self.diagnostic(ov.value_span or ov.span, msg,
                                      severity=Severity.WARNING if open_registry else None)
                break

"""VL209 ineffective-override."""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Iterable

from verl_lint.diagnostics import Diagnostic, Severity
from verl_lint.rules.base import LaunchContext, Rule
from verl_lint.rules.overrides._common import applied, is_plain
from verl_lint.rules.registry import register
from verl_lint.verl.data import renames

# main_ppo stopped migrating the legacy `reward_model.*`/`custom_reward_function.*` keys in
# verl 0.9.0 (commit 45632b5fa, #6710; see renames.json); fully_async_main still migrates them.
LEGACY_REWARD_DROPPED = "0.9.0"
_STILL_MIGRATES = ("verl.experimental.fully_async_policy.",)
_ENGINES = ("vllm", "sglang", "trtllm")
_KWARGS = "actor_rollout_ref.rollout.engine_kwargs."
_FSDP = ("fsdp", "fsdp2", "fsdp_turbo")


@lru_cache(maxsize=1)
def _never_read() -> dict[str, dict]:
    """renames.json entries of keys verl removed after no release had read them (`unused`:
    the first release known not to read it), by old key, whatever the linted release."""
    return {e["old"]: e for e in renames() if e.get("unused")}


def _same(a: Any, b: Any) -> bool:
    """Equal as verl would read them (1 and 1.0 are; True and 1 are not)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return float(a) == float(b)
    return a == b


@register
class IneffectiveOverride(Rule):
    """The key composes, but this verl release never reads it.

    ## What it does
    Fires on overrides Hydra accepts but the chosen release ignores: keys verl kept in its YAML
    after the code stopped reading them (`actor.grad_clip` from 0.8.0: set
    `actor.optim.clip_grad`), the legacy `reward_model.*` keys in
    `main_ppo` from 0.9.0 (their `reward.*` replacements), and `engine_kwargs.<engine>.*` for
    an engine other than the effective `rollout.name`.

    ## Why is this bad?
    Nothing fails: the run just does not do what the script says (no gradient clipping change,
    the default reward manager), and nobody notices until the curves look wrong.

    It is a `warning` when the dead value differs from the effective value of the key verl
    reads instead (`actor.grad_clip=0.5` while `actor.optim.clip_grad` stays 1.0), and `info`
    ("redundant") when it is the same — `actor.grad_clip=1.0` with the default `clip_grad`
    1.0, as in verl's own fully-async scripts — or either value is unknown.

    Where it applies: `actor.grad_clip`/`critic.grad_clip` from 0.8.0 with an FSDP strategy
    (verl 0.8.0 removed the legacy `dp_actor`, the last reader; the engines clip with
    `optim.clip_grad`, `verl/workers/engine/fsdp/transformer_impl.py`), every entry point;
    `megatron.grad_offload` on 0.4.0–0.9.0, which store it and read it nowhere (gradient
    buffers follow `megatron.param_offload`; 0.9.1 removed the key, VL204);
    `reward_model.*` legacy keys from 0.9.0 in every entry point but `fully_async_main`
    (which still migrates them); the engine-kwargs case on every release.

    ## Example
    ```bash
    #!/usr/bin/env bash
    set -xeuo pipefail
    python3 -m verl.trainer.main_ppo \
        actor_rollout_ref.rollout.name=vllm \
        actor_rollout_ref.actor.grad_clip=0.5
    ```

    ## Use instead
    ```bash
    #!/usr/bin/env bash
    set -xeuo pipefail
    python3 -m verl.trainer.main_ppo \
        actor_rollout_ref.rollout.name=vllm \
        actor_rollout_ref.actor.optim.clip_grad=0.5
    ```

    ## References
    - verl-lint `renames.json` entries of kind `ignored` and `legacy_migrated`, with the verl
      commits they come from (#6710 for the legacy reward keys)
    """

    code = "VL209"
    name = "ineffective-override"
    severity = Severity.WARNING
    summary = "the key composes but this verl release never reads it"
    scope = "launch"

    def check(self, ctx: LaunchContext) -> Iterable[Diagnostic]:
        rel = ctx.release
        config = ctx.config
        module = (ctx.analysis.entry or "") if ctx.analysis is not None else ""
        never_read, renamed = _never_read(), rel.renamed_keys()
        for a in applied(ctx):
            if a.key not in renamed and a.key not in never_read and \
                    not a.key.startswith(_KWARGS):
                continue  # nearly every key: nothing below can hold (lookups, no call)
            entries = rel.renames_of(a.key)
            unused = never_read.get(a.key)
            why = new = None
            follows = False
            for entry in entries:
                if entry["kind"] == "ignored" and self._in_scope(ctx, a.key, entry.get("scope")):
                    new = entry.get("new")
                    why = (f"{a.key} is not read by verl {rel.version} (ignored since "
                           f"{entry['since']})")
                elif entry["kind"] == "legacy_migrated" and rel.at_least(LEGACY_REWARD_DROPPED) \
                        and not module.startswith(_STILL_MIGRATES) and is_plain(a.value) \
                        and a.value is not None:
                    new = entry["new"]
                    why = (f"{a.key} is a legacy key that {module or 'main_ppo'} no longer "
                           f"migrates since verl {LEGACY_REWARD_DROPPED}: it is ignored")
                if why:
                    break
            if why is None and unused is not None and rel.at_least(unused["unused"]) and \
                    not rel.at_least(unused["since"]) and \
                    self._in_scope(ctx, a.key, unused.get("scope")):
                # it still composes, but no release read it before removing it (then VL204)
                new, follows = unused.get("follows"), True
                why = (f"{a.key} is not read by verl {rel.version} (no release reads it; "
                       f"removed in {unused['since']})")
            if why is None and a.key.startswith(_KWARGS) and config is not None:
                engine = a.key[len(_KWARGS):].split(".", 1)[0]
                name = config.value("actor_rollout_ref.rollout.name")
                if engine in _ENGINES and isinstance(name, str) and name in _ENGINES \
                        and name != engine:
                    why = (f"{a.key} configures {engine}, but the rollout engine is {name} "
                           f"(actor_rollout_ref.rollout.name, {config.get('actor_rollout_ref.rollout.name').describe()})")
            if why:
                severity, also = self._against_reader(config, a.value, new, follows)
                yield self.diagnostic(a.override.key_span, why + also, severity=severity)

    @staticmethod
    def _against_reader(config, dead: Any, new: str | None,
                        follows: bool = False) -> tuple[Severity, str]:
        """Warning when the dead value differs from what the run uses — the effective value of
        the key verl reads instead (`follows`: the key whose value decides it, as
        `param_offload` does for the never-read `grad_offload`) —, info ("redundant") when it
        is the same or either is unknown (the run may well be what the script says)."""
        if new is None:
            return Severity.WARNING, ""
        read = config.get(new) if config is not None else None
        if read is None or not is_plain(dead) or not is_plain(read.value):
            return Severity.INFO, f"; set {new} instead"
        if _same(dead, read.value):
            return Severity.INFO, (f"; redundant: {new}, which verl reads, is {read.value!r} "
                                   f"({read.describe()}) too")
        if follows:
            return Severity.WARNING, (f"; what it names follows {new}, which is {read.value!r} "
                                      f"({read.describe()})")
        return Severity.WARNING, (f"; the run uses {new}={read.value!r} ({read.describe()}): "
                                  f"set {new} instead")

    @staticmethod
    def _in_scope(ctx: LaunchContext, key: str, scope: str | None) -> bool:
        if scope is None:
            return True
        config = ctx.config
        if config is None:
            return False
        role = "critic" if key.startswith("critic.") else "actor_rollout_ref.actor"
        strategy = config.value(f"{role}.strategy")
        if not isinstance(strategy, str):
            return False
        return strategy in _FSDP if scope == "fsdp" else strategy == scope

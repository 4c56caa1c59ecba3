"""VL412 mode-requirement: the settings verl's own checks demand, mined per release."""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any, Callable, Iterable

from verl_lint.diagnostics import Diagnostic, Severity
from verl_lint.rules.base import LaunchContext, Rule
from verl_lint.rules.knowledge.conditions import (
    ROLLOUT_NAME, UNKNOWN, compare, normalize, show,
)
from verl_lint.rules.knowledge.fixes import describe_origin, value_span
from verl_lint.rules.origin import script_span
from verl_lint.rules.registry import register
from verl_lint.verl.data import DATA_DIR
from verl_lint.verl.effective import EffectiveConfig


@lru_cache(maxsize=1)
def _sites() -> dict[str, list[dict[str, Any]]]:
    """Per release, the mined sites a rule can use: a requirement under known, non-empty
    conditions (`mine/constraints.py`). A site reached under no config condition at all (a
    class only some modes construct) says nothing about when it runs."""
    data = json.loads((DATA_DIR / "mined_constraints.json").read_bytes())
    return {version: [s for s in mined["sites"] if s["when"]]
            for version, mined in data.items()}


def resolve(config: EffectiveConfig, key: str, near: str | None = None) -> str | None:
    """The effective key the code's spelling names: itself, else the one key ending in
    `.key` (the rollout's `self.config.multi_turn.enable` is
    `actor_rollout_ref.rollout.multi_turn.enable`); with several, the one under `near`."""
    if key in config:
        return key
    found = config.keys_ending("." + key)
    if len(found) > 1 and near is not None:
        found = [k for k in found if k.startswith(near + ".")]
    return found[0] if len(found) == 1 else None


def resolve_before(config: EffectiveConfig, key: str, near: str | None = None) -> str | None:
    """`resolve`, read off the keys of the composed config the launch starts from where the
    launch's config surely still has them (`plainly_has`): two of them (under `near`, when
    given) and `resolve` gives None; one and it gives that key or None (any other key the
    launch lists beside it makes two). Else `resolve` itself. So a site that does not hold
    with these answers does not hold with `resolve`'s — a None ends a site before it holds —
    and the launch's own listing is worked out only for a site that would fire."""
    if key in config:
        return key
    found = config.composed_keys_ending("." + key)
    if found is None:
        return resolve(config, key, near)
    if near is not None:
        found = [k for k in found if k.startswith(near + ".")]
    kept = [k for k in found if config.plainly_has(k)]
    if len(kept) >= 2:
        return None
    if kept:
        return kept[0]
    return resolve(config, key, near)


def _holds(op: str, actual: Any, value: Any) -> bool | None:
    if actual is UNKNOWN:
        return None
    if op in ("truthy", "falsy"):
        return bool(actual) == (op == "truthy")
    return compare(op, actual, value)


@register
class ModeRequirement(Rule):
    """A mode of verl run without a setting that release's code checks for it.

    ## What it does
    verl's code states many requirements in the message of the `assert` or `raise` that
    enforces them (`need data.return_raw_chat=True`). A miner
    (`verl_lint/verl/mine/constraints.py`) reads every such site of each release with `ast`,
    with the conditions under which it runs — the `if` tests around it and around the calls
    that reach it (`if self.config.multi_turn.enable:`), and the rollout engine whose package
    holds it. This rule reports a launch for which all those conditions hold in the effective
    config while the named setting has another value. A site reached under no config condition,
    or under one the miner cannot read, is not used; an unknown value never fires; a check of
    the key's own value (`mode=async` required when `mode` is `sync`) is VL205's.

    Found this way, for example: sglang multi-turn rollout needs `data.return_raw_chat=True`
    on verl 0.4.0–0.6.x (`verl/workers/rollout/sglang_rollout/sglang_rollout.py`, 0.5.0 line
    1239, in `_preprocess_prompt_to_async_rollout_requests`, reached from `generate_sequences`
    under `if self.config.multi_turn.enable:`); VeOmni router replay needs
    `use_remove_padding=True` on 0.9.1 (`verl/workers/config/actor.py` line 369).

    ## Why is this bad?
    The check fails only when the code path runs: after the cluster is allocated, the model is
    loaded and the first batch reaches the rollout — an `AssertionError` or `ValueError` minutes
    into the job, for a setting the release's code names.

    ## Example
    ```bash
    #!/usr/bin/env bash
    # verl==0.5.0
    set -xeuo pipefail
    python3 -m verl.trainer.main_ppo \\
        actor_rollout_ref.model.path=Qwen/Qwen2.5-3B-Instruct \\
        actor_rollout_ref.rollout.name=sglang \\
        actor_rollout_ref.rollout.multi_turn.enable=True
    ```

    ## Use instead
    ```bash
    #!/usr/bin/env bash
    # verl==0.5.0
    set -xeuo pipefail
    python3 -m verl.trainer.main_ppo \\
        data.return_raw_chat=True \\
        actor_rollout_ref.model.path=Qwen/Qwen2.5-3B-Instruct \\
        actor_rollout_ref.rollout.name=sglang \\
        actor_rollout_ref.rollout.multi_turn.enable=True
    ```

    ## Fix safety
    No fix: the requirement may be met either by the setting or by leaving the mode.

    ## References
    - verl `verl/workers/rollout/sglang_rollout/sglang_rollout.py` (0.4.0:1047, 0.5.0:1239, 0.6.0:1420)
    - verl 0.9.1 `verl/workers/config/actor.py`:369 (VeOmni router replay)
    - `verl_lint/verl/data/mined_constraints.json`: every mined site per release, with its evidence
    """

    code = "VL412"
    name = "mode-requirement"
    severity = Severity.ERROR
    summary = "a rollout/trainer mode without a setting that release's code asserts for it"
    scope = "launch"

    def check(self, ctx: LaunchContext) -> Iterable[Diagnostic]:
        config = ctx.config
        if config is None:
            return
        reported: set[str] = set()
        for site in _sites().get(ctx.release.version, ()):
            # the composed config's keys first: they decide that nearly every site does not
            # hold without the launch's own listing (worked out for the first launch only)
            finding = self._site(ctx, config, site, resolve_before)
            if finding is not None:
                finding = self._site(ctx, config, site, resolve)
            if finding is not None and finding.message not in reported:
                reported.add(finding.message)
                yield finding

    def _site(self, ctx: LaunchContext, config: EffectiveConfig, site: dict[str, Any],
              resolve_key: Callable[..., str | None]) -> Diagnostic | None:
        engine = site["engine"]
        near = "actor_rollout_ref.rollout" if engine else None
        if engine is not None and normalize(config.value(ROLLOUT_NAME)) != engine:
            return None
        req = site["require"]
        key = resolve_key(config, req["key"], near)
        if key is None:
            return None
        parent = key.rsplit(".", 1)[0]
        conditions = []
        for cond in site["when"]:
            spelled = cond["key"]
            ckey = (parent + spelled[4:] if spelled.startswith("self.")
                    else resolve_key(config, spelled, near))
            resolved = config.get(ckey) if ckey else None
            if resolved is None or not _holds(cond["op"], normalize(resolved.value),
                                              cond.get("value")):
                return None
            conditions.append((ckey, resolved))
        if all(ckey == key for ckey, _ in conditions):
            return None  # `mode=async` required when `mode == "sync"`: a value check (VL205)
        resolved = config.get(key)
        actual = normalize(resolved.value) if resolved is not None else UNKNOWN
        if actual is UNKNOWN or compare("==", actual, req["value"]) is not False:
            return None
        when = " and ".join(f"`{k}` is {show(normalize(r.value))}" for k, r in conditions)
        if engine:
            when += f" with the {engine} rollout"
        message = (f"`{key}` is {show(actual)} ({describe_origin(ctx, resolved)}), but on verl "
                   f"{ctx.release.version} the code requires {key}={show(req['value'])} when "
                   f"{when} ({site['at']}: \"{site['message'][:120]}\")")
        return self.diagnostic(self._span(ctx, resolved, conditions), message)

    @staticmethod
    def _span(ctx: LaunchContext, resolved, conditions):
        for r in (resolved, *(r for _, r in conditions)):
            word = script_span(r)
            if word is not None:
                return value_span(ctx, word) or word
        return ctx.entry_span()

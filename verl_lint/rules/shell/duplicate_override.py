"""VL105 duplicate-override."""

from __future__ import annotations

from typing import Iterable

from verl_lint.diagnostics import Diagnostic, Label, Severity
from verl_lint.evaluate.model import Override
from verl_lint.rules.base import Rule, ScenarioContext
from verl_lint.rules.registry import register
from verl_lint.rules.shell._shell import clean_until
from verl_lint.shell.model import Assignment, Command, ScriptModel
from verl_lint.source import Span


def _shown(ctx: ScenarioContext, ov: Override) -> str:
    """The word as Hydra gets it, or as written when only known at run time (not shortened:
    the message must not depend on how the script quotes it)."""
    if not isinstance(ov.text, str):
        return ctx.source.slice(ov.span)
    return ov.text if len(ov.text) <= 70 else ov.text[:69] + "…"


def _where(ov: Override) -> str:
    return f"line {ov.span.line}" + (f", array `{ov.array}`" if ov.array else "")


def _branches(model: ScriptModel, span: Span) -> frozenset:
    """The case/if arms (and `&&`/`||` right-hand sides) that must be taken for the statement
    holding `span` to run: its innermost assignment or command's path."""
    holder = None
    for s in model.statements:  # pre-order: a later match is nested deeper
        if isinstance(s, (Assignment, Command)) and s.span.start <= span.start \
                and span.end <= s.span.end:
            holder = s
    if holder is None:
        return frozenset()
    return frozenset(holder.path) | ({("conditional", holder.id)} if holder.conditional else set())


@register
class DuplicateOverride(Rule):
    """One launch sets the same Hydra key twice; the earlier value is dead.

    ## What it does
    Reports an override key that appears twice in the arguments one launch receives, after
    expanding arrays and variables (`actor_rollout_ref.rollout.n=8` in the ROLLOUT array and
    again inline). `key`, `+key` and `++key` name the same key; `~key` deletes it and is not
    counted. It is a warning when the values differ and info when they are the same. Both
    places are shown. Only settings that both run whenever the later one runs count: a device
    branch that re-sets a key the common arrays set (`npu) ACTOR+=(…use_remove_padding=False)`,
    or a launch inside `elif [ "$device_name" == npu ]` that adds `global_profiler.tool=npu` to
    the shared array) is how verl's own scripts specialise a run, and the branch wins on
    purpose. The reverse — a branch value that a later unconditional setting replaces, or that
    the same device's arm of a later `case` sets again — is a dead value and is reported. A key set in the gpu branch and again in the npu branch is not
    a duplicate (each scenario gets one), and what the caller passes through `"$@"` is unknown,
    so it is never counted. It applies to every entry point and release: it reads the shell
    only (Hydra applies overrides in order, last wins).

    ## Why is this bad?
    Hydra applies the overrides in order, so the last one wins and the first is dead text. The
    person tuning the first value (often in an array at the top of the script) sees no effect,
    and reviewers read the wrong value. With the same value it is harmless but one of the two
    will drift in the next edit.

    ## Example
    ```bash
    #!/usr/bin/env bash
    set -xeuo pipefail
    ROLLOUT=(
        actor_rollout_ref.rollout.name=vllm
        actor_rollout_ref.rollout.n=8
    )
    python3 -m verl.trainer.main_ppo \\
        "${ROLLOUT[@]}" \\
        actor_rollout_ref.rollout.n=4
    ```

    ## Use instead
    ```bash
    #!/usr/bin/env bash
    set -xeuo pipefail
    ROLLOUT=(
        actor_rollout_ref.rollout.name=vllm
        actor_rollout_ref.rollout.n=8
    )
    python3 -m verl.trainer.main_ppo \\
        "${ROLLOUT[@]}"
    ```

    ## References
    - [Hydra: override grammar](https://hydra.cc/docs/advanced/override_grammar/basic/)
    """

    code = "VL105"
    name = "duplicate-override"
    severity = Severity.WARNING
    summary = "one launch sets the same key twice; the earlier value is dead"
    scope = "scenario"

    def check(self, ctx: ScenarioContext) -> Iterable[Diagnostic]:
        cutoff = clean_until(ctx.model)
        for launch in ctx.run.launches:
            if launch.span.end > cutoff:
                continue
            seen: dict[str, Override] = {}
            branches: dict[Span, frozenset] = {}
            for ov in launch.overrides:
                if ov.prefix == "~":
                    seen.pop(ov.key, None)
                    continue
                first = seen.get(ov.key)
                seen[ov.key] = ov
                if first is None or first.span == ov.span:
                    continue  # the same word twice: one array expanded twice, not two settings
                for o in (first, ov):
                    if o.span not in branches:
                        branches[o.span] = _branches(ctx.model, o.span)
                later, earlier = branches[ov.span], branches[first.span]
                if later - earlier and earlier <= later:
                    continue  # a branch specialises the more common setting: it wins on purpose
                same = isinstance(first.value, str) and first.value == ov.value
                if same:
                    message = (f"`{ov.key}` is set twice to the same value in this launch "
                               f"(`{_shown(ctx, ov)}`, first at {_where(first)})")
                else:
                    message = (f"`{ov.key}` is set twice in this launch: `{_shown(ctx, ov)}` "
                               f"overrides `{_shown(ctx, first)}` ({_where(first)}), so the "
                               "earlier value is dead")
                yield self.diagnostic(
                    ov.key_span, message,
                    severity=Severity.INFO if same else Severity.WARNING,
                    labels=[Label(span=first.key_span, message="first set here")],
                    help="keep one of the two")

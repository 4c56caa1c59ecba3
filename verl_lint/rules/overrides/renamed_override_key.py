"""VL204 renamed-override-key."""

from __future__ import annotations

from typing import Iterable

from verl_lint.diagnostics import Diagnostic, Edit, Fix, Severity
from verl_lint.rules.base import LaunchContext, Rule
from verl_lint.rules.overrides._common import checked_fix
from verl_lint.rules.overrides._common import problems as problems_of
from verl_lint.rules.registry import register
from verl_lint.source import Span
from verl_lint.verl.analysis import OverrideProblem


def _delete_word(ctx: LaunchContext, span: Span, title: str) -> Fix | None:
    """Delete one literal override word (`checked_fix` widens it to its array element or
    `\\`-continued line, see `verl_lint.rules.overrides._common.widen_deletion`)."""
    word = ctx.source.data[span.start:span.end]
    if b"$(" in word or b"`" in word or (b"$" in word and sum(
            o.span == span for o in ctx.launch.overrides) != 1):
        return None  # a command runs there, or it expands to more than this one override
    if ctx.source.line_of(max(span.end - 1, span.start)) != ctx.source.line_of(span.start):
        return None
    return checked_fix(ctx, Fix(title=title, edits=(Edit(start=span.start, end=span.end,
                                                         replacement=""),)), words=True)


def _unused(ctx: LaunchContext, key: str) -> dict | None:
    """The renames entry of a key verl removed after it had long been read nowhere."""
    return next((e for e in ctx.release.renames_of(key) if e.get("unused")), None)


def _fix(ctx: LaunchContext, p: OverrideProblem) -> Fix | None:
    ov = p.override
    if ov is None:
        return checked_fix(ctx, p.fix)
    if _unused(ctx, p.key) is not None:
        # it never had an effect on any release: deleting it changes no run
        return _delete_word(ctx, ov.span, f"Delete '{p.key}' (verl never read it)")
    # a new key the launch sets already: the analysis' fix deletes this one (same literal
    # value) or there is none
    return checked_fix(ctx, p.fix)


@register
class RenamedOverrideKey(Rule):
    """An override key that verl renamed or removed in an earlier release.

    ## What it does
    Fires when the key is not in the chosen release's config and verl's history has it renamed
    or removed; the message gives the release it happened in and the key to use now. Three
    cases are told apart: renamed (the fix renames the key, safe when the new key exists in
    this release's config), removed (no fix), and removed after verl had long stopped reading
    it (`megatron.grad_offload`, removed in 0.9.1: 0.4.0–0.9.0 stored it and read it nowhere,
    gradient buffers follow `param_offload`) — there the fix deletes the override, which changes
    no run on any release. When the script already sets the new key, the fix deletes the old
    override if both hold the same value, and there is none otherwise.

    It applies to every entry point whose config composes, on the releases after the one in
    `renames.json` (`since`); engine-scoped entries (`scope: megatron`/`fsdp`) only where the
    role's `strategy` is that engine.

    ## Why is this bad?
    Scripts copied from older examples keep the old names; Hydra refuses them
    (`Could not override '…'`) and the message does not say what the new name is.

    ## Example
    ```bash
    #!/usr/bin/env bash
    set -xeuo pipefail
    python3 -m verl.trainer.main_ppo \
        actor_rollout_ref.rollout.name=vllm \
        actor_rollout_ref.actor.checkpoint.contents='["model","optimizer"]'
    ```

    ## Use instead
    ```bash
    #!/usr/bin/env bash
    set -xeuo pipefail
    python3 -m verl.trainer.main_ppo \
        actor_rollout_ref.rollout.name=vllm \
        actor_rollout_ref.actor.checkpoint.save_contents='["model","optimizer"]'
    ```

    ## Fix safety
    Safe when the new key exists in this release's config and the rename maps no values: the
    launch then sets the setting the old key named. Unsafe otherwise (a removed key, a value
    that changed meaning). A new key the launch already sets gets no rename; when both
    values are the same literal, the fix deletes the old override.

    ## References
    - verl #1350 (checkpoint `contents` → `save_contents`/`load_contents`) and the other
      entries of verl-lint's `renames.json`, each with the verl commit it comes from
    """

    code = "VL204"
    name = "renamed-override-key"
    severity = Severity.ERROR
    summary = "the key was renamed or removed in a known verl release"
    scope = "launch"
    fixable = True

    def check(self, ctx: LaunchContext) -> Iterable[Diagnostic]:
        for p in problems_of(ctx, self.code):
            help_ = f"Hydra: {p.hydra_message.splitlines()[0]}" \
                if p.hydra_message and p.rejected_by == "hydra" else None
            yield self.diagnostic(p.span, p.message, help=help_, fix=_fix(ctx, p))

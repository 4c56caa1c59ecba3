"""VL204 renamed-override-key."""

from __future__ import annotations

from typing import Iterable

from verl_lint.diagnostics import Diagnostic, Edit, Fix, Severity
from verl_lint.evaluate.model import Override
from verl_lint.rules.base import LaunchContext, Rule
from verl_lint.rules.overrides._common import checked_fix
from verl_lint.rules.overrides._common import problems as problems_of
from verl_lint.rules.registry import register
from verl_lint.source import Span
from verl_lint.verl.analysis import OverrideProblem


def _delete_word(ctx: LaunchContext, span: Span, title: str) -> Fix | None:
    """Delete one literal override word: its whole line when it stands alone there (an array
    element, a `\\`-continued line), else the word and the blanks after it. The last line of
    a `\\` chain takes the previous line's `\\` with it, so the command still ends there."""
    source = ctx.source
    data, word = source.data, source.data[span.start:span.end]
    if b"$(" in word or b"`" in word or (b"$" in word and sum(
            o.span == span for o in ctx.launch.overrides) != 1):
        return None  # a command runs there, or it expands to more than this one override
    line0 = source.line_of(span.start)
    if source.line_of(max(span.end - 1, span.start)) != line0:
        return None
    start = source.line_starts[line0]
    end = start + len(source.line_bytes(line0).rstrip(b"\r\n"))
    before, after = data[start:span.start], data[span.end:end].strip()
    if before.strip() or after not in (b"", b"\\"):
        stop = span.end
        while stop < end and data[stop:stop + 1] in b" \t":
            stop += 1
        edit = Edit(start=span.start, end=stop, replacement="")
    elif after == b"" and line0 > 0 and \
            source.line_bytes(line0 - 1).rstrip(b"\r\n").rstrip(b" \t").endswith(b"\\"):
        prev = source.line_starts[line0 - 1]
        text = source.line_bytes(line0 - 1).rstrip(b"\r\n").rstrip(b" \t")[:-1].rstrip(b" \t")
        edit = Edit(start=prev + len(text), end=span.end, replacement="")
    else:
        nxt = source.line_starts[line0 + 1] if line0 + 1 < len(source.line_starts) else len(data)
        edit = Edit(start=start, end=nxt, replacement="")
    return Fix(title=title, edits=(edit,))


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
    also = _also_set(ctx, ov, p.new_key)
    if also is None:
        return checked_fix(ctx, p.fix)
    if isinstance(ov.value, str) and ov.value == also.value:  # the new key holds it already
        return _delete_word(ctx, ov.span, f"Delete '{p.key}' ('{p.new_key}' is set "
                                                 f"to the same value at line {also.span.line})")
    return None  # two different values: which one the author meant is theirs to say


def _also_set(ctx: LaunchContext, ov: Override, new: str | None) -> Override | None:
    return next((o for o in ctx.launch.overrides if new and o.key == new and o is not ov), None)


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

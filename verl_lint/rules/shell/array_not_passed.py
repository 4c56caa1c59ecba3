"""VL103 array-not-passed."""

from __future__ import annotations

from itertools import repeat
from typing import Collection, Iterable

from verl_lint.diagnostics import Diagnostic, Label, Severity
from verl_lint.rules.base import Rule, ScriptContext
from verl_lint.rules.registry import register
from verl_lint.rules.shell._shell import looks_like_override
from verl_lint.shell.model import Assignment, Loop, ScriptModel, words_of
from verl_lint.source import Span


def _references(model: ScriptModel,
                names: Collection[str]) -> dict[str, list[Span | None]] | None:
    """Each of `names` → spans of every expansion of it (`"${ACTOR[@]}"`, `${#ACTOR[@]}`,
    `$ACTOR`); None for one inside a function body (the function may run after any line). None
    instead of the map when an expansion is indirect (`${!name}`, `${!prefix*}`): arrays may be
    expanded under another name."""
    out: dict[str, list[Span | None]] = {}
    if model.functions:
        words = ((w, s.function is not None) for s in model.statements for w in words_of(s))
    else:  # most scripts: every word is at top level, and the model lists them already
        words = zip(model.words, repeat(False))
    for word, in_function in words:
        text = word.text
        # a variable is a `$…` piece holding its name, an indirect one starts with `${!`: most
        # words expand none of the arrays asked about, and need no walk of their pieces (a
        # plain loop over the names: `any()` over a generator cost twice as much)
        if "$" not in text:
            continue
        if "${!" not in text:
            for name in names:
                if name in text:
                    break
            else:
                continue
        for piece in word.variables():
            if piece.operator in ("indirect", "names"):
                return None
            if piece.name in names:
                out.setdefault(piece.name, []).append(None if in_function else piece.span)
    return out


def _indirect(model: ScriptModel) -> bool:
    """`eval`, `source` or `declare -n`: arrays may be expanded under another name (`${!name}`
    is seen by `_references`)."""
    for c in model.commands:
        if c.name in ("eval", "source", "."):
            return True
    return any("-n" in a.flags for a in model.assignments)


@register
class ArrayNotPassed(Rule):
    """An array of Hydra overrides is built but never expanded into a command.

    ## What it does
    Reports an array assignment (`ACTOR=( … )` or `ACTOR+=( … )`) whose elements look like Hydra
    overrides (`actor_rollout_ref.actor.optim.lr=1e-6`, `+a.b=1`) when nothing after it expands
    the array (`"${ACTOR[@]}"`): the array is never passed to the launch, or it is appended to
    after its last use. It stays quiet when the script uses `eval`, `source`, indirect expansion
    (`${!name}`) or name references, since the array may be expanded under another name.

    ## Why is this bad?
    Every override in that array is silently dropped: the job starts with verl's defaults for
    the whole role (a REF array that never reaches the launch leaves the reference model on the
    actor's settings, a ROLLOUT array leaves vLLM at its default memory share). Nothing fails,
    so the run looks fine until its metrics do not.

    ## Example
    ```bash
    #!/usr/bin/env bash
    set -xeuo pipefail
    ACTOR=(
        actor_rollout_ref.actor.optim.lr=1e-6
        actor_rollout_ref.actor.ppo_mini_batch_size=64
    )
    ROLLOUT=(
        actor_rollout_ref.rollout.name=vllm
        actor_rollout_ref.rollout.gpu_memory_utilization=0.6
    )
    python3 -m verl.trainer.main_ppo "${ACTOR[@]}" trainer.n_gpus_per_node=8
    ```

    ## Use instead
    ```bash
    #!/usr/bin/env bash
    set -xeuo pipefail
    ACTOR=(
        actor_rollout_ref.actor.optim.lr=1e-6
        actor_rollout_ref.actor.ppo_mini_batch_size=64
    )
    ROLLOUT=(
        actor_rollout_ref.rollout.name=vllm
        actor_rollout_ref.rollout.gpu_memory_utilization=0.6
    )
    python3 -m verl.trainer.main_ppo "${ACTOR[@]}" "${ROLLOUT[@]}" trainer.n_gpus_per_node=8
    ```

    ## References
    - [Bash reference manual: Arrays](https://www.gnu.org/software/bash/manual/bash.html#Arrays)
    - [verl examples: role arrays passed as `"${ARR[@]}"`](https://github.com/volcengine/verl/tree/main/examples)
    """

    code = "VL103"
    name = "array-not-passed"
    severity = Severity.WARNING
    summary = "an array of Hydra overrides is never expanded into a launch"
    scope = "script"

    def check(self, ctx: ScriptContext) -> Iterable[Diagnostic]:
        model = ctx.model
        candidates = [a for a in model.arrays if self._holds_overrides(a)]
        if not candidates or model.errors or _indirect(model):
            return
        refs = _references(model, {a.name for a in candidates})
        if refs is None:
            return
        loops = [s.span for s in model.statements if isinstance(s, Loop)]
        for a in candidates:
            uses = refs.get(a.name, [])
            if not uses:
                yield self.diagnostic(
                    a.name_span,
                    f"the array `{a.name}` holds Hydra overrides but is never expanded: none of "
                    "them reaches a launch",
                    help=f'pass it to the launch as "${{{a.name}[@]}}"')
                continue
            if None in uses or any(sp.start <= a.span.start < sp.end for sp in loops):
                continue
            last = max(uses, key=lambda sp: sp.start)
            if last.start < a.span.start:
                verb = "appended to" if a.append else "assigned"
                yield self.diagnostic(
                    a.name_span,
                    f"`{a.name}` is {verb} after its last expansion (line {last.line}): these "
                    "overrides never reach a launch",
                    labels=[Label(span=last, message=f"last expansion of `{a.name}`")],
                    help=f"move the {'append' if a.append else 'assignment'} above line "
                         f"{last.line}")

    @staticmethod
    def _holds_overrides(a: Assignment) -> bool:
        if a.array is None or a.function is not None:
            return False
        for w in a.array.elements:  # a loop: each array asks, and `literal` is a property
            literal = w.literal
            if looks_like_override(literal if literal is not None else w.text):
                return True
        return False

"""Helpers the VL1xx rules share: device branches, every word of a script, override-looking text."""

from __future__ import annotations

import re

from verl_lint.evaluate.scenarios import is_device_test
from verl_lint.shell.model import (
    Assignment, Case, Command, If, Pipeline, ScriptModel, Word,
)
from verl_lint.source import SourceText

# a Hydra override as users write it: `a.b.c=…`, `+a.b=…`, `++a.b=…`, `~a.b`
OVERRIDE_WORD = re.compile(r"(?:\+\+|\+|~)?[A-Za-z_][\w-]*(?:@[\w.]+)?(?:\.[\w@-]+)+(?:=|$)")
_PREFIXED = re.compile(r"(?:\+\+|\+|~)[A-Za-z_][\w.@-]*(?:=|$)")
# Hydra resolvers whose `${name:arg}` bash reads as a substring of an unset variable (an empty
# string, or `unbound variable` under `set -u`): VL107 reports them, VL101 leaves them to it
HYDRA_RESOLVERS = ("now", "hydra")


def looks_like_override(text: str) -> bool:
    """`actor_rollout_ref.actor.optim.lr=1e-6`, `+x.y=1`, `~x.y`; not `a=b` or `./run.sh`."""
    return bool(OVERRIDE_WORD.match(text) or _PREFIXED.match(text))


def is_device_case(case: Case) -> bool:
    """`case "$DEVICE" in gpu) … npu) …` (see `evaluate.scenarios.is_device_test`)."""
    return is_device_test(case.subject_variable,
                          [p for item in case.items for p in item.literal_patterns])


def _is_device_if(block: If) -> bool:
    """`if [ "$DEVICE" = npu ]`: a branch tests a device variable or compares with a device name."""
    return any(b.condition is not None and is_device_test(b.condition.variable,
                                                           [b.condition.operand or ""])
               for b in block.branches)


def device_blocks(model: ScriptModel) -> tuple[Case | If, ...]:
    """The device `case`s and `if`s, in source order, that end before the first parse error
    (see `clean_until`): a filter of the model's own index of blocks (a few µs)."""
    cutoff = clean_until(model)
    return tuple(b for b in model.blocks.values() if b.span.end <= cutoff and (
        (isinstance(b, Case) and is_device_case(b)) or (isinstance(b, If) and _is_device_if(b))))


def device_cases(model: ScriptModel) -> list[Case]:
    """The device `case`s of `device_blocks`."""
    return [b for b in device_blocks(model) if isinstance(b, Case)]


def fixed_before(model: ScriptModel, block: Case | If) -> bool:
    """The script gives a variable the block tests a literal value before it, at top level and
    unconditionally (`DEVICE=npu`): only one way through the block can run.
    `DEVICE=${DEVICE:-gpu}` does not fix it."""
    if isinstance(block, Case):
        names = {block.subject_variable}
    else:
        names = {b.condition.variable for b in block.branches if b.condition is not None}
    names.discard(None)
    for s in model.body:
        if s.span.start >= block.span.start:
            break
        if isinstance(s, Assignment) and s.name in names and not s.conditional \
                and s.value is not None and s.value.literal is not None:
            return True
    return False


def branch_label(case: Case, index: int) -> str:
    return "the `" + "|".join(p.text for p in case.items[index].patterns) + "` branch"


def exits(body) -> bool:
    """The branch ends the script itself (`*) echo unsupported; exit 1 ;;`)."""
    for s in body:
        if isinstance(s, Pipeline) and len(s.parts) == 1:
            s = s.parts[0]
        if isinstance(s, Command) and s.name == "exit" and not s.conditional:
            return True
    return False


def all_words(model: ScriptModel) -> tuple[Word, ...]:
    return model.words


def line_start(source: SourceText, offset: int) -> int:
    return source.line_starts[source.line_of(offset)]


def clean_until(model: ScriptModel) -> int:
    """Offset of the first parse error (the document's length when there is none). After it,
    quoting and structure may be read differently from bash, so findings there would be
    guesses: VL001 reports the error, these rules stay before it."""
    return model.errors[0].span.start if model.errors else max(model.length, 1 << 62)

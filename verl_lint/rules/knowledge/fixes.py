"""Turning a rule's `fix: {set: {key: value}}` into byte edits of the script.

Placement, in order of preference:
1. the launch already has an override of the key: replace its value;
2. a new element after the last override of the same role (longest shared key prefix) of its
   array — when the rule is device-specific and that array element is shared by every device,
   a `ARR+=(…)` line at the end of the scenario's own `case` branch instead, or a new
   `if [ "${DEVICE}" = "npu" ]; then ARR+=(…); fi` after the array when no branch follows it;
3. before that override in an inline `\\` chain.
A fix that changes what another scenario runs, or drops a variable, is marked unsafe.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from verl_lint.diagnostics import Edit, Fix
from verl_lint.evaluate.model import Override, Unknown
from verl_lint.rules.origin import script_span
from verl_lint.source import Span

if TYPE_CHECKING:
    from verl_lint.rules.base import LaunchContext
    from verl_lint.rules.knowledge.plain import FixSpec


def render(value: Any) -> str:
    if isinstance(value, bool):
        return "True" if value else "False"
    if value is None:
        return "null"
    return str(value)


def _bare(key: str) -> str:
    return key.split("@", 1)[0]


def _shared(ov: Override, parts: list[str]) -> int:
    """How many leading dotted segments the override's key shares with `parts`."""
    n = 0
    for x, y in zip(_bare(ov.key).split("."), parts):
        if x != y:
            break
        n += 1
    return n


def build_fix(ctx: "LaunchContext", spec: "FixSpec", *, device_specific: bool) -> Fix | None:
    edits: dict[int, Edit] = {}
    unsafe = spec.applicability == "unsafe"
    for key, value in spec.set.items():
        text = render(value)
        existing = [o for o in ctx.launch.overrides if _bare(o.key) == key and o.prefix != "~"]
        if existing:
            ov = existing[-1]
            if ov.value_span is not None and not isinstance(ov.value, Unknown):
                edit = Edit(start=ov.value_span.start, end=ov.value_span.end, replacement=text)
            else:  # the value comes from a variable: replacing the word drops it
                edit = Edit(start=ov.span.start, end=ov.span.end,
                            replacement=f"{ov.prefix}{key}={text}")
                unsafe = True
            unsafe |= device_specific and not _in_scenario_branch(ctx, ov.span)
        else:
            config = ctx.config
            prefix = spec.prefix if spec.prefix is not None else (
                "" if config is not None and key in config else "+")
            placed = _insertion(ctx, key, f"{prefix}{key}={text}", spec.near, device_specific)
            if placed is None:
                return None
            edit, safe = placed
            unsafe |= not safe
        if edit.start in edits and edit.start == edit.end:  # two insertions at one place
            prev = edits[edit.start]
            edit = Edit(start=edit.start, end=edit.end,
                        replacement=prev.replacement + edit.replacement)
        edits[edit.start] = edit
    title = spec.title or "Set " + ", ".join(f"{k}={render(v)}" for k, v in spec.set.items())
    return Fix(title=title, edits=tuple(sorted(edits.values(), key=lambda e: e.start)),
               applicability="unsafe" if unsafe else "safe")


def _insertion(ctx: "LaunchContext", key: str, word: str, near: str | None,
               device_specific: bool) -> tuple[Edit, bool] | None:
    overrides = [o for o in ctx.launch.overrides if isinstance(o.text, str)]
    if near:
        overrides = [o for o in overrides if _bare(o.key).startswith(near)] or overrides
    if not overrides:
        return None
    parts = key.split(".")
    scored = [(o, _shared(o, parts)) for o in overrides]
    if not device_specific:  # a finding every scenario shares: fix it outside device branches
        shared = [(o, n) for o, n in scored if n >= 2 and not _in_any_branch(ctx, o.span)]
        if shared:
            scored = [(o, n) for o, n in scored if not _in_any_branch(ctx, o.span)]
    best = max(n for _, n in scored)
    siblings = [o for o, n in scored if n == best]
    if device_specific:
        own = [o for o in siblings if _in_scenario_branch(ctx, o.span)]
        if own:
            return _after_element(ctx, own[-1], word), True
        arrays = [o.array for o in siblings if o.array]
        if arrays:
            placed = _append_in_branch(ctx, arrays[-1], word)
            if placed is not None:
                return placed, True
        return _next_to(ctx, siblings[-1], word), False
    return _next_to(ctx, siblings[-1], word), True


def value_span(ctx: "LaunchContext", word: Span) -> Span:
    """The value token of the launch's override whose word is `word` (else `word`)."""
    for ov in ctx.launch.overrides:
        if ov.span.start == word.start or ov.key_span.start == word.start:
            return ov.value_span or ov.span
    return word


def describe_origin(ctx: "LaunchContext", resolved) -> str:
    """`set at line 44`, plus the variable that fed it: `set at line 44 from $CLIP, line 21`."""
    text = resolved.describe()
    word = script_span(resolved)
    if word is None:
        return text
    for ov in ctx.launch.overrides:
        if ov.span.start == word.start and ov.variables and ov.fed_by:
            return f"{text} from ${ov.variables[-1]}, line {ov.fed_by[-1].line}"
    return text


def _line_bounds(ctx: "LaunchContext", offset: int) -> tuple[int, int]:
    src = ctx.source
    line0 = src.line_of(offset)
    start = src.line_starts[line0]
    return start, start + len(src.line_bytes(line0).rstrip(b"\r\n"))


def _indent(ctx: "LaunchContext", offset: int) -> str:
    start, end = _line_bounds(ctx, offset)
    line = ctx.source.data[start:end]
    return line[:len(line) - len(line.lstrip(b" \t"))].decode()


def _next_to(ctx: "LaunchContext", ov: Override, word: str) -> Edit:
    return _after_element(ctx, ov, word) if ov.array else _before_word(ctx, ov, word)


def _after_element(ctx: "LaunchContext", ov: Override, word: str) -> Edit:
    """A new array element after `ov`: on its own line when `ov` ends its line."""
    _, line_end = _line_bounds(ctx, ov.span.end)
    rest = ctx.source.data[ov.span.end:line_end].strip()
    if not rest or rest.startswith(b"#"):
        return Edit(start=line_end, end=line_end,
                    replacement=f"\n{_indent(ctx, ov.span.start)}{word}")
    return Edit(start=ov.span.end, end=ov.span.end, replacement=f" {word}")


def _before_word(ctx: "LaunchContext", ov: Override, word: str) -> Edit:
    """A new word before `ov` in a command; its own `\\`-continued line when `ov` starts one."""
    line_start, _ = _line_bounds(ctx, ov.span.start)
    if not ctx.source.data[line_start:ov.span.start].strip():
        indent = _indent(ctx, ov.span.start)
        return Edit(start=ov.span.start, end=ov.span.start, replacement=f"{word} \\\n{indent}")
    return Edit(start=ov.span.start, end=ov.span.start, replacement=f"{word} ")


def missing_anchor(ctx: "LaunchContext", fix: Fix | None, device_specific: bool) -> Span:
    """Where a finding about a setting the script lacks points: where its fix goes.

    One scenario needs it (a device-specific rule): the `ARR+=(` append of that scenario's
    branch the fix extends, else the branch's head (`npu)`, the `if [ … ]` test) — the fix adds
    its line there —, else the launch. Every scenario needs it: the launch's entry point."""
    if device_specific:
        at = fix.edits[0].start if fix is not None and fix.edits else None
        own = [(b_span, head) for _, b_span, _, ours, head in _branches(ctx) if ours]
        if at is not None:
            arrays = [a for a in getattr(ctx.model, "arrays", ())
                      if a.array is not None and a.span.start < at <= a.span.end]
            for a in arrays:
                if a.append and _in_scenario_branch(ctx, a.span):
                    return _array_head(ctx, a)  # `ACTOR+=(` in the npu arm
            inside = [head for b_span, head in own if b_span.start <= at <= b_span.end]
            if inside:
                return inside[-1]  # a new `ACTOR+=(…)` line at the end of the `npu)` arm
            if arrays:
                return _array_head(ctx, arrays[-1])  # a new `if [ DEVICE = npu ]` block after it
        if own:
            return own[-1][1]
    return ctx.entry_span()


def _array_head(ctx: "LaunchContext", a) -> Span:
    """`ACTOR+=(` / `ROLLOUT=(`: the array assignment up to its opening parenthesis."""
    return ctx.source.span(a.name_span.start, a.array.span.start + 1)


# ---- device branches (needs the ScriptModel's branch paths) -----------------------------------

_BRANCHES: tuple | None = None  # (context, branches): computed once per launch context


def _branches(ctx: "LaunchContext") -> list:
    """(block, branch span, branch body, taken in this scenario, head) for every case item and
    if arm; the head is what names the branch: the `npu)` pattern, the `if [ … ]` test.

    A branch is this scenario's when its `case` pattern is the scenario's pinned value of the
    subject variable, or its `if` tests that variable `=`/`==` that value."""
    global _BRANCHES
    last = _BRANCHES  # one read: another thread may replace it
    if last is not None and last[0] is ctx:
        return last[1]
    from verl_lint.shell.model import Case

    pins = dict(ctx.run.scenario.pins)
    out = []
    for block in getattr(ctx.model, "blocks", {}).values():
        if isinstance(block, Case):
            value = pins.get(block.subject_variable or "")
            for item in block.items:
                head = item.span
                if item.patterns:  # `npu)`: the patterns through the `)` after them
                    close = ctx.source.data.find(b")", item.patterns[-1].span.end, item.span.end)
                    head = ctx.source.span(item.patterns[0].span.start,
                                           close + 1 if close != -1 else item.patterns[-1].span.end)
                out.append((block, item.span, item.body,
                            value is not None and value in item.literal_patterns, head))
        else:
            for arm in block.branches:
                c = arm.condition
                ours = (c is not None and c.variable in pins and c.operator in ("=", "==")
                        and c.operand == pins[c.variable])
                out.append((block, arm.span, arm.body, ours,
                            c.span if c is not None else arm.span))
    _BRANCHES = (ctx, out)
    return out


def _in_any_branch(ctx: "LaunchContext", span: Span) -> bool:
    return any(b_span.contains(span) for _, b_span, _, _, _ in _branches(ctx))


def _in_scenario_branch(ctx: "LaunchContext", span: Span) -> bool:
    return any(ours and b_span.contains(span) for _, b_span, _, ours, _ in _branches(ctx))


def _append_in_branch(ctx: "LaunchContext", array: str, word: str) -> Edit | None:
    """`ARR+=(word)` at the end of the scenario's last `case` branch between the array's
    definition and the launch; else a new `if [ "${DEVICE}" = "npu" ]` block right after the
    array's last top-level assignment."""
    assigned = [a for a in getattr(ctx.model, "arrays", ())
                if a.name == array and a.span.end <= ctx.launch.span.start]
    defined = [a.span.end for a in assigned if not a.append]
    if not defined:
        return None
    best = None
    for block, _, body, ours, _ in _branches(ctx):
        if ours and body and defined[-1] <= block.span.start and (
                block.span.end <= ctx.launch.span.start):
            best = body
    if best is not None:
        last = best[-1]
        return Edit(start=last.span.end, end=last.span.end,
                    replacement=f"\n{_indent(ctx, last.span.start)}{array}+=({word})")
    pin = next(((k, v) for k, v in ctx.run.scenario.pins if v == ctx.run.scenario.device), None)
    last = assigned[-1]
    if pin is None or last.path or last.function is not None:
        return None
    indent = _indent(ctx, last.span.start)
    return Edit(start=last.span.end, end=last.span.end,
                replacement=f'\n{indent}if [ "${{{pin[0]}}}" = "{pin[1]}" ]; then\n'
                            f"{indent}    {array}+=({word})\n{indent}fi")

"""Shared plumbing of the VL2xx rules: turn the launch analysis' problems into diagnostics."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Callable, Iterable, Iterator

from verl_lint.diagnostics import Diagnostic, Edit, Fix, Label
from verl_lint.evaluate.model import Unknown
from verl_lint.rules.base import LaunchContext, Rule
from verl_lint.verl import hydra_semantics as hs
from verl_lint.verl.analysis import AppliedOverride, OverrideProblem


def problems(ctx: LaunchContext, code: str) -> Iterator[OverrideProblem]:
    analysis = ctx.analysis
    if analysis is None:
        return
    for problem in analysis.problems:
        if problem.code == code:
            yield problem


def checked_fix(ctx: LaunchContext, fix: Fix | None, *, words: bool = False) -> Fix | None:
    """Keep a fix only if each edit replaces what the script really holds there (`words`: the
    caller deletes whole override words it checked, expansions included)."""
    if fix is None:
        return None
    data = ctx.source.data
    for edit in fix.edits:
        if not (0 <= edit.start <= edit.end <= len(data)):
            return None
        old = data[edit.start:edit.end]
        if edit.start < edit.end and not words and (b" " in old or b"$" in old or b"\n" in old):
            return None
    if any(not e.replacement for e in fix.edits):  # a deletion takes its line or blanks along
        fix = replace(fix, edits=tuple(widen_deletion(data, e) for e in fix.edits))
    return fix


def widen_deletion(data: bytes, edit: Edit) -> Edit:
    """A deletion of one word, widened so no hole is left: the whole line when the word stands
    alone on it (an array element, a `\\`-continued argument, with its trailing comment); the
    previous line's ` \\` too when the word ends a continued command; else the blanks before
    it. Any other edit (a part of a word, like a `+` prefix) is returned as it is. (Here, not in
    `verl_lint.fixes`: a lint that reports a deletion need not import the fixer.)"""
    whole_word = (edit.start == 0 or data[edit.start - 1:edit.start] in b" \t\n(") and \
        data[edit.end:edit.end + 1] in b" \t\r\n)"
    if edit.replacement or edit.start == edit.end or not whole_word:
        return edit
    line_start = data.rfind(b"\n", 0, edit.start) + 1
    nl = data.find(b"\n", edit.end)
    line_end = len(data) if nl < 0 else nl + 1
    before = data[line_start:edit.start]
    rest = data[edit.end:line_end].strip()
    continues = rest.endswith(b"\\")
    if before.strip(b" \t") or not (rest in (b"", b"\\") or rest.startswith(b"#")):
        start = edit.start - (len(before) - len(before.rstrip(b" \t")))
        return Edit(start=start, end=edit.end, replacement="")
    previous = data[:line_start].rstrip(b"\r\n")
    if not continues and previous.endswith(b"\\"):
        # the word ends a continued command: the line before must end it now
        start = len(previous[:-1].rstrip(b" \t"))
        return Edit(start=start, end=edit.end, replacement="")
    return Edit(start=line_start, end=line_end, replacement="")


def report(rule: Rule, ctx: LaunchContext, found: Iterable[OverrideProblem]) -> Iterator[Diagnostic]:
    for p in found:
        help_ = None
        if p.hydra_message and p.rejected_by == "hydra":
            help_ = f"Hydra: {p.hydra_message.splitlines()[0]}"
        labels = () if p.caused_by is None else \
            (Label(span=p.caused_by.span, message="this finding follows from this override"),)
        yield rule.diagnostic(p.span, p.message, help=help_, fix=checked_fix(ctx, p.fix),
                              labels=labels)


# id(composed tree) → (the tree, {key: (default, annotation)}); composed trees are shared,
# never mutated and kept for the process (verl_lint.verl.configs), so the answers hold for
# every launch
_DEFAULTS: dict[int, tuple[dict, dict[str, tuple[Any, str | None]]]] = {}


def defaults_of(ctx: LaunchContext) -> Callable[[str], tuple[Any, str | None]]:
    """key → (verl's default for it before the launch's overrides — interpolations resolved —,
    the annotation of the dataclass field behind it), ABSENT / None when unknown: the composed
    tree's memo is found once for the launch, not once per key."""
    base = ctx.analysis.base if ctx.analysis is not None else None
    if base is None:
        return lambda key: (hs.ABSENT, None)
    hit = _DEFAULTS.get(id(base))
    if hit is None or hit[0] is not base:
        hit = _DEFAULTS[id(base)] = (base, {})
    memo = hit[1]

    def default_of(key: str) -> tuple[Any, str | None]:
        known = memo.get(key)
        if known is None:
            known = memo[key] = _default_of(ctx, base, key)
        return known

    return default_of


def _default_of(ctx: LaunchContext, base: dict, key: str) -> tuple[Any, str | None]:
    parts = tuple(key.split("."))
    try:
        value, _ = hs.follow(base, parts)
    except (hs.Unresolvable, hs.HydraReject, RecursionError):
        value = hs.ABSENT
    if hs.is_interp(value):
        value = hs.ABSENT
    parent = hs.lookup(base, parts[:-1])
    annotation = None
    if isinstance(parent, dict):
        fields = ctx.release.fields_of(parent.get("_target_"))
        if fields is not None:
            annotation = fields.get(parts[-1])
    return value, annotation


def is_plain(value: Any) -> bool:
    """A value the script states literally (not Unknown, not an interpolation)."""
    return not isinstance(value, Unknown) and not hs.is_interp(value)


def applied(ctx: LaunchContext) -> Iterator[AppliedOverride]:
    if ctx.analysis is not None:
        yield from ctx.analysis.applied

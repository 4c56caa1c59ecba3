"""The rule contract: metadata in one place, a pure `check` over one of three contexts.

A rule declares its scope:
- ``script``   runs once per file over the ScriptModel (parse errors, case without fallback…);
- ``scenario`` runs once per Scenario over its ScenarioRun (undefined variables…);
- ``launch``   runs once per Launch with the verl analysis (unknown keys, arithmetic, pitfalls).
The engine merges the same finding produced by several scenarios.
"""

from __future__ import annotations

import functools
import weakref
from dataclasses import field
from typing import TYPE_CHECKING, Any, Callable, ClassVar, Iterable, Literal, TypeVar

from verl_lint.diagnostics import Diagnostic, Fix, Label, Severity, rule_url
from verl_lint.records import shared_dataclass
from verl_lint.source import SourceText, Span

if TYPE_CHECKING:
    from verl_lint.evaluate.model import Launch, ScenarioRun
    from verl_lint.settings import Settings
    from verl_lint.shell.model import ScriptModel
    from verl_lint.verl.analysis import LaunchAnalysis
    from verl_lint.verl.effective import EffectiveConfig
    from verl_lint.verl.choice import VersionChoice
    from verl_lint.verl.release import VerlRelease

Scope = Literal["script", "scenario", "launch"]
_Answer = TypeVar("_Answer")


def per_context(compute: "Callable[[Any], _Answer]") -> "Callable[[Any], _Answer]":
    """`compute(ctx)`, answered once for the last context asked about.

    The engine runs every rule of a launch on one context object and several rules ask the
    same question of it. The context is held weakly, so that nothing keeps the last file's
    model alive; its answer is dropped when another context asks. No weakref callback drops it
    sooner: the file budget's alarm can interrupt a callback, and Python prints what it raises
    there as "Exception ignored in …". `answer.holds()` tells whether the answer kept is for a
    live context."""
    last: "tuple[weakref.ref, Any] | None" = None

    @functools.wraps(compute)
    def answer(ctx: Any) -> _Answer:
        nonlocal last
        held = last  # one read: another thread may replace it
        if held is not None and held[0]() is ctx:
            return held[1]
        value = compute(ctx)
        last = (weakref.ref(ctx), value)
        return value

    answer.holds = lambda: last is not None and last[0]() is not None  # type: ignore[attr-defined]
    return answer


@shared_dataclass(frozen=True)
class ScriptContext:
    path: str
    source: SourceText
    model: "ScriptModel"
    settings: "Settings"
    version: "VersionChoice | None" = field(default=None, kw_only=True)  # the engine's choice


@shared_dataclass(frozen=True)
class ScenarioContext(ScriptContext):
    run: "ScenarioRun"


@shared_dataclass(frozen=True)
class LaunchContext(ScenarioContext):
    launch: "Launch"
    release: "VerlRelease"
    analysis: "LaunchAnalysis | None"  # None when the launch's config cannot be resolved (VL004)

    @property
    def config(self) -> "EffectiveConfig | None":
        return self.analysis.config if self.analysis is not None else None

    def entry_span(self) -> Span:
        """The entry point's word in the launch command (`verl.trainer.main_ppo`), else the
        command's first line: where a finding about the launch as a whole points."""
        src, whole = self.source, self.launch.span
        entry = self.launch.module or self.launch.script
        at = src.data.find(entry.encode(), whole.start, whole.end) if entry else -1
        if at != -1:
            return src.span(at, at + len(entry.encode()))
        return self.head_span()

    def head_span(self) -> Span:
        """The launch command's first line (without its line ending)."""
        src, start = self.source, self.launch.span.start
        line0 = src.line_of(start)
        line_end = src.line_starts[line0] + len(src.line_bytes(line0).rstrip(b"\r\n"))
        return src.span(start, max(start, min(line_end, self.launch.span.end)))


class Rule:
    """Base class. The subclass docstring is the rule's docs page (What it does / Why is this
    bad? / Example / Use instead / References)."""

    code: ClassVar[str]
    name: ClassVar[str]
    severity: ClassVar[Severity]
    summary: ClassVar[str]
    scope: ClassVar[Scope]
    fixable: ClassVar[bool] = False
    origin: ClassVar[str] = "builtin"  # "builtin", or the YAML file a knowledge rule came from

    @classmethod
    def docs(cls) -> str:
        import inspect

        return inspect.cleandoc(cls.__doc__ or "")

    @classmethod
    def url(cls) -> str:
        return rule_url(cls.code, cls.name)

    def check(self, ctx: Any) -> Iterable[Diagnostic]:
        raise NotImplementedError

    def diagnostic(
        self,
        span: Span,
        message: str,
        *,
        labels: Iterable[Label] = (),
        help: str | None = None,
        fix: Fix | None = None,
        severity: Severity | None = None,
    ) -> Diagnostic:
        return Diagnostic(
            code=self.code,
            name=self.name,
            severity=severity or self.severity,
            message=message,
            span=span,
            labels=tuple(labels),
            help=help,
            fix=fix,
            url=self.url(),
        )

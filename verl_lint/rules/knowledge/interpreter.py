"""Turning a `RuleSpec` into a registry `Rule` subclass (scope "launch", docs = the YAML `doc`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar, Iterable, Iterator

from verl_lint.diagnostics import Diagnostic, Severity
from verl_lint.rules.base import Rule
from verl_lint.rules.knowledge.conditions import (
    MODEL_PATH, ROLLOUT_NAME, STRATEGY, Facts, entry_results, mined_list, normalize, show,
    when_holds,
)
from verl_lint.rules.knowledge.fixes import (
    build_fix, describe_origin, missing_anchor, value_span,
)
from verl_lint.rules.knowledge.plain import KeyRef
from verl_lint.rules.origin import script_span
from verl_lint.source import Span

if TYPE_CHECKING:
    from verl_lint.rules.base import LaunchContext
    from verl_lint.rules.knowledge.families import FamilyMatcher
    from verl_lint.rules.knowledge.plain import KeyCondition, RuleSpec
    from verl_lint.verl.effective import Resolved

_PHRASE = {"==": "must be {}", "!=": "must not be {}", "in": "must be one of {}",
           "not_in": "must not be one of {}", "<": "must be < {}", "<=": "must be <= {}",
           ">": "must be > {}", ">=": "must be >= {}", "regex": "must match {}",
           "not_regex": "must not match {}", "is_set": "must be set", "not_set": "must not be set"}
# a forbid entry states what must not hold: its message uses the negated operator
_NEGATED = {"==": "!=", "!=": "==", "in": "not_in", "not_in": "in", "<": ">=", "<=": ">",
            ">": "<=", ">=": "<", "regex": "not_regex", "is_set": "not_set", "not_set": "is_set"}


def _format(template: str, fields: dict[str, Any]) -> str:
    """Fill `{placeholders}` (the schema checked that only known names are used)."""
    return template.format_map(fields)


class KnowledgeRule(Rule):
    """Base of the rules built from YAML; `spec` and `families` are set per subclass."""

    scope = "launch"
    spec: ClassVar["RuleSpec"]
    families: ClassVar["FamilyMatcher"]

    def check(self, ctx: "LaunchContext") -> Iterable[Diagnostic]:
        if ctx.config is None:
            return
        facts = Facts.from_context(ctx)
        spec = self.spec
        if not when_holds(spec.when, facts, self.families):
            return
        if not (spec.require or spec.forbid):
            fields = self._fields(facts)
            yield self.diagnostic(self._anchor(ctx, facts),
                                  _format(spec.message or spec.summary, fields),
                                  help=spec.help and _format(spec.help, fields),
                                  fix=self._fix(ctx, spec.fix))
            return
        violations = list(self._violations(facts))
        if not violations:
            return
        # the message fields (model family, rollout, strategy) only matter for a finding
        fields = self._fields(facts)
        reported = {key for key, _, _, _ in violations}
        for key, resolved, entry, required in violations:
            origin = resolved.origin if resolved is not None else None
            if origin is not None and origin.kind == "inherited" and origin.from_key in reported:
                continue  # the key it inherits from is reported already
            yield self._report(ctx, facts, fields, key, resolved, entry, required)

    def _violations(self, facts: Facts) -> Iterator[
            tuple[str, "Resolved | None", "KeyCondition", bool]]:
        for entry in self.spec.require:
            for key, resolved, ok in entry_results(entry, facts, self.families):
                if ok is False or (resolved is None and entry.if_missing == "violated"):
                    yield key, resolved, entry, True
        for entry in self.spec.forbid:
            for key, resolved, ok in entry_results(entry, facts, self.families):
                if ok is True:
                    yield key, resolved, entry, False

    def _fields(self, facts: Facts) -> dict[str, Any]:
        info = facts.model(self.families)
        model = self.spec.when.model
        listed = mined_list(facts.version, model.architectures_outside) \
            if model is not None and model.architectures_outside else None
        return {
            "architectures": ", ".join(info.architectures) if info else "?",
            "evidence": listed["at"] if listed else "?",
            "device": facts.device or "any device", "version": facts.version,
            "model": show(facts.value(MODEL_PATH)),
            "family": info.label if info and info.label else "unknown family",
            "params_b": f"{info.params_b:g}" if info and info.params_b is not None else "?",
            "rollout": show(facts.value(ROLLOUT_NAME)), "strategy": show(facts.value(STRATEGY)),
        }

    def _report(self, ctx: "LaunchContext", facts: Facts, fields: dict[str, Any], key: str,
                resolved: "Resolved | None", entry: "KeyCondition", required: bool) -> Diagnostic:
        value = show(normalize(resolved.value)) if resolved is not None else "not set"
        other = ""
        if isinstance(entry.value, KeyRef):
            expected, other = entry.value.key, show(facts.value(entry.value.key))
        elif isinstance(entry.value, list):
            expected = ", ".join(show(v) for v in entry.value)
        else:
            expected = show(entry.value)
        op = "not_set" if entry.op == "is_set" and entry.value is False else entry.op
        if not required:
            op = _NEGATED.get(op, op)
        fields = {**fields, "key": key, "value": value, "expected": expected, "other": other,
                  "origin": describe_origin(ctx, resolved) if resolved is not None
                  else "no verl default"}
        if entry.message:
            message = _format(entry.message, fields)
        elif resolved is None:
            message = f"`{key}` is not set; it {_PHRASE[op].format(expected)}"
        else:
            message = (f"`{key}` is {value} ({fields['origin']}); it "
                       f"{_PHRASE[op].format(expected)}")
        # A key the script does not set may still come through `"$@"`: the script alone cannot
        # tell, so say it softly (as VL304 does for a missing micro batch size).
        passed_through = resolved is None and bool(ctx.launch.passthrough)
        if passed_through:
            message += ' (unless the caller passes it through "$@")'
        fix = self._fix(ctx, entry.fix or self.spec.fix, entry)
        # a setting the script does not make points where its fix goes (fixes.missing_anchor)
        span = self._span_of(ctx, resolved) or missing_anchor(ctx, fix,
                                                              self._device_specific(entry))
        return self.diagnostic(span, message, help=self.spec.help and _format(self.spec.help,
                                                                             fields),
                               fix=fix, severity=Severity.INFO if passed_through else None)

    def _device_specific(self, entry: "KeyCondition | None") -> bool:
        return self.spec.when.device is not None or (
            entry is not None and entry.when is not None and entry.when.device is not None)

    def _fix(self, ctx: "LaunchContext", fix_spec, entry: "KeyCondition | None" = None) -> Any:
        if fix_spec is None:
            return None
        return build_fix(ctx, fix_spec, device_specific=self._device_specific(entry))

    @staticmethod
    def _span_of(ctx: "LaunchContext", resolved: "Resolved | None") -> Span | None:
        """The value token of the override that set (or, inherited, fed) this value."""
        word = script_span(resolved)
        return value_span(ctx, word) if word is not None else None

    def _anchor(self, ctx: "LaunchContext", facts: Facts) -> Span:
        """Where a finding about a default or missing value points: the script's override of a
        key the rule's `when` depends on, else the entry point's word for a rule about one,
        else the launch's first line."""
        when = self.spec.when
        keys = [c.key for c in when.config if hasattr(c, "key")]
        keys += [ROLLOUT_NAME] * bool(when.rollout) + [STRATEGY] * bool(when.strategy)
        keys += [MODEL_PATH] * bool(when.model)
        for key in keys:
            span = self._span_of(ctx, facts.config.get(key))
            if span is not None:
                return span
        # a rule about an entry point points at the module the launch runs
        return ctx.entry_span() if when.entry_point else ctx.head_span()


def build_rule(spec: "RuleSpec", *, origin: str, families: "FamilyMatcher") -> type[Rule]:
    """A Rule subclass for one YAML rule (not registered)."""
    doc = f"{spec.summary}.\n\n{spec.doc.strip()}"  # first line: the summary, like built-ins
    extra = [e for e in spec.evidence if e not in doc]  # References is the last section
    if extra:
        doc += "\n" + "\n".join(f"- {e}" for e in extra)
    attrs = {
        "__doc__": doc, "__module__": __name__, "code": spec.code, "name": spec.name,
        "severity": spec.severity, "summary": spec.summary, "scope": "launch",
        "fixable": spec.fix is not None or any(e.fix for e in (*spec.require, *spec.forbid)),
        "origin": origin, "spec": spec, "families": families,
    }
    return type(f"Knowledge{spec.code}", (KnowledgeRule,), attrs)

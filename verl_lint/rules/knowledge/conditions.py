"""Evaluating `when`/`require`/`forbid` against one launch's effective config.

Every test answers True, False or None (unknown: an `Unknown` operand, an unresolved
interpolation, a mandatory `???`). None never makes a rule fire (precision over recall).
"""

from __future__ import annotations

import fnmatch
import re
import weakref
from dataclasses import field
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Iterator

from verl_lint.evaluate.model import Unknown
from verl_lint.records import shared_dataclass
from verl_lint.rules.base import per_context
from verl_lint.rules.knowledge.plain import AnyOf, KeyRef
from verl_lint.rules.origin import script_span
from verl_lint.verl.effective import MISSING, EffectiveConfig, Resolved
from verl_lint.verl.versions import in_range

if TYPE_CHECKING:
    from verl_lint.rules.base import LaunchContext
    from verl_lint.rules.knowledge.families import FamilyMatcher, ModelInfo
    from verl_lint.rules.knowledge.plain import KeyCondition, ModelCondition, When


class _Unknown:
    def __repr__(self) -> str:
        return "<unknown>"


UNKNOWN: Any = _Unknown()
MODEL_PATH = "actor_rollout_ref.model.path"
ROLLOUT_NAME = "actor_rollout_ref.rollout.name"
STRATEGY = "actor_rollout_ref.actor.strategy"
_DEVICE_OF_TRAINER = {"npu": "npu", "cuda": "gpu", "gpu": "gpu"}


_ASCEND_ENV = ("ASCEND_", "HCCL_", "VLLM_ASCEND_", "PYTORCH_NPU_")
_CUDA_ENV = ("NCCL_", "CUDA_VISIBLE_DEVICES")
_DEVICE_ENV = _ASCEND_ENV + _CUDA_ENV


def script_wide_device(ctx: "LaunchContext") -> str | None:
    """"npu" for an Ascend-only script: it exports Ascend variables (`HCCL_*`, `ASCEND_*`,
    `VLLM_ASCEND_*`, `PYTORCH_NPU_*`) outside any branch and function before the launch, and
    no CUDA device variables (`CUDA_VISIBLE_DEVICES`, `NCCL_*`). Else None (unknown)."""
    launch_start = ctx.launch.span.start
    # the name first: one test rules out nearly every assignment of a script
    names = [a.name for a in getattr(ctx.model, "assignments", ())
             if a.name.startswith(_DEVICE_ENV) and not a.path and a.function is None
             and a.span.start < launch_start and a.exported]
    if any(n.startswith(_CUDA_ENV) for n in names):
        return None
    return "npu" if any(n.startswith(_ASCEND_ENV) for n in names) else None


def normalize(value: Any) -> Any:
    """The value as Hydra would type it; UNKNOWN when it cannot be known statically."""
    if isinstance(value, (Unknown, _Unknown)):
        return UNKNOWN
    if isinstance(value, str):
        return _normalized_text(value)
    return value


@lru_cache(maxsize=4096)  # rules normalize the same few hundred strings every launch
def _normalized_text(value: str) -> Any:
    text = value.strip()
    if "${" in text or text == MISSING:
        return UNKNOWN
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    low = text.lower()
    if low in ("true", "false"):
        return low == "true"
    if low == "null":
        return None
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def show(value: Any) -> str:
    """A value the way a script writes it."""
    if value is UNKNOWN:
        return "<unknown>"
    if value is None:
        return "null"
    return str(value)


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _equal(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    return a == b


def compare(op: str, actual: Any, expected: Any) -> bool | None:
    if op == "is_set":
        return (actual is not None) == expected if actual is not UNKNOWN else None
    if actual is UNKNOWN or expected is UNKNOWN:
        return None
    if op == "==":
        return _equal(actual, expected)
    if op == "!=":
        return not _equal(actual, expected)
    if op in ("in", "not_in"):
        if not isinstance(expected, (list, tuple)):
            return None  # `in: {key: …}` whose value is not a list: no membership to test
        hit = any(_equal(actual, normalize(e)) for e in expected)
        return hit if op == "in" else not hit
    if op == "regex":
        return actual is not None and re.search(str(expected), str(actual)) is not None
    if not (_number(actual) and _number(expected)):
        return None
    return {"<": actual < expected, "<=": actual <= expected,
            ">": actual > expected, ">=": actual >= expected}[op]


@lru_cache(maxsize=256)
def _glob(pattern: str) -> re.Pattern[str]:
    parts = []
    for seg in pattern.split("."):
        parts.append({"*": r"[^.]+", "**": r"[^.]+(?:\.[^.]+)*"}.get(seg, re.escape(seg)))
    return re.compile(r"\.".join(parts) + r"\Z")


def matching_keys(config: EffectiveConfig, pattern: str) -> list[str]:
    if "*" not in pattern:
        return [pattern]
    prefix = pattern.split("*", 1)[0]
    rx = _glob(pattern)
    return [k for k in config.keys(prefix) if rx.match(k)]


@shared_dataclass()
class Facts:
    """What a knowledge rule may ask about one launch."""

    config: EffectiveConfig
    version: str
    device: str | None
    module: str | None
    context: "weakref.ref[LaunchContext] | None" = None  # (weakly: see `per_context`)
    _models: dict = field(default_factory=dict)

    @property
    def ctx(self) -> "LaunchContext | None":
        return self.context() if self.context is not None else None

    @staticmethod
    def from_context(ctx: "LaunchContext") -> "Facts":
        """The facts of a launch, shared by every knowledge rule run on the same context."""
        return _facts_of(ctx)

    @classmethod
    def _build(cls, ctx: "LaunchContext") -> "Facts":
        config = ctx.config
        assert config is not None
        device = ctx.run.scenario.device
        if device is None:  # no device branch: trust an explicit trainer.device
            r = config.get("trainer.device")
            if r is not None and r.origin.kind == "script":
                device = _DEVICE_OF_TRAINER.get(str(normalize(r.value)))
        if device is None:
            device = script_wide_device(ctx)
        module = ctx.launch.module
        if module is None and ctx.launch.script:
            module = ctx.launch.script.removesuffix(".py").replace("/", ".")
        return cls(config, ctx.release.version, device, module, weakref.ref(ctx))

    def value(self, key: str) -> Any:
        r = self.config.get(key)
        return None if r is None else normalize(r.value)

    def model(self, families: "FamilyMatcher") -> "ModelInfo | None":
        if id(families) not in self._models:
            path = self.value(MODEL_PATH)
            if path is UNKNOWN and self.ctx is not None:
                path = known_basename(self.ctx, self.config.get(MODEL_PATH))
            self._models[id(families)] = (
                families.classify(path) if isinstance(path, str) and path else None)
        return self._models[id(families)]


_facts_of = per_context(Facts._build)


def known_basename(ctx: "LaunchContext", resolved: Resolved | None) -> str | None:
    """The literal end of a path whose start is unknown: `$HOME/models/Qwen3.5-35B-A3B` names
    its model even though `$HOME` is not known. Only a tail that contains a `/` counts, so the
    last path segment is entirely literal. The tail is read from the script's words: the
    override, then the assignments that fed it (`${MODEL_PATH:-$HOME/…}` takes the default, as
    the evaluator does)."""
    span = script_span(resolved)
    if span is None:
        return None
    ov = next((o for o in ctx.launch.overrides if o.span.start == span.start), None)
    word = _word_at(ctx.model, span)
    if ov is None or word is None:
        return None
    starts = {f.start for f in ov.fed_by}
    feeders = {a.name: a.value for a in getattr(ctx.model, "assignments", ())
               if a.value is not None and a.span.start in starts}
    tail, _ = _literal_tail(word, feeders, depth=0)
    tail = tail.split("=", 1)[1] if "=" in tail and tail.split("=", 1)[0] == ov.key else tail
    return tail if "/" in tail and not tail.endswith("/") else None


def _word_at(model: Any, span: Any) -> Any:
    for a in getattr(model, "arrays", ()):
        if a.span.start <= span.start < a.span.end:
            for w in a.array.elements:
                if w.span.start == span.start:
                    return w
    for c in getattr(model, "commands", ()):
        if c.span.start <= span.start < c.span.end:
            for w in c.words:
                if w.span.start == span.start:
                    return w
    return None


def _literal_tail(word: Any, feeders: dict, depth: int) -> tuple[str, bool]:
    """(the literal text the word ends with, whether the whole word is literal)."""
    out = ""
    for piece in reversed(word.pieces):
        if piece.kind == "literal":
            out = piece.value + out
            continue
        inner = None
        if piece.kind == "variable" and piece.index is None and depth < 4:
            if piece.operator in (":-", "-") and piece.argument is not None:
                inner = piece.argument
            elif piece.operator is None and piece.name in feeders:
                inner = feeders[piece.name]
        if inner is None:
            return out, False
        text, complete = _literal_tail(inner, feeders, depth + 1)
        out = text + out
        if not complete:
            return out, False
    return out, True


def test(cond: "KeyCondition", resolved: Resolved | None, facts: Facts) -> bool | None:
    """One condition on one key's resolved value."""
    if resolved is None:
        return (not cond.value) if cond.op == "is_set" else None
    if cond.origin is not None and resolved.origin.kind != cond.origin:
        # about values of another origin: no answer (False would make a require entry report
        # a value it does not apply to)
        return None
    expected = cond.value
    if isinstance(expected, KeyRef):
        other = facts.config.get(expected.key)
        expected = UNKNOWN if other is None else normalize(other.value)
    elif cond.op not in ("in", "not_in", "regex", "is_set"):
        expected = normalize(expected)
    return compare(cond.op, normalize(resolved.value), expected)


def key_holds(cond: "KeyCondition", facts: Facts, families: "FamilyMatcher") -> bool | None:
    """A `when` condition: true when some matching key satisfies it (and its own `when`)."""
    if cond.when is not None and not when_holds(cond.when, facts, families):
        return False
    keys = matching_keys(facts.config, cond.key)
    answers = [test(cond, facts.config.get(k), facts) for k in keys]
    if any(a is True for a in answers):
        return True
    return None if any(a is None for a in answers) or not answers else False


@lru_cache(maxsize=1)
def _model_support() -> dict[str, dict[str, Any]]:
    import json

    from verl_lint.verl.data import DATA_DIR

    return json.loads((DATA_DIR / "model_support.json").read_bytes())


def mined_list(version: str, name: str) -> dict[str, Any] | None:
    """`{"values": [...], "at": "path:line"}`: a model list mined from that release's code
    (`verl_lint/verl/mine/model_support.py`), or None when the release has no such list."""
    found = _model_support().get(version, {}).get(name)
    return found if isinstance(found, dict) and "values" in found else None


def _model_holds(m: "ModelCondition", info: "ModelInfo | None",
                 version: str | None = None) -> bool | None:
    if info is None:
        return None
    if m.architectures_outside is not None:
        listed = mined_list(version, m.architectures_outside) if version else None
        if listed is None or not info.architectures:
            return None
        if set(info.architectures) & set(listed["values"]):
            return False
    if m.family is not None and info.family not in m.family:
        return False
    if m.traits is not None and not set(m.traits) <= info.traits:
        return False
    if m.params_b is not None:
        if info.params_b is None:
            return None
        for op, bound in m.params_b.items():
            if not compare(op, info.params_b, bound):
                return False
    return True


def when_holds(when: "When", facts: Facts, families: "FamilyMatcher") -> bool:
    """True only when every condition is known to hold."""
    if when.device is not None and facts.device not in when.device:
        return False
    if when.unless_device is not None and facts.device in when.unless_device:
        return False
    if when.verl is not None and not in_range(facts.version, when.verl):
        return False
    if when.entry_point is not None and not (
            facts.module and any(fnmatch.fnmatchcase(facts.module, p) for p in when.entry_point)):
        return False
    for key, allowed in ((ROLLOUT_NAME, when.rollout), (STRATEGY, when.strategy)):
        if allowed is not None:
            v = facts.value(key)
            if v is UNKNOWN or v not in allowed:
                return False
    if when.model is not None and \
            _model_holds(when.model, facts.model(families), facts.version) is not True:
        return False
    for cond in when.config:
        conds = cond.any if isinstance(cond, AnyOf) else [cond]
        if not any(key_holds(c, facts, families) is True for c in conds):
            return False
    return True


def entry_results(cond: "KeyCondition", facts: Facts,
                  families: "FamilyMatcher") -> Iterator[tuple[str, Resolved | None, bool | None]]:
    """(key, resolved, test result) for every key a require/forbid entry applies to."""
    if cond.when is not None and not when_holds(cond.when, facts, families):
        return
    for key in matching_keys(facts.config, cond.key):
        resolved = facts.config.get(key)
        yield key, resolved, test(cond, resolved, facts)

"""Shared plumbing of the VL3xx rules: read effective operands with their origins, format the
arithmetic, and place the diagnostic on the override that most likely needs to change.

Every reader raises `Skip` when verl-lint cannot know the operand (an `Unknown` from the script,
a value of the wrong type, OmegaConf's `???`): precision over recall, the check stays silent.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, NamedTuple, Sequence

from verl_lint.diagnostics import Edit, Fix, Label
from verl_lint.evaluate.model import Unknown
from verl_lint.rules.base import per_context
from verl_lint.rules.origin import script_span
from verl_lint.source import Span
from verl_lint.verl.effective import MISSING, EffectiveConfig, Resolved
from verl_lint.verl.versions import in_range

if TYPE_CHECKING:
    from verl_lint.rules.base import LaunchContext

ACTOR = "actor_rollout_ref.actor"
REF = "actor_rollout_ref.ref"
ROLLOUT = "actor_rollout_ref.rollout"
FSDP_STRATEGIES = frozenset({"fsdp", "fsdp2"})
# The checks of verl's `validate_config` belong to the PPO trainer configs.
PPO_CONFIGS = frozenset({"ppo_trainer", "ppo_megatron_trainer"})


# The VL3xx rules run one after another on each launch's config, and several ask the same
# facts (the world, whether a ref or a critic runs): those are computed once per config (a
# config does not change once built). A Skip is not cached: it is raised again.
_per_config = lru_cache(maxsize=1)


class Skip(Exception):
    """An operand is unknown or unusable: the check must not fire."""


class Operand(NamedTuple):  # a NamedTuple: rules build hundreds per launch
    """One effective value used in a check, with where it came from."""

    key: str
    value: Any
    resolved: Resolved | None = None  # None: the key does not exist in this release

    @property
    def span(self) -> Span | None:
        """The script word that decided this value (directly or through inheritance)."""
        return script_span(self.resolved)

    @property
    def is_inherited(self) -> bool:
        """The value comes from another key through `${oc.select:…}` (critic from actor…)."""
        return self.resolved is not None and self.resolved.origin.kind == "inherited"

    def show(self) -> str:
        return f"{self.key} {fmt(self.value)}"

    def with_value(self, value: Any) -> "Operand":
        return Operand(self.key, value, self.resolved)


def fmt(value: Any) -> str:
    if isinstance(value, bool):
        return str(value)
    return "null" if value is None else str(value)


def _raw(config: EffectiveConfig, key: str) -> Resolved | None:
    r = config.get(key)
    if r is not None:
        v = r.value
        if isinstance(v, Unknown) or v == MISSING:
            raise Skip(key)
    return r


def get_int(config: EffectiveConfig, key: str, *, absent: int | None = None,
            nullable: bool = False) -> Operand:
    """An integer operand. `absent` is its value on releases without the key (else Skip);
    `nullable` accepts null (the caller decides what null means)."""
    r = _raw(config, key)
    if r is None:
        if absent is None:
            raise Skip(key)
        return Operand(key, absent)
    v = r.value
    if v is None and nullable:
        return Operand(key, None, r)
    if isinstance(v, bool) or not isinstance(v, int):
        raise Skip(key)
    return Operand(key, v, r)


def get_bool(config: EffectiveConfig, key: str, *, absent: bool | None = None,
             nullable: bool = False) -> Operand:
    """A boolean operand; `nullable` accepts null (value None: off, for a switch)."""
    return _typed(config, key, absent, bool, nullable)


def get_str(config: EffectiveConfig, key: str, *, absent: str | None = None) -> Operand:
    return _typed(config, key, absent, str)


def _typed(config: EffectiveConfig, key: str, absent: Any, kind: type,
           nullable: bool = False) -> Operand:
    r = _raw(config, key)
    if r is None:
        if absent is None:
            raise Skip(key)
        return Operand(key, absent)
    if not isinstance(r.value, kind) and not (nullable and r.value is None):
        raise Skip(key)
    return Operand(key, r.value, r)


# The entry points whose code builds the actor/rollout/ref/critic workers and runs the checks
# above (read per release in verl's source): main_ppo (validate_config at
# verl/trainer/main_ppo.py:261 @0.6.0, :255 @0.8.0, :177 @0.9.1; RayPPOTrainer._validate_config
# at verl/trainer/ppo/ray_trainer.py:415 @0.4.0–0.5.0), main_ppo_sync (:1856 @0.8.0),
# main_ppo_v0 (:179 @0.9.0–0.9.1), one_step_off_policy.main_ppo (:53 @0.8.0, :52 @0.9.1), and
# fully_async_main, whose workers are the engine workers (verl/workers/engine_workers.py:636-637
# @0.9.1 assert the per-GPU keys). main_generation_server only starts rollout replicas from
# `actor_rollout_ref.rollout` (verl/trainer/main_generation_server.py:40-52 @0.9.1): no actor,
# ref or critic is built there, so none of these keys is read.
TRAINING_ENTRY_POINTS = (
    "verl.trainer.main_ppo", "verl.trainer.main_ppo_sync", "verl.trainer.main_ppo_v0",
    "verl.experimental.one_step_off_policy.main_ppo",
    "verl.experimental.fully_async_policy.fully_async_main",
)


def builds_workers(ctx: "LaunchContext") -> bool:
    """The launch's entry point builds the actor/ref/critic workers (`TRAINING_ENTRY_POINTS`)."""
    return ctx.analysis is not None and ctx.analysis.entry in TRAINING_ENTRY_POINTS


_SPLIT_STRING = re.compile(r"\$\{?[A-Za-z_]\w*\}?")


def own_unknown_words(ctx: "LaunchContext") -> bool:
    """A word of the launch is the script's own unquoted string variable whose words it cannot
    all know (veomni's `$ACTOR_CONFIG`, whose value holds `$HOME`): any key may be in it. Not
    the caller's `"$@"`, nor an array whose elements differ by branch (its words are the
    script's own, each known)."""
    src = ctx.source
    return any(_SPLIT_STRING.fullmatch(src.slice(p.span)) for p in ctx.launch.passthrough)


class _DefaultsInDoubt(Mapping):
    """A config's entries where verl's defaults read as unknown: the script's own unknown
    expansion may set any key, so a default is only a guess there."""

    def __init__(self, config: EffectiveConfig) -> None:
        self._config = config

    def get(self, key: str, default: Any = None) -> Resolved | None:
        r = self._config.get(key)
        if r is None:
            return default
        origin = r.inherited_origin if r.origin.kind == "inherited" else r.origin
        if origin is not None and origin.kind == "default":
            return Resolved(key=r.key, value=Unknown(reason="verl's default, unless the script's own "
                                                      "unknown expansion sets it"),
                            origin=r.origin, inherited_origin=r.inherited_origin)
        return r

    def __getitem__(self, key: str) -> Resolved:
        r = self.get(key)
        if r is None:
            raise KeyError(key)
        return r

    def __iter__(self) -> Iterator[str]:
        return iter(self._config.keys())

    def __len__(self) -> int:
        return sum(1 for _ in self._config.keys())

    def keys_with_prefix(self, prefix: str) -> Iterator[str]:
        return self._config.keys(prefix)


@lru_cache(maxsize=4)
def _in_doubt(config: EffectiveConfig) -> EffectiveConfig:
    return EffectiveConfig(config.version, config.config_name, _DefaultsInDoubt(config))


@per_context  # every check of every VL3xx rule asks, ≈ 30 times a launch
def config_of(ctx: "LaunchContext") -> EffectiveConfig | None:
    """The launch's effective config for the VL3xx checks: `ctx.config`, with verl's defaults
    unknown when `own_unknown_words` (veomni's `$ACTOR_CONFIG`): a default the script may well
    override there must not make a check fire."""
    config = ctx.config
    if config is not None and own_unknown_words(ctx):
        config = _in_doubt(config)
    return config


def collect(checks: Iterable[Callable[[], Any]]) -> Iterator[Any]:
    """Run zero-argument checks, skipping those whose operands are unknown; yield findings."""
    for check in checks:
        try:
            found = check()
        except Skip:
            continue
        if found is not None:
            yield found


# ---- the world ---------------------------------------------------------------------------


class World(NamedTuple):  # a NamedTuple: a frozen dataclass costs 6× as much to import
    nnodes: Operand
    per_node: Operand

    @property
    def size(self) -> int:
        return self.nnodes.value * self.per_node.value

    @property
    def operands(self) -> tuple[Operand, Operand]:
        return (self.nnodes, self.per_node)

    def detail(self) -> str:
        """`trainer.nnodes 4 × trainer.n_gpus_per_node 16, line 88`."""
        return f"{self.nnodes.show()} × {self.per_node.show()}, {where(self.operands)}"

    def text(self) -> str:
        """`world size 64 (trainer.nnodes 4 × trainer.n_gpus_per_node 16, line 88)`."""
        return f"world size {self.size} ({self.detail()})"


@_per_config
def world(config: EffectiveConfig) -> World:
    nnodes = get_int(config, "trainer.nnodes")
    per_node = get_int(config, "trainer.n_gpus_per_node")
    if nnodes.value <= 0 or per_node.value <= 0:
        raise Skip("world")
    return World(nnodes, per_node)


# ---- which parts of verl are in play -----------------------------------------------------


def is_ppo(config: EffectiveConfig) -> bool:
    return config.config_name in PPO_CONFIGS


@_per_config
def ref_in_use(config: EffectiveConfig) -> bool:
    """verl builds a reference policy for the KL loss or the in-reward KL penalty."""
    return bool(get_bool(config, f"{ACTOR}.use_kl_loss", absent=False).value
                or get_bool(config, "algorithm.use_kl_in_reward", absent=False).value)


@_per_config
def critic_in_use(config: EffectiveConfig) -> bool:
    """`critic.enable` when set, else GAE needs a critic (verl/trainer/ppo/utils.py:96-107)."""
    r = _raw(config, "critic.enable")
    if r is not None and r.value is not None:
        if not isinstance(r.value, bool):
            raise Skip("critic.enable")
        return r.value
    return get_str(config, "algorithm.adv_estimator").value == "gae"


def engine_workers(config: EffectiveConfig) -> bool:
    """The new engine workers: the only ones from 0.8.0; from 0.7.0 with
    `trainer.use_legacy_worker_impl=disable` ("auto" still meant the legacy workers)."""
    if in_range(config.version, ">=0.8.0"):
        return True
    return in_range(config.version, ">=0.7.0") and _worker_impl(config) == "disable"


def legacy_workers(config: EffectiveConfig) -> bool:
    """`verl/workers/fsdp_workers.py` and friends: before 0.8.0, unless disabled."""
    return in_range(config.version, "<0.8.0") and _worker_impl(config) in ("auto", "enable")


def _worker_impl(config: EffectiveConfig) -> str:
    return get_str(config, "trainer.use_legacy_worker_impl", absent="auto").value


# ---- text --------------------------------------------------------------------------------


def product(ops: Sequence[Operand]) -> int:
    out = 1
    for op in ops:
        out *= op.value
    return out


def arithmetic(ops: Sequence[Operand]) -> str:
    """`2×4×3 = 24 (lines 61-63)`, the right-hand side of `TP×PP×CP = …`; one factor:
    `3 (line 61)`."""
    values = "×".join(fmt(op.value) for op in ops)
    if len(ops) == 1:
        return f"{values} ({where(ops)})"
    # A default factor of 1 changes nothing: its origin is noise.
    shown = [op for op in ops if not (op.value == 1 and op.resolved is not None
                                      and op.resolved.origin.kind == "default")] or ops
    return f"{values} = {product(ops)} ({where(shown)})"


def _lines(lines: Sequence[int]) -> str:
    if len(lines) == 1:
        return f"line {lines[0]}"
    if lines[-1] - lines[0] == len(lines) - 1:
        return f"lines {lines[0]}-{lines[-1]}"
    return "lines " + ", ".join(str(n) for n in lines)


def where(ops: Iterable[Operand]) -> str:
    """Where a group of operands came from: `lines 61-63`, `verl defaults`,
    `line 88; trainer.nnodes verl default`."""
    ops = [op for op in ops if op.resolved is not None]
    direct = sorted({op.span.line for op in ops
                     if op.span is not None and op.resolved.origin.kind == "script"})
    others = [op for op in ops if op.span is None or op.resolved.origin.kind != "script"]
    if not direct and others and all(op.resolved.origin.kind == "default" for op in others):
        return "verl default" if len(others) == 1 else "verl defaults"
    if not direct and len(ops) == 1:
        return ops[0].resolved.describe()  # the key is already in the text
    parts = [_lines(direct)] if direct else []
    parts += [f"{op.key} {op.resolved.describe()}" for op in others]
    return "; ".join(parts)


# ---- placement ---------------------------------------------------------------------------


def place(launch_span: Span, candidates: Sequence[Operand],
          others: Iterable[Operand] = ()) -> tuple[Span, tuple[Label, ...]]:
    """The primary span is the first candidate set in the script (the launch when every operand
    is a default); the other script-set operands become labels."""
    primary = next((op.span for op in candidates if op.span is not None), launch_span)
    labels: list[Label] = []
    seen = {(primary.start, primary.end)}
    for op in [*candidates, *others]:
        span = op.span
        if span is None or (span.start, span.end) in seen:
            continue
        seen.add((span.start, span.end))
        labels.append(Label(span=span, message=_label(op)))
    return primary, tuple(labels)


def _label(op: Operand) -> str:
    if op.is_inherited and op.resolved.origin.from_key:
        return f"{op.resolved.origin.from_key} = {fmt(op.value)}, inherited by {op.key}"
    return f"{op.key} = {fmt(op.value)}"


def culprits(ops: Sequence[Operand], total: int) -> list[Operand]:
    """Order divisor operands so those that do not divide `total` on their own come first."""
    return sorted(ops, key=lambda op: (op.value != 0 and total % op.value == 0,))


def literal_fix(ctx: "LaunchContext", op: Operand, value: Any, title: str) -> Fix | None:
    """Replace the operand's value where the script spells it as a plain number or boolean
    (not through a variable). Unsafe: the intended change may be another operand."""
    span = op.span
    if span is None or op.resolved is None or op.resolved.origin.kind != "script":
        return None
    for override in ctx.launch.overrides:
        if override.span != span or override.value_span is None:
            continue
        text = ctx.source.slice(override.value_span)
        if not (text.isdigit() or text in ("True", "False", "true", "false")):
            return None
        edit = Edit(start=override.value_span.start, end=override.value_span.end,
                    replacement=fmt(value))
        return Fix(title=title, edits=(edit,), applicability="unsafe")
    return None

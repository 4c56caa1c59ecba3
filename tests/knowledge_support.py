"""Hand-built launch contexts for knowledge-base rule tests.

Builds what the evaluator and the verl stage would produce for a small script — overrides with
their exact spans (array elements in the scenario's branch only), an EffectiveConfig whose
script-set values carry `Origin(kind="script")` and whose inheriting keys carry
`Origin(kind="inherited")` — so the VL4xx rules are tested without those stages.
"""

from __future__ import annotations

import re
from types import SimpleNamespace
from typing import Any

from verl_lint.evaluate.model import Launch, Override, Scenario, ScenarioRun, Unknown
from verl_lint.rules.base import LaunchContext
from verl_lint.settings import Settings
from verl_lint.shell import parse_script
from verl_lint.shell.model import Case, If
from verl_lint.source import SourceText
from verl_lint.verl.analysis import LaunchAnalysis
from verl_lint.verl.effective import EffectiveConfig, Origin, Resolved

_OVERRIDE = re.compile(
    r"(?<![\w.$/])(?P<prefix>\+\+|\+|~)?(?P<key>[A-Za-z_]\w*(?:\.\w+)+)=(?P<value>[^\s)]*)")
_ARRAY_OPEN = re.compile(r"^\s*(\w+)\+?=\(")
_ASSIGN = re.compile(r"^\s*(\w+)=([^\s(]\S*)\s*$")
_VAR = re.compile(r"\$\{(\w+)(?::-([^}]*))?\}|\$(\w+)")

# verl 0.7.0+: the ref's megatron settings default to the actor's through ${oc.select:…}
REF_INHERITS = {
    f"actor_rollout_ref.ref.megatron.{k}": f"actor_rollout_ref.actor.megatron.{k}"
    for k in ("use_remove_padding", "use_mbridge", "vanilla_mbridge")
}
MEGATRON_080 = {
    "actor_rollout_ref.actor.strategy": "megatron",
    "actor_rollout_ref.actor.megatron.use_mbridge": True,
    "actor_rollout_ref.actor.megatron.vanilla_mbridge": True,
    "actor_rollout_ref.actor.megatron.use_remove_padding": True,
    "actor_rollout_ref.actor.use_dynamic_bsz": False,
    "actor_rollout_ref.actor.use_kl_loss": False,
    "algorithm.use_kl_in_reward": False,
    "actor_rollout_ref.model.path": "~/models/deepseek-llm-7b-chat",
    "actor_rollout_ref.rollout.name": "???",
    "actor_rollout_ref.rollout.gpu_memory_utilization": 0.5,
    "actor_rollout_ref.actor.policy_loss.loss_mode": "vanilla",
    "actor_rollout_ref.actor.loss_agg_mode": "token-mean",
    "actor_rollout_ref.actor.clip_ratio_low": 0.2,
    "actor_rollout_ref.actor.clip_ratio_high": 0.2,
    "trainer.device": "cuda",
}
FSDP_080 = {**{k: v for k, v in MEGATRON_080.items() if ".megatron." not in k},
            "actor_rollout_ref.actor.strategy": "fsdp"}


def _expand(value: str, env: dict[str, str]) -> str | Unknown:
    missing: list[str] = []

    def sub(m: re.Match) -> str:
        name = m.group(1) or m.group(3)
        if name in env:
            return env[name]
        if m.group(2) is not None:
            return m.group(2)
        missing.append(name)
        return ""

    out = _VAR.sub(sub, value)
    if "$" in out and not missing:  # a default that itself expands a variable
        return _expand(out, env)
    return Unknown(reason=f"${missing[0]} is not set") if missing else out


def _in_other_branch(model, start: int, device: str | None) -> bool:
    """True when `start` lies in a DEVICE branch that this scenario does not take."""
    for block in model.blocks.values():
        if isinstance(block, Case) and block.subject_variable == "DEVICE":
            for item in block.items:
                if item.span.start <= start < item.span.end:
                    return device not in item.literal_patterns and not item.is_default
        if isinstance(block, If):
            for branch in block.branches:
                c = branch.condition
                if c is not None and c.variable == "DEVICE" and branch.span.start <= start < branch.span.end:
                    return (c.operand == device) == (c.operator == "!=")
    return False


def make_ctx(script: str, *, version: str = "0.8.0", device: str | None = "npu",
             defaults: dict[str, Any] | None = None, env: dict[str, str] | None = None,
             inherits: dict[str, str] | None = None) -> LaunchContext:
    source = SourceText(script.encode())
    model = parse_script(source)
    env = dict(env or {})
    assigned: dict[str, object] = {}  # variable → span of the assignment that set it
    data = source.data.decode()
    launch_start = data.index("python3 -m")
    overrides: list[Override] = []
    array = None
    offset = 0
    for line in data.splitlines(keepends=True):
        m = _ARRAY_OPEN.match(line)
        if m:
            array = m.group(1)
        a = _ASSIGN.match(line)
        if a and not _in_other_branch(model, offset, device):
            value = _expand(a.group(2), env)
            if a.group(1) not in env:
                assigned[a.group(1)] = source.span(offset, offset + len(line.rstrip("\n")))
                if isinstance(value, str):
                    env[a.group(1)] = value
        for o in _OVERRIDE.finditer(line):
            if line.lstrip().startswith("#") or _in_other_branch(model, offset + o.start(), device):
                continue
            start, end = offset + o.start(), offset + o.end()
            vstart = offset + o.start("value")
            value = _expand(o.group("value"), env)
            names = tuple(m.group(1) or m.group(3) for m in _VAR.finditer(o.group("value")))
            overrides.append(Override(
                prefix=o.group("prefix") or "", key=o.group("key"), value=value,
                text=o.group(0) if isinstance(value, str) else value,
                span=source.span(start, end),
                key_span=source.span(offset + o.start("key"), offset + o.end("key")),
                value_span=source.span(vstart, end) if "$" not in o.group("value") else None,
                array=array if array and start < launch_start else None, variables=names,
                fed_by=tuple(assigned[n] for n in names if n in assigned)))
        if array and ")" in line:
            array = None
        offset += len(line.encode())
    launch = Launch(module="verl.trainer.main_ppo", overrides=overrides,
                    span=source.span(launch_start, len(source.data)))

    entries = {k: Resolved(key=k, value=v, origin=Origin(kind="default"))
               for k, v in (MEGATRON_080 if defaults is None else defaults).items()}
    for ov in overrides:
        if ov.prefix != "~":
            entries[ov.key] = Resolved(key=ov.key, value=ov.value,
                                       origin=Origin(kind="script", span=ov.span))
    for key, source_key in (REF_INHERITS if inherits is None else inherits).items():
        src = entries.get(source_key)
        if src is not None and (key not in entries or entries[key].origin.kind != "script"):
            entries[key] = Resolved(key=key, value=src.value,
                                    origin=Origin(kind="inherited", from_key=source_key),
                                    inherited_origin=src.origin)
    config = EffectiveConfig(version, "ppo_trainer", entries)
    scenario = Scenario(label=f"DEVICE={device}" if device else "",
                        pins=(("DEVICE", device),) if device else (), device=device)
    return LaunchContext(path="t.sh", source=source, model=model, settings=Settings(),
                         run=ScenarioRun(scenario=scenario, launches=[launch]), launch=launch,
                         release=SimpleNamespace(version=version),
                         analysis=LaunchAnalysis(config=config))


def run_rule(code: str, script: str, **kwargs):
    from verl_lint.rules.registry import get_rule

    rule = get_rule(code)
    assert rule is not None, code
    ctx = make_ctx(script, **kwargs)
    return ctx, list(rule().check(ctx))


def apply_fix(ctx: LaunchContext, fix) -> str:
    data = ctx.source.data
    for edit in sorted(fix.edits, key=lambda e: e.start, reverse=True):
        data = data[:edit.start] + edit.replacement.encode() + data[edit.end:]
    return data.decode()

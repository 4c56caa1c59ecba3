"""Which scenarios a script has, and the public `evaluate_script` entry point.

A script has one scenario per device value its device branches test (`case "${DEVICE}" in gpu)
… npu) …`, `if [ "$DEVICE" = npu ]`) or its DEVICE probe can produce
(`${DEVICE:-$(python3 -c 'import torch_npu' … && echo npu || echo gpu)}` → gpu and npu).
`--device`/`--set` pin the value: then there is exactly one scenario.
"""

from __future__ import annotations

from verl_lint.evaluate.interp import BudgetExceeded, Interpreter
from verl_lint.evaluate.model import Scenario, ScenarioRun
from verl_lint.shell.model import Case, If, ScriptModel

DEVICE_WORDS = frozenset({"gpu", "npu", "cuda", "cpu", "ascend", "xpu", "rocm", "mlu", "hpu",
                          "mps", "musa", "nvidia"})
_ALIASES = {"cuda": "gpu", "nvidia": "gpu", "ascend": "npu"}


def device_name(value: str | None) -> str | None:
    """The device a branch value names, canonical (`GPU`, `cuda`, `nvidia` → gpu; `ascend` →
    npu), or None when it names none. The one definition the scenarios and the rules share."""
    if not value:
        return None
    v = value.lower()
    return _ALIASES.get(v, v) if v in DEVICE_WORDS else None


def is_device_test(var: str | None, values) -> bool:
    """A `case`/`if` on `var` against `values` chooses the device: the variable is named like
    one (`DEVICE`, `NPU_DEVICE`) or a value names a device."""
    return var is not None and ("DEVICE" in var.upper() or any(map(device_name, values)))


def _is_glob(pattern: str) -> bool:
    return any(ch in pattern for ch in "*?[")


def device_branches(model: ScriptModel) -> tuple[str | None, list[str]]:
    """The device variable and the values its branches test, gpu and npu first."""
    found: dict[str, list[str]] = {}
    for s in model.statements:
        if isinstance(s, Case):
            var = s.subject_variable
            vals = [p for item in s.items for p in item.literal_patterns if not _is_glob(p)]
            if is_device_test(var, vals):
                found.setdefault(var, []).extend(vals)
        elif isinstance(s, If):
            for b in s.branches:
                c = b.condition
                if c is not None and c.variable and c.operand and c.operator in ("=", "==", "!=") \
                        and not _is_glob(c.operand):
                    if is_device_test(c.variable, [c.operand]):
                        found.setdefault(c.variable, []).append(c.operand)
    for a in model.assignments:
        # a probe's body is part of the value's raw text: most values lack "npu" or "gpu"
        if a.value is not None and "npu" in a.value.text and "gpu" in a.value.text and any(
                p.kind == "command" and Interpreter.is_device_probe(p.body or "")
                for p in a.value.expansions()):
            found.setdefault(a.name, []).extend(["gpu", "npu"])
    if not found:
        return None, []
    var = "DEVICE" if "DEVICE" in found else next(iter(found))
    vals = list(dict.fromkeys(found[var]))
    # the way through that no test names (`*)`, the `if` without else) runs too: with the
    # script's own default (`${DEVICE:-gpu}`), else, when only npu is tested, with gpu (verl's
    # default device; the other way round the untested device could be anything)
    default = _default_of(model, var)
    if default is not None:
        vals.append(default)
    elif "npu" in vals and "gpu" not in vals:
        vals.append("gpu")
    vals = list(dict.fromkeys(vals))
    vals.sort(key=lambda v: (v != "gpu", v != "npu"))  # stable: gpu, npu, then in order
    return var, vals


def _default_of(model: ScriptModel, var: str) -> str | None:
    """The literal default the script gives `var`: `${DEVICE:-gpu}` in a `case` subject or in
    `DEVICE=${DEVICE:-gpu}`."""
    words = [s.subject for s in model.statements if isinstance(s, Case)]
    words += [a.value for a in model.assignments if a.name == var and a.value is not None]
    for w in words:
        for p in w.pieces:
            if p.kind == "variable" and p.name == var and p.operator in (":-", "-") \
                    and p.argument is not None and p.argument.literal:
                return p.argument.literal
    return None


def _hardcoded(model: ScriptModel, var: str) -> str | None:
    """`DEVICE=npu` at top level, unconditionally: the script fixes the device itself."""
    for a in model.assignments:
        if a.name == var and not a.path and a.function is None and not a.conditional \
                and not a.command_prefix and a.value is not None and a.value.literal is not None:
            return a.value.literal
    return None


def infer_scenarios(model: ScriptModel, device: str | None = None,
                    pins: dict[str, str] | None = None) -> tuple[list[Scenario], str | None]:
    pins = dict(pins or {})
    var, values = device_branches(model)
    dvar = var or "DEVICE"
    if device is not None:
        pins[dvar] = device
    base = tuple(sorted(pins.items()))
    if dvar in pins:
        value = pins[dvar]
        label = f"{dvar}={value}" if var is not None else ""
        return [Scenario(label=label, pins=base, device=device_name(value) or value)], var
    if var is None or not values:
        return [Scenario(label="", pins=base)], var
    fixed = _hardcoded(model, var)
    if fixed is not None:
        return [Scenario(label="", pins=base, device=device_name(fixed) or fixed)], var
    return [Scenario(label=f"{var}={v}", pins=tuple(sorted({**pins, var: v}.items())),
                     device=device_name(v) or v, assumed=(var,)) for v in values], var


def evaluate_script(model: ScriptModel, *, device: str | None = None,
                    pins: dict[str, str] | None = None,
                    known_env: frozenset[str] = frozenset()) -> list[ScenarioRun]:
    """Interpret `model` once per scenario; never raises on any parsed script."""
    scenarios, var = infer_scenarios(model, device, pins)
    return [_run(model, sc, frozenset(known_env), var) for sc in scenarios]


def _run(model: ScriptModel, scenario: Scenario, known_env: frozenset[str],
         var: str | None) -> ScenarioRun:
    try:
        return Interpreter(model, scenario, known_env, var).run()
    except (RecursionError, BudgetExceeded):  # hostile nesting: nothing can be said about it
        return ScenarioRun(scenario=scenario, launches=[], var_uses=[])


__all__ = ["device_branches", "device_name", "evaluate_script", "infer_scenarios",
           "is_device_test"]

"""VL206 override-type-mismatch."""

from __future__ import annotations

from typing import Any, Iterable

from verl_lint.diagnostics import Diagnostic, Severity
from verl_lint.rules.base import LaunchContext, Rule
from verl_lint.rules.overrides._common import applied, defaults_of, is_plain, problems, report
from verl_lint.rules.registry import register
from verl_lint.verl import hydra_semantics as hs

# keys verl reads as "a string or a list" although the YAML default is a list
_STR_OR_LIST = frozenset({"trainer.logger"})
# a value of one of these types fits a default of the same type, whatever the annotation
# (`mismatch` finds nothing: tests/test_verl_fast_paths.py)
_SAME_TYPE_FITS = frozenset({int, float, bool, str})


def expected_type(default: Any, annotation: str | None) -> str | None:
    """"bool", "int", "float", "list", "dict", "str" or None (unknown / anything)."""
    if isinstance(default, bool):
        return "bool"
    if isinstance(default, int):
        return "int" if annotation is None or "float" not in annotation else "float"
    if isinstance(default, float):
        return "float"
    if isinstance(default, list):
        return "list"
    if isinstance(default, dict):
        return "dict"
    if isinstance(default, str):
        return "str"
    if default is None and annotation:
        a = annotation.replace(" ", "").replace("typing.", "")
        inner = a[len("Optional["):-1] if a.startswith("Optional[") else a
        return {"int": "int", "float": "float", "bool": "bool", "str": "str"}.get(inner)
    return None


def mismatch(value: Any, want: str, *, declared: bool = True) -> str | None:
    """Why `value` (as Hydra parsed it) cannot be a `want`, or None if it can. `declared`: the
    type comes from a dataclass annotation, not only from the YAML default's value."""
    if value is None:
        return None
    if value == "None" and want != "str":
        return "'None' is the string \"None\" in Hydra; write null for a null value"
    if want == "bool" and isinstance(value, str):
        return f"'{value}' is a string, not a boolean (true/false)"
    # a plain-YAML number may also take words verl reads itself (the SFT trainer's
    # `test_freq=after_each_epoch`): only a declared int/float refuses text
    if want in ("int", "float") and isinstance(value, (list, dict)) or (
            want in ("int", "float") and isinstance(value, str) and declared):
        shown = value if isinstance(value, str) else type(value).__name__
        return f"'{shown}' is not a number"
    # a YAML default of `0` says little: `entropy_coeff: 0` takes 0.001 unless a dataclass
    # declares the field an int
    if want == "int" and declared and isinstance(value, float) and not value.is_integer():
        return f"{value} is not an integer"
    if want == "list" and not isinstance(value, list):
        return "a single value where a list is expected (write [a,b])"
    if want == "dict" and not isinstance(value, dict):
        return "a single value where a mapping is expected"
    return None


@register
class OverrideTypeMismatch(Rule):
    """The override's value cannot have the type of the field it sets.

    ## What it does
    Compares each override's value, as Hydra parses it, with the type of verl's default (and the
    dataclass field annotation behind `_target_` nodes): text where a number or a boolean is
    expected, a single value where a list is expected, and `None` — which Hydra reads as the
    string "None"; null is `null`. It also reports list/dict values Hydra cannot merge. Where
    no dataclass declares the field (plain YAML), a numeric default says less: text and
    fractions pass there (verl's SFT trainer reads `test_freq=after_each_epoch` itself, and
    `entropy_coeff: 0` takes 0.001).

    ## Why is this bad?
    Hydra does not check types, and neither does verl when it builds its dataclasses
    (`hydra.utils.instantiate`): text where a number belongs fails when the value is first used,
    a truthy string `"Flase"` or the model path `"None"` runs silently wrong. A single value
    where a list or mapping belongs is a warning: whether anything fails depends on the code
    that reads it (verl's Megatron optimizer never reads `optim.betas` for Adam), but the value
    the author meant is lost either way.

    ## Example
    ```bash
    #!/usr/bin/env bash
    set -xeuo pipefail
    python3 -m verl.trainer.main_ppo \
        actor_rollout_ref.rollout.name=vllm \
        actor_rollout_ref.model.use_remove_padding=Ture \
        data.max_prompt_length=None
    ```

    ## Use instead
    ```bash
    #!/usr/bin/env bash
    set -xeuo pipefail
    python3 -m verl.trainer.main_ppo \
        actor_rollout_ref.rollout.name=vllm \
        actor_rollout_ref.model.use_remove_padding=True \
        data.max_prompt_length=1024
    ```

    ## References
    - Hydra override grammar (value types): https://hydra.cc/docs/advanced/override_grammar/basic/
    - verl dataclass configs: `verl/workers/config/`
    """

    code = "VL206"
    name = "override-type-mismatch"
    severity = Severity.ERROR
    summary = "the value cannot have the field's type (number, boolean, list, null)"
    scope = "launch"

    def check(self, ctx: LaunchContext) -> Iterable[Diagnostic]:
        yield from report(self, ctx, problems(ctx, self.code))
        default_of = defaults_of(ctx)
        for a in applied(ctx):
            if not a.existed or a.prefix not in ("", "++"):
                continue
            # most overrides: a value of the default's own scalar type, which fits; asked
            # first, as the tests below let every such value pass too
            default, annotation = default_of(a.key)
            if default is hs.ABSENT or (type(a.value) is type(default) and
                                        type(default) in _SAME_TYPE_FITS):
                continue
            if not is_plain(a.value) or a.key in _STR_OR_LIST or \
                    (isinstance(a.value, str) and "$" in a.value):
                continue
            want = expected_type(default, annotation)
            why = mismatch(a.value, want, declared=annotation is not None) if want else None
            if why is None and a.value == "None" and want is None and default is None:
                why = "'None' is the string \"None\" in Hydra; write null for a null value"
            if why is None:
                continue
            ov = a.override
            default_txt = "null" if default is None else repr(default)
            # verl builds its dataclasses with `instantiate`, which checks no types: a scalar
            # where a list belongs fails only if some reader iterates it (Megatron never reads
            # `optim.betas` for Adam), so the run may start with the value lost: a warning
            severity = Severity.WARNING if want in ("list", "dict") else None
            yield self.diagnostic(ov.value_span or ov.span,
                                  f"{a.key} expects {want or 'a value'} (verl "
                                  f"{ctx.release.version} default {default_txt}): {why}",
                                  severity=severity)

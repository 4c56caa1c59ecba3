"""VL108 device-case-without-fallback."""

from __future__ import annotations

import re
from typing import Iterable

from verl_lint.diagnostics import Diagnostic, Edit, Fix, Severity
from verl_lint.rules.base import Rule, ScriptContext
from verl_lint.rules.registry import register
from verl_lint.rules.shell._shell import device_cases, exits, fixed_before, line_start
from verl_lint.shell.model import Case, If, ScriptModel
from verl_lint.source import SourceText


def _rejects_unknown(model: ScriptModel, case: Case, var: str) -> bool:
    """No unknown device gets to `case`: an earlier top-level statement fixes the device
    (`DEVICE=npu`) or exits for the others (a `case "$DEVICE"` with an exiting `*)` branch, an
    `if` testing $DEVICE that exits)."""
    if fixed_before(model, case):
        return True
    mention = re.compile(r"\$\{?" + re.escape(var) + r"\b")
    for s in model.body:
        if s.span.start >= case.span.start:
            break
        if isinstance(s, Case) and s.subject_variable == var:
            if any(item.is_default and exits(item.body) for item in s.items):
                return True
        elif isinstance(s, If):
            for b in s.branches:
                if b.condition is not None and mention.search(b.condition.text) and exits(b.body):
                    return True
    return False


def _fallback_fix(source: SourceText, case: Case, var: str) -> Fix | None:
    """Insert `*) echo …; exit 1 ;;` before `esac`, indented like the other branches."""
    end = case.span.end
    if source.data[end - 4:end] != b"esac" or case.items[-1].terminator != ";;":
        return None
    esac_line = line_start(source, end - 4)
    if source.data[esac_line:end - 4].strip():
        return None  # `esac` shares its line with code: leave the layout to the author
    item = case.items[-1]
    item_indent = source.data[line_start(source, item.span.start):item.span.start].decode()
    body = item.body[0].span.start if item.body else None
    body_indent = (source.data[line_start(source, body):body].decode()
                   if body is not None and not source.data[line_start(source, body):body].strip()
                   else item_indent + "  ")
    if item_indent.strip():
        return None
    text = (f'{item_indent}*)\n{body_indent}echo "Unsupported {var}=${{{var}}}" >&2\n'
            f"{body_indent}exit 1\n{body_indent};;\n")
    return Fix(title="Add a `*)` branch that rejects unknown devices", applicability="unsafe",
               edits=(Edit(start=esac_line, end=esac_line, replacement=text),))


@register
class DeviceCaseWithoutFallback(Rule):
    """A `case "$DEVICE"` has no `*)` branch.

    ## What it does
    Reports a device `case` (its subject is a variable and its patterns are device names such as
    `gpu`, `npu`, `cuda`) without a `*)` branch. It stays quiet when an earlier `case` on the
    same variable has a `*)` branch that exits, or an earlier `if` testing the variable exits:
    then no unknown device gets this far. The (unsafe) fix adds
    `*) echo "Unsupported DEVICE=${DEVICE}" >&2; exit 1 ;;`.

    ## Why is this bad?
    A value the `case` does not list — `DEVICE=GPU`, `DEVICE=cuda`, a typo, an empty probe
    result — matches no branch, so the script goes on to the launch with neither branch's
    settings: no visible-device list, no device-specific overrides. The job starts and fails or
    misbehaves far from the cause.

    ## Example
    ```bash
    #!/usr/bin/env bash
    set -xeuo pipefail
    DEVICE=${DEVICE:-gpu}
    case "${DEVICE}" in
      gpu)
        export CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7
        ;;
      npu)
        export ASCEND_RT_VISIBLE_DEVICES=0,1,2,3,4,5,6,7
        ;;
    esac
    python3 -m verl.trainer.main_ppo trainer.n_gpus_per_node=8
    ```

    ## Use instead
    ```bash
    #!/usr/bin/env bash
    set -xeuo pipefail
    DEVICE=${DEVICE:-gpu}
    case "${DEVICE}" in
      gpu)
        export CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7
        ;;
      npu)
        export ASCEND_RT_VISIBLE_DEVICES=0,1,2,3,4,5,6,7
        ;;
      *)
        echo "Unsupported DEVICE=${DEVICE}" >&2
        exit 1
        ;;
    esac
    python3 -m verl.trainer.main_ppo trainer.n_gpus_per_node=8
    ```

    ## Fix safety
    Unsafe: the added `*)` branch makes a device no branch names stop the script, where
    today it runs on with the settings before the `case`.

    ## References
    - [Bash reference manual: Conditional Constructs (`case`)](https://www.gnu.org/software/bash/manual/bash.html#Conditional-Constructs)
    - [ShellCheck SC2249: consider adding a default `*)` case](https://www.shellcheck.net/wiki/SC2249)
    """

    code = "VL108"
    name = "device-case-without-fallback"
    severity = Severity.INFO
    summary = "a `case` on the device has no `*)` branch for unknown devices"
    scope = "script"
    fixable = True

    def check(self, ctx: ScriptContext) -> Iterable[Diagnostic]:
        for case in device_cases(ctx.model):
            var = case.subject_variable
            if case.has_default or var is None or _rejects_unknown(ctx.model, case, var):
                continue
            names = [f"`{p.text}`" for item in case.items for p in item.patterns]
            handled = " or ".join([", ".join(names[:-1]), names[-1]] if len(names) > 1 else names)
            yield self.diagnostic(
                case.subject.span,
                f"`case {case.subject.text}` has no `*)` branch: a {var} other than {handled} "
                "(a typo, `GPU`, an empty probe result) runs the launch with neither branch's "
                "settings",
                help="add a `*)` branch that prints the supported values and exits",
                fix=_fallback_fix(ctx.source, case, var),
            )

"""VL109 branch-duplicated-assignment."""

from __future__ import annotations

import re
from typing import Iterable

from verl_lint.diagnostics import Diagnostic, Edit, Fix, Label, Severity
from verl_lint.rules.base import Rule, ScriptContext
from verl_lint.rules.registry import register
from verl_lint.rules.shell._shell import branch_label, device_cases, exits, line_start
from verl_lint.shell.model import Assignment, Case, children
from verl_lint.source import SourceText


# device-stack variables in every branch are a copy-paste slip (VL406), not a shared value
_DEVICE_ENV = ("CUDA_", "NCCL_", "NVIDIA_", "ASCEND_", "HCCL_", "PYTORCH_NPU_", "VLLM_ASCEND_",
               "HIP_", "ROCR_", "HSA_")


def _assigned_inside(case: Case) -> set[str]:
    out: set[str] = set()
    for item in case.items:
        _add_assigned(item.body, out)
    return out


def _add_assigned(stmts, out: set[str]) -> None:
    for s in stmts:
        if isinstance(s, Assignment):
            out.add(s.name)
        for child in children(s):
            _add_assigned(child, out)


def _scalars(body) -> dict[str, list[Assignment]]:
    """Top-level `X=v` / `export X=v` of a branch body, by name."""
    out: dict[str, list[Assignment]] = {}
    for s in body:
        if isinstance(s, Assignment) and s.value is not None and s.index is None \
                and not s.append and not s.command_prefix and not s.conditional:
            out.setdefault(s.name, []).append(s)
    return out


def _depends_on(value, names: set[str]) -> bool:
    """The value may differ per branch: a command substitution, or a name a branch assigns
    (`$X`, or a bare `X` inside `$((…))`)."""
    for p in value.expansions():
        if p.kind in ("command", "process") or p.name in names:
            return True
        if p.kind == "arithmetic" and names & set(re.findall(r"[A-Za-z_]\w*", p.body or "")):
            return True
    return False


def _whole_line(source: SourceText, a: Assignment) -> tuple[int, int] | None:
    """Bytes of the line holding only `a` (newline included), else None."""
    start = line_start(source, a.span.start)
    end = source.data.find(b"\n", a.span.end)
    end = len(source.data) if end < 0 else end + 1
    if source.data[start:a.span.start].strip() or source.data[a.span.end:end].strip():
        return None
    return start, end


def _hoist(source: SourceText, case: Case, found: list[Assignment]) -> Fix | None:
    lines = [_whole_line(source, a) for a in found]
    head = line_start(source, case.span.start)
    indent = source.data[head:case.span.start]
    if any(r is None for r in lines) or indent.strip():
        return None
    text = indent.decode() + source.slice(found[0].span) + "\n"
    edits = [Edit(start=head, end=head, replacement=text)]
    edits += [Edit(start=a, end=b, replacement="") for a, b in lines]  # type: ignore[misc]
    return Fix(title=f"Hoist `{source.slice(found[0].span)}` above the case",
               applicability="unsafe", edits=tuple(edits))


@register
class BranchDuplicatedAssignment(Rule):
    """Every branch of a device `case` assigns the same variable the same value.

    ## What it does
    Reports a variable that every branch of a device `case "$DEVICE"` (the branches that go on;
    a `*)` branch that exits does not count) assigns, at the branch's top level, with the same
    text — and that text does not depend on anything the branches set. The (unsafe) fix moves
    one copy above the `case` and deletes the others.

    ## Why is this bad?
    The value is not device-specific, but it is written once per device. The next edit changes
    one copy and not the other, and the gpu and npu runs silently diverge (a different batch
    size or model path on one device). One assignment above the `case` says what is shared.

    ## Example
    ```bash
    #!/usr/bin/env bash
    set -xeuo pipefail
    DEVICE=${DEVICE:-gpu}
    case "${DEVICE}" in
      gpu)
        export CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7
        TRAIN_BATCH_SIZE=256
        ;;
      npu)
        export ASCEND_RT_VISIBLE_DEVICES=0,1,2,3,4,5,6,7
        TRAIN_BATCH_SIZE=256
        ;;
      *)
        exit 1
        ;;
    esac
    python3 -m verl.trainer.main_ppo data.train_batch_size=${TRAIN_BATCH_SIZE}
    ```

    ## Use instead
    ```bash
    #!/usr/bin/env bash
    set -xeuo pipefail
    DEVICE=${DEVICE:-gpu}
    TRAIN_BATCH_SIZE=256
    case "${DEVICE}" in
      gpu)
        export CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7
        ;;
      npu)
        export ASCEND_RT_VISIBLE_DEVICES=0,1,2,3,4,5,6,7
        ;;
      *)
        exit 1
        ;;
    esac
    python3 -m verl.trainer.main_ppo data.train_batch_size=${TRAIN_BATCH_SIZE}
    ```

    ## Fix safety
    Unsafe: hoisting the assignment above the `case` changes when it runs (before the
    branches rather than inside each); review that nothing between depends on the order.

    ## References
    - [Bash reference manual: Conditional Constructs (`case`)](https://www.gnu.org/software/bash/manual/bash.html#Conditional-Constructs)
    """

    code = "VL109"
    name = "branch-duplicated-assignment"
    severity = Severity.INFO
    summary = "every device branch assigns the same value; hoist it above the `case`"
    scope = "script"
    fixable = True

    def check(self, ctx: ScriptContext) -> Iterable[Diagnostic]:
        for case in device_cases(ctx.model):
            yield from self._case(ctx.source, case)

    def _case(self, source: SourceText, case: Case) -> Iterable[Diagnostic]:
        live = [k for k, item in enumerate(case.items) if not exits(item.body)]
        if len(live) < 2 or any(item.terminator not in (";;", "") for item in case.items):
            return
        per_branch = [_scalars(case.items[k].body) for k in live]
        inside = _assigned_inside(case)
        for name, first in per_branch[0].items():
            found = [branch.get(name, []) for branch in per_branch]
            if any(len(f) != 1 for f in found):
                continue
            found_one = [f[0] for f in found]
            texts = {(a.declared_by, a.value.text) for a in found_one}
            value = found_one[0].value
            if len(texts) != 1 or _depends_on(value, inside) or name.startswith(_DEVICE_ENV):
                continue
            yield self.diagnostic(
                first[0].name_span,
                f"every device branch of `case {case.subject.text}` sets "
                f"`{source.slice(first[0].span)}`: the value is the same for every device",
                labels=[Label(span=a.name_span, message=f"also set in {branch_label(case, k)}")
                        for a, k in zip(found_one[1:], live[1:])],
                help="assign it once above the `case`",
                fix=_hoist(source, case, found_one),
            )

"""VL406 device-env-mismatch — a Python rule of the knowledge base.

Why not YAML: the YAML conditions read one launch's effective config, while most of this rule
is about shell variables exported inside a device branch of a `case`/`if` (the ScriptModel),
which the effective config does not carry. The part that is about the config
(`trainer.device=npu` before 0.7.0) reuses the YAML rules' fix placement.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable, Iterator

from verl_lint.diagnostics import Diagnostic, Edit, Fix, Severity
from verl_lint.rules.base import Rule
from verl_lint.rules.knowledge.conditions import normalize
from verl_lint.rules.knowledge.fixes import (
    build_fix, describe_origin, value_span,
)
from verl_lint.rules.knowledge.plain import FixSpec
from verl_lint.rules.origin import script_span
from verl_lint.rules.registry import register
from verl_lint.evaluate.scenarios import device_name
from verl_lint.rules.shell._shell import device_blocks
from verl_lint.shell.model import Case
from verl_lint.verl.versions import in_range

if TYPE_CHECKING:
    from verl_lint.rules.base import LaunchContext
    from verl_lint.shell.model import Assignment

# (variable or prefix*, the device it belongs to, what the other device uses instead)
# The allocator settings: torch_npu's caching allocator reads only PYTORCH_NPU_ALLOC_CONF
# (torch_npu NPUAllocatorConfig.h), CUDA's only PYTORCH_CUDA_ALLOC_CONF.
_FOREIGN = {
    "npu": (("CUDA_VISIBLE_DEVICES", "ASCEND_RT_VISIBLE_DEVICES"), ("NCCL_*", "HCCL_*"),
            ("PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_NPU_ALLOC_CONF")),
    "gpu": (("ASCEND_RT_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES"), ("HCCL_*", "NCCL_*"),
            ("PYTORCH_NPU_ALLOC_CONF", "PYTORCH_CUDA_ALLOC_CONF"),
            ("ASCEND_*", None), ("PYTORCH_NPU_*", None), ("VLLM_ASCEND_*", None)),
}
_VENDOR = {"npu": "Ascend NPU", "gpu": "NVIDIA GPU"}


def _match(name: str, pattern: str) -> bool:
    return name.startswith(pattern[:-1]) if pattern.endswith("*") else name == pattern


@register
class DeviceEnvMismatch(Rule):
    """The other device's environment in a device branch, or an NPU run without trainer.device.

    ## What it does
    In a device branch (`case "$DEVICE" in gpu) … npu) …`, or `if [ "$DEVICE" = npu ]`), reports
    environment variables of the other vendor's stack: `CUDA_VISIBLE_DEVICES`, `NCCL_*` or
    `PYTORCH_CUDA_ALLOC_CONF` in the npu branch; `ASCEND_RT_VISIBLE_DEVICES`, `HCCL_*`,
    `ASCEND_*`, `PYTORCH_NPU_*` (`PYTORCH_NPU_ALLOC_CONF`) or `VLLM_ASCEND_*` in the gpu
    branch. `VLLM_ATTENTION_BACKEND` is not reported on NPU: vllm-ascend's platform picks its
    own attention backend whatever it says, and verl's own Ascend examples set it. On verl releases before 0.7.0 it also reports an NPU
    scenario whose effective `trainer.device` is not `npu`.

    ## Why is this bad?
    The branch was copied from the other device and not adapted: Ascend ignores
    `CUDA_VISIBLE_DEVICES` (it reads `ASCEND_RT_VISIBLE_DEVICES`) and HCCL ignores `NCCL_*`, so
    the run uses every device, or the wrong timeouts and buffers; torch_npu's allocator reads
    `PYTORCH_NPU_ALLOC_CONF` only, so `expandable_segments`/`max_split_size_mb` given as
    `PYTORCH_CUDA_ALLOC_CONF` never take effect (verl's NPU scripts use the NPU name). Before verl 0.7.0, verl did not
    detect `torch_npu` by itself: without `trainer.device=npu` an NPU job starts on `cuda` and
    fails.

    ## Example
    ```bash
    #!/usr/bin/env bash
    # verl==0.8.0
    set -xeuo pipefail
    DEVICE=${DEVICE:-gpu}
    case "${DEVICE}" in
      gpu)
        export CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7
        ;;
      npu)
        export CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7
        ;;
      *)
        exit 1
        ;;
    esac
    python3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.name=vllm
    ```

    ## Use instead
    ```bash
    #!/usr/bin/env bash
    # verl==0.8.0
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
        exit 1
        ;;
    esac
    python3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.name=vllm
    ```

    ## Fix safety
    Unsafe: renaming the other device's variable changes the environment the job runs with.
    Setting `trainer.device=npu` is safe when it is added in the NPU branch, unsafe when it
    would change another scenario.

    ## References
    - verl Ascend quick start: `ASCEND_RT_VISIBLE_DEVICES`, HCCL settings
    - torch_npu `NPUAllocatorConfig.h` (`getenv("PYTORCH_NPU_ALLOC_CONF")`); verl
      `examples/grpo_trainer/run_qwen3_30b_veomni.sh` (npu branch: `PYTORCH_NPU_ALLOC_CONF`)
    - verl 0.7.0 detects `torch_npu` and sets `trainer.device` itself
    - https://github.com/verl-project/verl/pull/6318 (seed 002: per-device environment blocks)
    """

    code = "VL406"
    name = "device-env-mismatch"
    severity = Severity.WARNING
    summary = ("Environment of the other device's stack in a device branch, or NPU without "
               "trainer.device=npu before verl 0.7.0")
    scope = "launch"
    fixable = True

    def check(self, ctx: "LaunchContext") -> Iterable[Diagnostic]:
        device = ctx.run.scenario.device
        if device not in _FOREIGN:
            return
        for assignment, branch_device in self._branch_assignments(ctx):
            if branch_device != device:
                continue
            for pattern, instead in _FOREIGN[device]:
                if _match(assignment.name, pattern):
                    yield self._env_finding(ctx, assignment, device, pattern, instead)
                    break
        yield from self._trainer_device(ctx, device)

    # ---- environment in the branch -----------------------------------------------------------

    @staticmethod
    def _branch_assignments(ctx: "LaunchContext") -> Iterator[tuple["Assignment", str]]:
        """Assignments before the launch inside a device branch that names one device."""
        spans = []
        for block in device_blocks(ctx.model):
            if block.span.start > ctx.launch.span.start:
                continue
            if isinstance(block, Case):
                for item in block.items:
                    devices = set(map(device_name, item.literal_patterns))
                    devices.discard(None)
                    if len(devices) == 1:
                        spans.append((item.span, devices.pop()))
            else:
                for branch in block.branches:
                    c = branch.condition
                    dev = device_name(c.operand) if c else None
                    if dev and c.operator in ("=", "=="):
                        spans.append((branch.span, dev))
        for a in ctx.model.assignments:
            if a.array is None and a.span.start < ctx.launch.span.start:
                for span, dev in spans:
                    if span.contains(a.span):
                        yield a, dev
                        break

    def _env_finding(self, ctx: "LaunchContext", a: "Assignment", device: str, pattern: str,
                     instead: str | None) -> Diagnostic:
        other = _VENDOR["gpu" if device == "npu" else "npu"]
        what = pattern if pattern.endswith("*") else "it"
        message = (f"`{a.name}` is set in the {device} branch, but {what} is for {other} only: "
                   f"the {_VENDOR[device]} run ignores it")
        if instead:
            message += f"; use {instead}" if instead.endswith("*") else f"; use `{instead}`"
        fix = None
        if instead and not instead.endswith("*"):
            fix = Fix(title=f"Rename {a.name} to {instead}", applicability="unsafe",
                      edits=(Edit(start=a.name_span.start, end=a.name_span.end,
                                  replacement=instead),))
        return self.diagnostic(a.name_span, message, fix=fix)

    # ---- trainer.device before 0.7.0 --------------------------------------------------------

    def _trainer_device(self, ctx: "LaunchContext", device: str) -> Iterator[Diagnostic]:
        config = ctx.config
        if device != "npu" or config is None or not in_range(ctx.release.version, "<0.7.0"):
            return
        r = config.get("trainer.device")
        value = normalize(r.value) if r is not None else None
        if r is None or not isinstance(value, str) or value == "npu":
            return
        word = script_span(r)
        span = value_span(ctx, word) if word is not None else ctx.head_span()
        fix = build_fix(ctx, FixSpec(set={"trainer.device": "npu"}), device_specific=True)
        yield self.diagnostic(
            span, f"`trainer.device` is {value} ({describe_origin(ctx, r)}) in the npu "
                  f"scenario: verl {ctx.release.version} does not detect NPUs by itself (from "
                  f"0.7.0 it does); set trainer.device=npu", fix=fix)

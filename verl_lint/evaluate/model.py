"""What the evaluator produces: scenarios, and per scenario the launches with their overrides.

These types are the contract between `evaluate/` and everything after it (`verl/`, `rules/`).
"""

from __future__ import annotations

from typing import Literal

from dataclasses import field

from verl_lint.records import record, shared_dataclass
from verl_lint.source import Span


# The variable that makes each accelerator's devices visible (Ray reads them per device type).
VISIBLE_DEVICE_VARS: dict[str, tuple[str, ...]] = {
    "gpu": ("CUDA_VISIBLE_DEVICES",),
    "npu": ("ASCEND_RT_VISIBLE_DEVICES", "ASCEND_VISIBLE_DEVICES"),
}
ALL_VISIBLE_DEVICE_VARS = tuple(n for names in VISIBLE_DEVICE_VARS.values() for n in names)


@record
class Unknown:
    """A value the script cannot know statically. Rules skip on it; they never guess."""

    reason: str

    def __str__(self) -> str:  # shown in `show` tables
        return f"<unknown: {self.reason}>"


@record
class Anchored(Unknown):
    """A path only known at run time that starts at a known folder: `$(pwd)` / `$PWD` (where the
    user starts the script: `cwd`) or `$(dirname "$0")` / `$(cd "$(dirname "$0")" && pwd)` (the
    script's own folder: `script_dir`), followed by known text (`rest`, e.g. `/examples/config`).
    Still an Unknown to every rule; the verl analysis resolves it against disk."""

    anchor: Literal["cwd", "script_dir"]
    rest: str = ""


Value = str | Unknown


@record
class Scenario:
    """One way the script can run: a device branch, or what the user pinned with --device/--set."""

    label: str  # "DEVICE=npu"; "" when the script has a single scenario
    pins: tuple[tuple[str, str], ...] = ()  # variable values fixed for this scenario
    device: str | None = None  # "gpu" / "npu" when known
    # pins the scenario assumes (the device value a branch tests) rather than the user's
    # --device/--set: the caller must export them, nothing else gives them a value
    assumed: tuple[str, ...] = ()


OverridePrefix = Literal["", "+", "++", "~"]


@record
class Override:
    """One Hydra override word of a launch, after shell expansion."""

    prefix: OverridePrefix = ""
    key: str  # without prefix; may carry a package (`actor@actor_rollout_ref.actor`)
    value: Value | None = None  # None for `~key` without `=`
    text: Value  # the whole word as Hydra receives it (or Unknown)
    span: Span  # the word (or array element) in the script
    key_span: Span  # the key's characters when literal in the script, else == span
    value_span: Span | None = None  # the value's characters when literal, else None
    array: str | None = None  # the array this element came from (`ACTOR`), if any
    fed_by: tuple[Span, ...] = ()  # assignments whose values flowed into this word
    variables: tuple[str, ...] = ()  # variable names expanded inside the value (`TP`, `GEN_TP`)


@record
class Passthrough:
    """A place where the caller (or an unknown expansion) may add more overrides: `"$@"`."""

    span: Span
    reason: str
    position: int = 0  # how many of the launch's overrides come before it (argv order)


@shared_dataclass(slots=True, kw_only=True)  # filled in while the command is read: not a record
class Launch:
    """One `python3 -m verl.…` (or torchrun / ray job submit / uv run) invocation."""

    module: str | None = None  # `verl.trainer.main_ppo`
    script: str | None = None  # `verl/trainer/main_ppo.py` when run as a path
    launcher: str = "python"  # python / torchrun / ray / uv / …
    config_path: Value | None = None
    config_name: Value | None = None
    config_name_span: Span | None = None
    config_dirs: list[Value] = field(default_factory=list)  # `--config-dir`: more to search
    overrides: list[Override] = field(default_factory=list)
    passthrough: list[Passthrough] = field(default_factory=list)
    span: Span  # the whole command
    # torchrun's own options (`--nproc_per_node=8` → {"nproc_per_node": "8"}, dashes as `_`);
    # None when the launch does not go through torchrun; key "*" = an unknown word among them
    torchrun_options: dict[str, Value] | None = None

    @property
    def world_size(self) -> int | Unknown | None:
        """How many processes torchrun starts: `--nproc_per_node` × `--nnodes` (torchrun's
        defaults: 1 and 1). None without torchrun; Unknown when an option is not a known
        number (`--nproc_per_node=gpu`, an elastic `--nnodes=1:4`, `$DIST_ARGS`)."""
        opts = self.torchrun_options
        if opts is None:
            return None
        if "*" in opts:
            return Unknown(reason=f"torchrun options only known at run time: {opts['*']}")
        size = 1
        for name in ("nproc_per_node", "nnodes"):
            value = opts.get(name, "1")
            if isinstance(value, str) and ":" in value and name == "nnodes":
                low, _, high = value.partition(":")
                value = low if low == high else value
            if not (isinstance(value, str) and value.strip().isdigit()):
                return value if isinstance(value, Unknown) else Unknown(reason=
                    f"torchrun --{name}={value} is not a fixed number")
            size *= int(value)
        return size


@record
class VarUse:
    """An expansion of a variable, with whether it is assigned on every path reaching it."""

    name: str
    span: Span
    has_default: bool  # `${X:-d}` and friends
    state: Literal["set", "unset", "maybe", "environment"]
    note: str = ""  # e.g. "only the gpu branch assigns it"
    nounset: bool = False  # `set -u` in force at this expansion
    required: bool = False  # `${X:?message}` / `${X?}`: bash stops here when X is unset


@shared_dataclass(slots=True, kw_only=True)  # filled in while the script is interpreted
class ScenarioRun:
    """The outcome of interpreting the script once under one scenario."""

    scenario: Scenario
    launches: list[Launch] = field(default_factory=list)
    var_uses: list[VarUse] = field(default_factory=list)
    nounset: bool = False  # `set -u` in force at the launch
    visible_devices: Value | None = None  # CUDA_/ASCEND_RT_VISIBLE_DEVICES at the launch
    visible_devices_from: str | None = None  # the variable that set `visible_devices`

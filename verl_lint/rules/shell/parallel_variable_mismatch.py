"""VL110 parallel-variable-mismatch."""

from __future__ import annotations

import re
from typing import Iterable

from verl_lint.diagnostics import Diagnostic, Severity
from verl_lint.evaluate.model import Override
from verl_lint.rules.base import Rule, ScenarioContext
from verl_lint.rules.registry import register
from verl_lint.rules.shell._shell import all_words, clean_until
from verl_lint.shell.model import ScriptModel
from verl_lint.source import Span

# the last key segment → the parallel dimension it sizes
KEY_DIMENSION = {
    "tensor_model_parallel_size": "tensor",
    "tensor_parallel_size": "tensor",
    "pipeline_model_parallel_size": "pipeline",
    "virtual_pipeline_model_parallel_size": "virtual pipeline",
    "expert_model_parallel_size": "expert",
    "expert_parallel_size": "expert",
    "expert_tensor_parallel_size": "expert tensor",
    "context_parallel_size": "context",
    "ulysses_sequence_parallel_size": "sequence",
    "data_parallel_size": "data",
}
# a word of a variable name → the dimension it names (`GEN_TP`, `ROLLOUT_EP_SIZE`, `train_pp`)
NAME_DIMENSION = {
    "tp": "tensor", "tensor": "tensor", "pp": "pipeline", "pipeline": "pipeline",
    "vpp": "virtual pipeline", "ep": "expert", "expert": "expert", "etp": "expert tensor",
    "cp": "context", "context": "context", "sp": "sequence", "ulysses": "sequence",
    "dp": "data",
}
# names a key may legitimately take: ETP commonly follows TP (verl's default when unset)
COMPATIBLE = {("expert tensor", "tensor")}


def variable_dimension(name: str) -> str | None:
    """The one dimension a variable name is about, or None (no dimension word, or several)."""
    words = [w for w in re.split(r"_+", name.lower()) if w]
    dims = {NAME_DIMENSION[w] for w in words if w in NAME_DIMENSION}
    if "expert" in dims and "tensor" in dims:  # EXPERT_TENSOR_PARALLEL, EXPERT_TP
        dims = {"expert tensor"}
    return dims.pop() if len(dims) == 1 else None


def _variable_span(model: ScriptModel, ov: Override, name: str) -> Span:
    """The `$NAME` inside the override's word when it is in the script, else the word."""
    for w in all_words(model):
        if w.span.start == ov.span.start and w.span.end == ov.span.end:
            for p in w.variables():
                if p.name == name:
                    return p.span
    return ov.value_span or ov.span


@register
class ParallelVariableMismatch(Rule):
    """A parallel-size key gets a variable named for another parallel dimension.

    ## What it does
    Reports a parallelism override whose value is a single variable named for a different
    dimension: `expert_model_parallel_size=$RM_TP`, `tensor_model_parallel_size=${PP}`,
    `ulysses_sequence_parallel_size=$CP`. Dimensions are read from the words of the name
    (`TP`/`TENSOR`, `PP`/`PIPELINE`, `VPP`, `EP`/`EXPERT`, `ETP`, `CP`/`CONTEXT`, `SP`/`ULYSSES`,
    `DP`); a name with no dimension word (`NGPUS`) or several is not judged, and
    `expert_tensor_parallel_size=$TP` is accepted (it is verl's own default).

    ## Why is this bad?
    Parallel sizes are copied between roles and dimensions in long scripts, and a wrong
    variable often still divides the device count, so nothing fails: the model is sharded the
    wrong way, memory or throughput is off, or the run fails only on the larger cluster.

    ## Example
    ```bash
    #!/usr/bin/env bash
    set -xeuo pipefail
    TP=4
    PP=2
    EP=8
    python3 -m verl.trainer.main_ppo --config-name=ppo_megatron_trainer \\
        actor_rollout_ref.actor.megatron.tensor_model_parallel_size=${TP} \\
        actor_rollout_ref.actor.megatron.pipeline_model_parallel_size=${PP} \\
        actor_rollout_ref.actor.megatron.expert_model_parallel_size=${TP}
    ```

    ## Use instead
    ```bash
    #!/usr/bin/env bash
    set -xeuo pipefail
    TP=4
    PP=2
    EP=8
    python3 -m verl.trainer.main_ppo --config-name=ppo_megatron_trainer \\
        actor_rollout_ref.actor.megatron.tensor_model_parallel_size=${TP} \\
        actor_rollout_ref.actor.megatron.pipeline_model_parallel_size=${PP} \\
        actor_rollout_ref.actor.megatron.expert_model_parallel_size=${EP}
    ```

    ## References
    - [verl docs: Megatron-LM backend, parallelism options](https://verl.readthedocs.io/en/latest/workers/megatron_workers.html)
    - [Megatron-Core parallelism guide](https://docs.nvidia.com/megatron-core/developer-guide/latest/user-guide/index.html)
    """

    code = "VL110"
    name = "parallel-variable-mismatch"
    severity = Severity.INFO
    summary = "a parallel-size key gets a variable named for another dimension"
    scope = "scenario"

    def check(self, ctx: ScenarioContext) -> Iterable[Diagnostic]:
        cutoff = clean_until(ctx.model)
        for launch in ctx.run.launches:
            for ov in launch.overrides:
                # the cheap tests first: most overrides take no variable, or size no parallelism
                # (every KEY_DIMENSION key ends in `parallel_size`)
                if len(ov.variables) != 1 or not ov.key.endswith("parallel_size") \
                        or ov.span.end > cutoff:
                    continue
                key_dim = KEY_DIMENSION.get(ov.key.rsplit(".", 1)[-1])
                if key_dim is None:
                    continue
                name = ov.variables[0]
                var_dim = variable_dimension(name)
                if var_dim is None or var_dim == key_dim or (key_dim, var_dim) in COMPATIBLE:
                    continue
                yield self.diagnostic(
                    _variable_span(ctx.model, ov, name),
                    f"`{ov.key}` sets the {key_dim} parallel size from `${name}`, a variable "
                    f"named for {var_dim} parallelism",
                    help=f"use the {key_dim}-parallel variable, or rename `{name}` if it is "
                         "meant for this dimension")

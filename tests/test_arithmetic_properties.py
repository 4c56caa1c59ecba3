"""Property: for random sizes each VL3xx rule fires exactly when verl's stated condition
(constraints.json, re-written here independently of the rule code) is violated."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from arithmetic_support import A, FSDP, MEGATRON, R, config, lint
from verl_lint.rules.arithmetic.batch_size import BatchSizeNotDivisible as VL303
from verl_lint.rules.arithmetic.device_count import DeviceCountMismatch as VL307
from verl_lint.rules.arithmetic.micro_batch import MicroBatchConflict as VL304
from verl_lint.rules.arithmetic.model_parallel import ModelParallelDoesNotDivide as VL301
from verl_lint.rules.arithmetic.rollout_parallel import RolloutParallelMismatch as VL302
from verl_lint.rules.arithmetic.sequence_parallel import (
    SequenceParallelNeedsRemovePadding as VL306,
)
from verl_lint.rules.arithmetic.token_budget import TokenBudgetTooSmall as VL305

small = st.integers(min_value=1, max_value=8)
nodes = st.integers(min_value=1, max_value=6)
per_node = st.sampled_from([1, 2, 4, 6, 8, 16])
MEG = f"{A}.megatron"


def _script(values: dict) -> dict:
    return {key: (value, line) for line, (key, value) in enumerate(values.items(), start=3)}


@given(nnodes=nodes, gpn=per_node, tp=small, pp=small, cp=st.integers(1, 3),
       ep=st.integers(1, 16), etp=st.one_of(st.none(), st.integers(1, 4)))
def test_vl301_megatron_grid(nnodes, gpn, tp, pp, cp, ep, etp):
    cfg = config(MEGATRON, _script({
        "trainer.nnodes": nnodes, "trainer.n_gpus_per_node": gpn,
        f"{MEG}.tensor_model_parallel_size": tp, f"{MEG}.pipeline_model_parallel_size": pp,
        f"{MEG}.context_parallel_size": cp, f"{MEG}.expert_model_parallel_size": ep,
        f"{MEG}.expert_tensor_parallel_size": etp}))
    n_gpus = nnodes * gpn
    # Megatron-Core: world % (tp*pp*cp) == 0 and world % (ep*etp*pp) == 0, etp None -> tp.
    violated = n_gpus % (tp * pp * cp) != 0 or n_gpus % (ep * (etp or tp) * pp) != 0
    assert bool(lint(VL301, cfg)) == violated


@given(nnodes=nodes, gpn=per_node, tp=small, dp=small, pp=st.integers(1, 2),
       ep=st.sampled_from([1, 2, 4, 8, 16, 32]),
       name=st.sampled_from(["vllm", "sglang", "trtllm"]),
       version=st.sampled_from(["0.6.1", "0.9.1"]))
def test_vl302_rollout_grid(nnodes, gpn, tp, dp, pp, ep, name, version):
    cfg = config(FSDP, _script({
        "trainer.nnodes": nnodes, "trainer.n_gpus_per_node": gpn,
        f"{R}.tensor_model_parallel_size": tp, f"{R}.data_parallel_size": dp,
        f"{R}.pipeline_model_parallel_size": pp, f"{R}.expert_parallel_size": ep,
        f"{R}.name": name}), version=version, **{f"{R}.n_gpus_per_node": gpn})
    world = nnodes * gpn
    replica = tp * dp * pp
    node = min(gpn, replica)
    new = version >= "0.7.0"
    violated = (
        world % replica != 0  # rollout_world_divides
        or (name != "trtllm" and ep > 1 and ep != tp * dp)  # rollout_ep_eq_tp_dp
        or (new and pp > 1)  # rollout_pp_unsupported (vllm, sglang, trtllm)
        or replica % node != 0  # rollout_replica_nodes
        or (name == "vllm" and dp > 1 and node % tp != 0)  # vllm_dp_tp_per_node
    )
    assert bool(lint(VL302, cfg)) == violated


@given(nnodes=st.integers(1, 2), gpn=st.sampled_from([2, 4, 8]),
       tbs=st.integers(1, 96), n=st.integers(1, 8), mini=st.integers(1, 96),
       micro=st.integers(1, 8), lp_micro=st.integers(1, 8))
def test_vl303_fsdp_engine_workers(nnodes, gpn, tbs, n, mini, micro, lp_micro):
    cfg = config(FSDP, _script({
        "trainer.nnodes": nnodes, "trainer.n_gpus_per_node": gpn, "data.train_batch_size": tbs,
        f"{R}.n": n, f"{A}.ppo_mini_batch_size": mini, f"{A}.ppo_micro_batch_size_per_gpu": micro,
        f"{R}.log_prob_micro_batch_size_per_gpu": lp_micro}))
    n_gpus = nnodes * gpn
    dp = n_gpus  # FSDP without Ulysses
    violated = (
        (tbs * n) % n_gpus != 0  # real_train_batch_divisible
        or tbs < mini  # actor_train_ge_mini
        or (mini * n) % dp != 0  # mini_batch_divides_dp
        or ((mini * n) // dp) % micro != 0  # micro_divides_local_mini (update)
        or ((tbs * n) % dp == 0 and ((tbs * n) // dp) % lp_micro != 0)  # (log-prob pass)
    )
    assert bool(lint(VL303, cfg)) == violated


@given(gpn=st.sampled_from([2, 4, 8]), sp=st.sampled_from([1, 2]), tbs=st.integers(1, 96),
       n=st.integers(1, 8), mini=st.integers(1, 96), micro=st.integers(1, 8))
def test_vl303_fsdp_legacy_workers(gpn, sp, tbs, n, mini, micro):
    cfg = config(FSDP, _script({
        "trainer.n_gpus_per_node": gpn, "data.train_batch_size": tbs, f"{R}.n": n,
        f"{A}.ppo_mini_batch_size": mini, f"{A}.ppo_micro_batch_size_per_gpu": micro,
        f"{A}.ulysses_sequence_parallel_size": sp}),
        version="0.6.1", trainer__use_legacy_worker_impl="auto")
    dp = gpn // sp
    normalized = (mini * n) // dp  # legacy_fsdp_mini_normalize: floor division
    violated = (
        (tbs * n) % gpn != 0  # real_train_batch_divisible
        or tbs < mini  # actor_train_ge_mini
        or normalized == 0
        or normalized % micro != 0
    )
    assert bool(lint(VL303, cfg)) == violated


@given(nnodes=st.integers(1, 2), gpn=st.sampled_from([4, 8, 16]), tp=st.sampled_from([1, 2, 4]),
       pp=st.sampled_from([1, 2]), tbs=st.integers(1, 64), n=st.integers(1, 8),
       mini=st.integers(1, 64), micro=st.integers(1, 4))
def test_vl303_megatron_engine_workers(nnodes, gpn, tp, pp, tbs, n, mini, micro):
    cfg = config(MEGATRON, _script({
        "trainer.nnodes": nnodes, "trainer.n_gpus_per_node": gpn, "data.train_batch_size": tbs,
        f"{R}.n": n, f"{A}.ppo_mini_batch_size": mini, f"{A}.ppo_micro_batch_size_per_gpu": micro,
        f"{MEG}.tensor_model_parallel_size": tp, f"{MEG}.pipeline_model_parallel_size": pp,
        f"{R}.log_prob_micro_batch_size_per_gpu": 1}))
    if (nnodes * gpn) % (tp * pp) != 0:
        # The grid is VL301's finding; only the check without a data-parallel size remains.
        assert bool(lint(VL303, cfg)) == (tbs < mini)
        return
    dp = nnodes * gpn // (tp * pp)
    violated = (
        (tbs * n) % (dp * micro) != 0  # real_train_batch_divisible, minimal = dp * micro
        or tbs < mini
        or (mini * n) % dp != 0
        or ((mini * n) // dp) % micro != 0
    )
    assert bool(lint(VL303, cfg)) == violated


@given(mb=st.one_of(st.none(), st.integers(1, 64)), per_gpu=st.one_of(st.none(), st.integers(1, 8)),
       dynamic=st.booleans(), version=st.sampled_from(["0.4.0", "0.6.1", "0.8.0", "0.9.1"]))
def test_vl304_actor_micro_batches(mb, per_gpu, dynamic, version):
    cfg = config(FSDP, _script({f"{A}.ppo_micro_batch_size": mb,
                                f"{A}.ppo_micro_batch_size_per_gpu": per_gpu,
                                f"{A}.use_dynamic_bsz": dynamic}),
                 version=version, trainer__use_legacy_worker_impl="auto",
                 **{f"{R}.log_prob_use_dynamic_bsz": dynamic})
    engine = version >= "0.8.0"
    violated = not dynamic and (
        (mb is None) == (per_gpu is None)  # exactly one of them (actor_mbs_exclusive)
        or (engine and per_gpu is None)  # per_gpu_mbs_required
    )
    assert bool(lint(VL304, cfg)) == violated


@given(budget=st.integers(256, 40000), sp=st.sampled_from([1, 2, 4]),
       prompt=st.integers(1, 8192), response=st.integers(1, 32768), dynamic=st.booleans())
def test_vl305_token_budget(budget, sp, prompt, response, dynamic):
    cfg = config(FSDP, _script({
        f"{A}.use_dynamic_bsz": dynamic, f"{R}.log_prob_use_dynamic_bsz": dynamic,
        f"{A}.ppo_max_token_len_per_gpu": budget, f"{R}.log_prob_max_token_len_per_gpu": budget,
        f"{A}.ulysses_sequence_parallel_size": sp, "data.max_prompt_length": prompt,
        "data.max_response_length": response}))
    violated = dynamic and budget * sp < prompt + response
    assert bool(lint(VL305, cfg)) == violated


@given(sp=st.integers(1, 4), engine_sp=st.integers(1, 4), rmpad=st.booleans(),
       version=st.sampled_from(["0.4.1", "0.7.1", "0.9.1"]))
def test_vl306_ulysses_remove_padding(sp, engine_sp, rmpad, version):
    cfg = config(FSDP, _script({f"{A}.ulysses_sequence_parallel_size": sp,
                                f"{A}.fsdp_config.ulysses_sequence_parallel_size": engine_sp,
                                "actor_rollout_ref.model.use_remove_padding": rmpad}),
                 version=version)
    uses_sp = sp > 1 or (version >= "0.8.0" and engine_sp > 1)
    assert bool(lint(VL306, cfg)) == (uses_sp and not rmpad)


@given(gpn=st.integers(1, 16), visible=st.integers(1, 16))
def test_vl307_visible_devices(gpn, visible):
    cfg = config(FSDP, _script({"trainer.n_gpus_per_node": gpn}))
    devices = ",".join(str(i) for i in range(visible))
    assert bool(lint(VL307, cfg, visible=devices)) == (gpn != visible)


# Configurations that break one check each (the key that is set in the script, and its value).
BROKEN = [
    (VL301, MEGATRON, {f"{MEG}.tensor_model_parallel_size": 2, f"{MEG}.context_parallel_size": 3,
                       "trainer.nnodes": 4, "trainer.n_gpus_per_node": 16}),
    (VL301, MEGATRON, {f"{MEG}.expert_model_parallel_size": 16, "trainer.n_gpus_per_node": 8}),
    (VL302, FSDP, {f"{R}.tensor_model_parallel_size": 3, "trainer.n_gpus_per_node": 8}),
    (VL302, FSDP, {f"{R}.tensor_model_parallel_size": 4, f"{R}.data_parallel_size": 2,
                   f"{R}.expert_parallel_size": 4, "trainer.nnodes": 2}),
    (VL303, FSDP, {"data.train_batch_size": 100, f"{R}.n": 5, "trainer.n_gpus_per_node": 8}),
    (VL303, FSDP, {f"{A}.ppo_mini_batch_size": 48, f"{A}.ppo_micro_batch_size_per_gpu": 4}),
    (VL304, FSDP, {f"{A}.ppo_micro_batch_size": 64, f"{A}.ppo_micro_batch_size_per_gpu": 8}),
    (VL305, FSDP, {f"{A}.use_dynamic_bsz": True, f"{A}.ppo_max_token_len_per_gpu": 1024,
                   "data.max_response_length": 4096, f"{R}.log_prob_use_dynamic_bsz": False}),
    (VL306, FSDP, {f"{A}.ulysses_sequence_parallel_size": 2,
                   "actor_rollout_ref.model.use_remove_padding": False}),
    (VL307, FSDP, {"trainer.n_gpus_per_node": 16}),
]


@given(case=st.sampled_from(BROKEN), data=st.data())
def test_unknown_operand_never_fires(case, data):
    """Replacing any operand a finding rests on by an Unknown silences that finding."""
    from verl_lint.evaluate.model import Unknown

    rule, base, values = case
    visible = "0,1,2,3,4,5,6,7"
    assert lint(rule, config(base, _script(values)), visible=visible), "the case must fire"
    key = data.draw(st.sampled_from(sorted(values)))
    blurred = dict(values, **{key: Unknown(reason=f"${key}")})
    found = lint(rule, config(base, _script(blurred)), visible=visible)
    assert not any(key in d.message for d in found), [d.message for d in found]


ANY_VALUE = st.one_of(st.none(), st.booleans(), st.integers(-4, 64), st.floats(allow_nan=False),
                      st.sampled_from(["", "???", "megatron", "fsdp", "vllm", "8", "auto"]),
                      st.lists(st.integers(0, 3), max_size=2))


@given(base=st.sampled_from([FSDP, MEGATRON]),
       version=st.sampled_from(["0.4.0", "0.7.1", "0.9.1"]),
       changes=st.dictionaries(st.sampled_from(sorted(MEGATRON.keys() | FSDP.keys())), ANY_VALUE,
                               max_size=6),
       visible=st.one_of(st.none(), st.sampled_from(["", "0", "0,1,2,3", "0,,1", "a,b"])))
def test_rules_never_raise(base, version, changes, visible):
    cfg = config(base, _script(changes), version=version)
    for rule in (VL301, VL302, VL303, VL304, VL305, VL306, VL307):
        for d in lint(rule, cfg, visible=visible, device="gpu" if visible else None):
            assert d.code == rule.code and d.message

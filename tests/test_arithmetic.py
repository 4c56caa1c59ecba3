"""VL301–VL307 on hand-built effective configs: messages, spans, version gates, skips."""

from __future__ import annotations

import pytest

from arithmetic_support import A, FSDP, LAUNCH_SPAN, MEGATRON, R, REF, config, lint
from verl_lint.evaluate.model import Unknown
from verl_lint.rules.arithmetic.batch_size import BatchSizeNotDivisible as VL303
from verl_lint.rules.arithmetic.device_count import DeviceCountMismatch as VL307
from verl_lint.rules.arithmetic.micro_batch import MicroBatchConflict as VL304
from verl_lint.rules.arithmetic.model_parallel import ModelParallelDoesNotDivide as VL301
from verl_lint.rules.arithmetic.rollout_parallel import RolloutParallelMismatch as VL302
from verl_lint.rules.arithmetic.sequence_parallel import (
    SequenceParallelNeedsRemovePadding as VL306,
)
from verl_lint.rules.arithmetic.token_budget import TokenBudgetTooSmall as VL305
from verl_lint.rules.registry import all_rules, get_rule

RULES = (VL301, VL302, VL303, VL304, VL305, VL306, VL307)
MEG = f"{A}.megatron"
RTP = f"{R}.tensor_model_parallel_size"
RDP = f"{R}.data_parallel_size"
MINI = f"{A}.ppo_mini_batch_size"
MICRO = f"{A}.ppo_micro_batch_size_per_gpu"
RMPAD = "actor_rollout_ref.model.use_remove_padding"


def test_registered_with_catalogue_metadata():
    expected = {
        "VL301": ("model-parallel-does-not-divide", "error"),
        "VL302": ("rollout-parallel-mismatch", "error"),
        "VL303": ("batch-size-not-divisible", "error"),
        "VL304": ("micro-batch-conflict", "error"),
        "VL305": ("token-budget-too-small", "warning"),
        "VL306": ("sequence-parallel-needs-remove-padding", "error"),
        "VL307": ("device-count-mismatch", "warning"),
    }
    codes = {r.code for r in all_rules()}
    for code, (name, severity) in expected.items():
        assert code in codes
        rule = get_rule(code)
        assert (rule.name, rule.severity.value, rule.scope) == (name, severity, "launch")


@pytest.mark.parametrize("rule", RULES)
@pytest.mark.parametrize("base", [FSDP, MEGATRON], ids=["fsdp", "megatron"])
def test_clean_defaults(rule, base):
    assert lint(rule, config(base), visible="0,1,2,3,4,5,6,7") == []


@pytest.mark.parametrize("rule", RULES)
def test_no_config_no_finding(rule):
    assert lint(rule, None, visible="0,1") == []


# ---- VL301 -------------------------------------------------------------------------------


def test_vl301_message_shows_arithmetic_and_origins():
    cfg = config(MEGATRON, {"trainer.nnodes": (4, 88), f"{MEG}.tensor_model_parallel_size": (2, 61),
                            f"{MEG}.pipeline_model_parallel_size": (4, 62),
                            f"{MEG}.context_parallel_size": (3, 63)},
                 trainer__n_gpus_per_node=16)
    [d] = lint(VL301, cfg)
    assert d.message == (
        "world size 64 (trainer.nnodes 4 × trainer.n_gpus_per_node 16, line 88; "
        "trainer.n_gpus_per_node verl default) is not divisible by actor TP×PP×CP = "
        "2×4×3 = 24 (lines 61-63)")
    # CP=3 alone does not divide 64: the most likely culprit.
    assert d.span.line == 63
    assert sorted(label.span.line for label in d.labels) == [61, 62, 88]


def test_vl301_expert_grid_etp_null_means_tp():
    cfg = config(MEGATRON, {f"{MEG}.tensor_model_parallel_size": (2, 3),
                            f"{MEG}.expert_model_parallel_size": (8, 4)})
    [d] = lint(VL301, cfg)  # 8 devices, EP×ETP×PP = 8×2×1 = 16
    assert "actor EP×ETP×PP = 8×2×1 = 16" in d.message
    assert d.span.line == 4
    cfg = config(MEGATRON, {f"{MEG}.tensor_model_parallel_size": (2, 3),
                            f"{MEG}.expert_model_parallel_size": (8, 4),
                            f"{MEG}.expert_tensor_parallel_size": (1, 5)})
    assert lint(VL301, cfg) == []


def test_vl301_ref_and_critic_reported_when_in_use_and_different():
    ref_tp = f"{REF}.megatron.tensor_model_parallel_size"
    cfg = config(MEGATRON, {ref_tp: (3, 7)})
    assert lint(VL301, cfg) == []  # no KL: no reference policy is built
    cfg = config(MEGATRON, {ref_tp: (3, 7), f"{A}.use_kl_loss": (True, 8)})
    [d] = lint(VL301, cfg)
    assert "ref TP×PP×CP" in d.message and d.span.line == 7
    cfg = config(MEGATRON, {"critic.megatron.pipeline_model_parallel_size": (3, 9),
                            "algorithm.adv_estimator": ("gae", 2)})
    [d] = lint(VL301, cfg)
    assert "critic TP×PP×CP" in d.message


def test_vl301_inherited_ref_reported_once():
    cfg = config(MEGATRON, {f"{MEG}.tensor_model_parallel_size": (3, 4),
                            f"{A}.use_kl_loss": (True, 5)},
                 inherited={f"{REF}.megatron.tensor_model_parallel_size":
                            (f"{MEG}.tensor_model_parallel_size", 4)})
    [d] = lint(VL301, cfg)
    assert "actor TP×PP×CP" in d.message


def test_vl301_defaults_point_at_launch_and_fsdp_is_ignored():
    cfg = config(MEGATRON, **{f"{MEG}.pipeline_model_parallel_size": 3})
    [d] = lint(VL301, cfg)
    assert d.span == LAUNCH_SPAN and d.labels == ()
    assert "(verl default" in d.message
    assert lint(VL301, config(FSDP, **{f"{MEG}.pipeline_model_parallel_size": 3})) == []


def test_vl301_unknown_operand_skips():
    cfg = config(MEGATRON, {f"{MEG}.tensor_model_parallel_size": (Unknown(reason="$TP"), 3),
                            f"{MEG}.pipeline_model_parallel_size": (3, 4)})
    assert lint(VL301, cfg) == []
    cfg = config(MEGATRON, {"trainer.nnodes": (Unknown(reason="$NNODES"), 3),
                            f"{MEG}.pipeline_model_parallel_size": (3, 4)})
    assert lint(VL301, cfg) == []
    cfg = config(MEGATRON, {f"{MEG}.pipeline_model_parallel_size": ("3", 4)})
    assert lint(VL301, cfg) == []  # a string is not an int: never guess


# ---- VL302 -------------------------------------------------------------------------------


def test_vl302_world_divides():
    cfg = config(FSDP, {RTP: (3, 10)})
    found = lint(VL302, cfg)
    assert found[0].message == (
        "world size 8 (trainer.nnodes 1 × trainer.n_gpus_per_node 8, verl defaults) is not "
        "divisible by the rollout TP×DP×PP = 3×1×1 = 3 (line 10)")
    assert found[0].span.line == 10


def test_vl302_world_divides_old_release_has_no_dp_pp():
    old = {k: v for k, v in FSDP.items()
           if k not in (RDP, f"{R}.pipeline_model_parallel_size",
                        f"{R}.expert_parallel_size", f"{R}.n_gpus_per_node", f"{R}.nnodes")}
    cfg = config(old, {RTP: (3, 10)}, version="0.4.0",
                 **{f"{R}.mode": "sync"})
    [d] = lint(VL302, cfg)
    assert "rollout TP = 3 (line 10)" in d.message


def test_vl302_not_hybrid_engine_skips_world_check():
    cfg = config(FSDP, {RTP: (3, 10)},
                 actor_rollout_ref__hybrid_engine=False, **{f"{R}.mode": "sync"})
    assert lint(VL302, cfg) == []


def test_vl302_ep_must_equal_tp_dp():
    cfg = config(FSDP, {RTP: (4, 3), RDP: (2, 4),
                        f"{R}.expert_parallel_size": (16, 5)}, trainer__nnodes=2)
    [d] = lint(VL302, cfg)
    assert d.message == ("rollout expert_parallel_size 16 (line 5) must equal the rollout "
                         "TP×DP = 4×2 = 8 (lines 3-4) when it is greater than 1")
    assert d.span.line == 5
    trt = config(FSDP, {RTP: (4, 3),
                        f"{R}.expert_parallel_size": (16, 5)}, **{f"{R}.name": "trtllm"})
    assert lint(VL302, trt) == []
    old = config(FSDP, {f"{R}.expert_parallel_size": (16, 5)}, version="0.5.0")
    assert all("expert" not in d.message for d in lint(VL302, old))


def test_vl302_pipeline_parallel_rollout():
    cfg = config(FSDP, {f"{R}.pipeline_model_parallel_size": (2, 6)})
    [d] = lint(VL302, cfg)
    assert "not implemented for the vllm rollout" in d.message and d.span.line == 6
    assert lint(VL302, config(FSDP, {f"{R}.pipeline_model_parallel_size": (2, 6)},
                              version="0.6.1")) == []


def test_vl302_replica_spanning_nodes():
    # 3 nodes × 8, TP 4 × DP 3 = 12 devices per replica: larger than a node, not a multiple.
    cfg = config(FSDP, {RTP: (4, 3), RDP: (3, 4),
                        "trainer.nnodes": (3, 5)})
    found = lint(VL302, cfg)
    assert len(found) == 1
    assert found[0].message.startswith("a rollout replica of TP×DP×PP = 4×3×1 = 12")


def test_vl302_vllm_dp_needs_tp_dividing_node():
    # 6 devices per node, TP 4 × DP 3 = 12 = two nodes; 6 % 4 != 0.
    cfg = config(FSDP, {RTP: (4, 3), RDP: (3, 4),
                        "trainer.n_gpus_per_node": (6, 5), "trainer.nnodes": (2, 5)},
                 **{f"{R}.n_gpus_per_node": 6})
    [d] = lint(VL302, cfg)
    assert d.message.startswith("vLLM with rollout data_parallel_size 3 > 1 needs the devices")
    sg = config(FSDP, {RTP: (4, 3), RDP: (3, 4),
                       "trainer.n_gpus_per_node": (6, 5), "trainer.nnodes": (2, 5)},
                **{f"{R}.n_gpus_per_node": 6, f"{R}.name": "sglang"})
    assert lint(VL302, sg) == []


def test_vl302_seed_003_397b_is_clean():
    cfg = config(MEGATRON, {
        "trainer.nnodes": (16, 3), "trainer.n_gpus_per_node": (16, 4),
        f"{MEG}.tensor_model_parallel_size": (2, 5), f"{MEG}.pipeline_model_parallel_size": (4, 6),
        f"{MEG}.expert_model_parallel_size": (64, 7), f"{MEG}.expert_tensor_parallel_size": (1, 8),
        RTP: (16, 9), RDP: (16, 10),
        f"{R}.expert_parallel_size": (256, 11), "data.train_batch_size": (128, 12),
        f"{R}.n": (8, 13), MINI: (32, 14),
        MICRO: (1, 15), f"{R}.log_prob_micro_batch_size_per_gpu": (1, 16),
        RMPAD: (False, 17),
    }, **{f"{R}.n_gpus_per_node": 16})
    for rule in RULES:
        assert lint(rule, cfg, visible=None) == [], rule.code


# ---- VL303 -------------------------------------------------------------------------------


def test_vl303_real_train_batch_fsdp():
    cfg = config(FSDP, {"data.train_batch_size": (100, 3), f"{R}.n": (5, 4)},
                 **{MINI: 100, MICRO: 1,
                    f"{R}.log_prob_micro_batch_size_per_gpu": 1})
    found = lint(VL303, cfg)
    assert found[0].message == (
        "data.train_batch_size 100 × actor_rollout_ref.rollout.n 5 = 500 (lines 3-4) is not "
        "divisible by the minimal batch 8, the world size 8 (trainer.nnodes 1 × "
        "trainer.n_gpus_per_node 8, verl defaults)")
    assert found[0].span.line == 3


def test_vl303_real_train_batch_megatron_uses_micro():
    cfg = config(MEGATRON, {"data.train_batch_size": (36, 3),
                            f"{MEG}.tensor_model_parallel_size": (2, 4),
                            MINI: (12, 5)},
                 **{MICRO: 2})
    msgs = [d.message for d in lint(VL303, cfg)]
    # minimal = DP 4 × micro 2 = 8; 36 % 8 != 0
    assert any("is not divisible by the minimal batch 8 = actor data-parallel size 4" in m
               for m in msgs)


def test_vl303_dynamic_bsz_skips_validate_checks():
    cfg = config(FSDP, {"data.train_batch_size": (100, 3), f"{A}.use_dynamic_bsz": (True, 4),
                        MINI: (200, 5)},
                 **{f"{R}.log_prob_use_dynamic_bsz": True})
    msgs = [d.message for d in lint(VL303, cfg)]
    assert not any("minimal batch" in m or "is larger than" in m for m in msgs)


def test_vl303_mini_larger_than_train():
    cfg = config(FSDP, {"data.train_batch_size": (64, 3), MINI: (128, 4)})
    [d] = [d for d in lint(VL303, cfg) if "larger" in d.message]
    assert d.span.line == 4
    assert d.message.startswith("actor_rollout_ref.actor.ppo_mini_batch_size 128 (line 4) is "
                                "larger than data.train_batch_size 64 (line 3)")


def test_vl303_mini_not_divisible_by_dp_engine_workers():
    cfg = config(FSDP, {MINI: (20, 4), "trainer.n_gpus_per_node": (8, 2)})
    [d] = lint(VL303, cfg)
    assert d.message.startswith("actor_rollout_ref.actor.ppo_mini_batch_size 20 × "
                                "actor_rollout_ref.rollout.n 1 = 20 (line 4; ")
    assert "is not divisible by the actor data-parallel size 8" in d.message


def test_vl303_micro_divides_local_mini():
    cfg = config(FSDP, {MINI: (48, 4), MICRO: (4, 5)})
    [d] = lint(VL303, cfg)  # 48 / 8 = 6, 6 % 4 != 0
    assert d.message.startswith("the per-rank actor mini batch 48 / 8 = 6")
    assert d.span.line == 5


def test_vl303_legacy_fsdp_workers():
    # 0.6.1 legacy FSDP workers: floor division, only > 0 and the micro batch are checked.
    cfg = config(FSDP, {MINI: (20, 4), MICRO: (2, 5)},
                 version="0.6.1", trainer__use_legacy_worker_impl="auto")
    assert lint(VL303, cfg) == []  # 20 // 8 = 2, 2 % 2 == 0
    cfg = config(FSDP, {MINI: (4, 4)}, version="0.6.1",
                 trainer__use_legacy_worker_impl="auto")
    [d] = lint(VL303, cfg)
    assert "the per-rank mini batch is 0" in d.message
    cfg = config(FSDP, {MINI: (4, 4)}, version="0.6.1",
                 trainer__use_legacy_worker_impl="disable")
    assert lint(VL303, cfg) == []  # 0.6's new workers: no check mirrored
    cfg = config(FSDP, {MINI: (20, 4)}, version="0.7.1",
                 trainer__use_legacy_worker_impl="disable")
    assert "is not divisible by the actor data-parallel size 8" in lint(VL303, cfg)[0].message


def test_vl303_ulysses_divides_dp():
    # dp = 8 / Ulysses 4 = 2; mini 6 × n 1 / 2 = 3 per rank; 3 % micro 2 != 0.
    cfg = config(FSDP, {f"{A}.fsdp_config.ulysses_sequence_parallel_size": (4, 3),
                        MINI: (6, 4),
                        MICRO: (2, 5),
                        "data.train_batch_size": (64, 6)})
    [d] = lint(VL303, cfg)
    assert d.message.startswith("the per-rank actor mini batch 6 / 2 = 3")
    assert "data-parallel size 2 (world size 8 / Ulysses SP 4: " in d.message
    # Two different sequence-parallel sizes: which one verl uses is not guessed.
    cfg = config(FSDP, {f"{A}.fsdp_config.ulysses_sequence_parallel_size": (4, 3),
                        f"{A}.ulysses_sequence_parallel_size": (2, 7),
                        MINI: (6, 4),
                        MICRO: (2, 5),
                        "data.train_batch_size": (64, 6)})
    assert lint(VL303, cfg) == []


def test_vl303_critic_only_when_used():
    cfg = config(FSDP, {"critic.ppo_mini_batch_size": (2048, 4)})
    assert lint(VL303, cfg) == []
    cfg = config(FSDP, {"critic.ppo_mini_batch_size": (2048, 4),
                        "algorithm.adv_estimator": ("gae", 2)})
    [d] = lint(VL303, cfg)
    assert d.message.startswith("critic.ppo_mini_batch_size 2048 (line 4) is larger than "
                                "data.train_batch_size 1024 (verl default)")


def test_vl303_unknown_skips():
    # 100 × 5 = 500 is not divisible by 8: the known value fires, the unknown one does not
    cfg = config(FSDP, {"data.train_batch_size": (100, 3), f"{R}.n": (5, 4)})
    assert any("train_batch_size" in d.message for d in lint(VL303, cfg))
    cfg = config(FSDP, {"data.train_batch_size": (Unknown(reason="$BS"), 3), f"{R}.n": (5, 4)})
    assert all("train_batch_size" not in d.message for d in lint(VL303, cfg))


# ---- VL304 -------------------------------------------------------------------------------


def test_vl304_both_set():
    cfg = config(FSDP, {f"{A}.ppo_micro_batch_size": (64, 3), MICRO: (8, 4)})
    [d] = lint(VL304, cfg)
    assert d.message == ("both actor_rollout_ref.actor.ppo_micro_batch_size 64 (line 3) and "
                         "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu 8 (line 4) are "
                         "set; the global micro batch is deprecated")
    assert d.span.line == 3 and [label.span.line for label in d.labels] == [4]


def test_vl304_neither_set_points_at_launch_or_dynamic_flag():
    cfg = config(FSDP, **{MICRO: None})
    [d] = lint(VL304, cfg)
    assert d.span == LAUNCH_SPAN and d.message.startswith(
        "neither actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu nor")
    cfg = config(FSDP, {f"{A}.use_dynamic_bsz": (False, 9)},
                 **{MICRO: None})
    [d] = lint(VL304, cfg)
    assert d.span == LAUNCH_SPAN and [label.span.line for label in d.labels] == [9]
    cfg = config(FSDP, {f"{A}.use_dynamic_bsz": (True, 9)},
                 **{MICRO: None})
    assert lint(VL304, cfg) == []


def test_vl304_global_only_fails_on_engine_workers():
    values = {MICRO: None}
    script = {f"{A}.ppo_micro_batch_size": (64, 3)}
    [d] = lint(VL304, config(FSDP, script, **values))
    assert d.message.startswith("only the deprecated actor_rollout_ref.actor.ppo_micro_batch_size "
                                "64 (line 3) is set; verl 0.9.1's engine workers require")
    assert lint(VL304, config(FSDP, script, version="0.7.1", **values,
                              trainer__use_legacy_worker_impl="auto")) == []


def test_vl304_ref_and_critic_gated_on_use():
    cfg = config(FSDP, **{f"{REF}.log_prob_micro_batch_size_per_gpu": None})
    assert lint(VL304, cfg) == []
    cfg = config(FSDP, {"algorithm.use_kl_in_reward": (True, 3)},
                 **{f"{REF}.log_prob_micro_batch_size_per_gpu": None})
    [d] = lint(VL304, cfg)
    assert "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu" in d.message
    # critic.ppo_micro_batch_size_per_gpu copying the global value is one setting, not two.
    cfg = config(FSDP, {"critic.ppo_micro_batch_size": (8, 3), "critic.enable": (True, 4)},
                 inherited={"critic.ppo_micro_batch_size_per_gpu":
                            ("critic.ppo_micro_batch_size", 3)})
    assert lint(VL304, cfg) == []


# ---- VL305 -------------------------------------------------------------------------------


def test_vl305_budget_below_sequence_length():
    cfg = config(FSDP, {f"{A}.use_dynamic_bsz": (True, 3), "data.max_prompt_length": (2048, 4),
                        "data.max_response_length": (8192, 5),
                        f"{A}.ppo_max_token_len_per_gpu": (8192, 6)},
                 inherited={f"{R}.log_prob_use_dynamic_bsz": (f"{A}.use_dynamic_bsz", 3),
                            f"{R}.log_prob_max_token_len_per_gpu":
                            (f"{A}.ppo_max_token_len_per_gpu", 6)})
    [d] = lint(VL305, cfg)  # the log-prob budget inherits the same value: reported once
    assert d.message.startswith(
        "actor update token budget actor_rollout_ref.actor.ppo_max_token_len_per_gpu 8192 "
        "(line 6) is smaller than data.max_prompt_length 2048 + data.max_response_length 8192 "
        "= 10240 (lines 4-5)")
    assert d.span.line == 6 and d.severity.value == "warning"


def test_vl305_sequence_parallel_scales_the_budget():
    cfg = config(FSDP, {f"{A}.use_dynamic_bsz": (True, 3), "data.max_response_length": (8192, 5),
                        f"{A}.ppo_max_token_len_per_gpu": (8192, 6),
                        f"{A}.ulysses_sequence_parallel_size": (2, 7)},
                 **{f"{R}.log_prob_use_dynamic_bsz": False})
    assert lint(VL305, cfg) == []
    cfg = config(FSDP, {f"{A}.use_dynamic_bsz": (False, 3), "data.max_response_length": (80000, 5)},
                 **{f"{R}.log_prob_use_dynamic_bsz": False})
    assert lint(VL305, cfg) == []


# ---- VL306 -------------------------------------------------------------------------------


def test_vl306_actor_and_engine_key():
    cfg = config(FSDP, {RMPAD: (False, 3),
                        f"{A}.ulysses_sequence_parallel_size": (2, 4)})
    [d] = lint(VL306, cfg)
    assert d.message == ("actor Ulysses sequence parallelism "
                         "actor_rollout_ref.actor.ulysses_sequence_parallel_size 2 (line 4) needs "
                         "actor_rollout_ref.model.use_remove_padding=True, but it is False "
                         "(line 3)")
    assert d.span.line == 4 and [label.span.line for label in d.labels] == [3]
    cfg = config(FSDP, {RMPAD: (False, 3),
                        f"{A}.fsdp_config.ulysses_sequence_parallel_size": (2, 4)})
    assert len(lint(VL306, cfg)) == 1
    # The engine config's key is only read by the engine workers (0.8.0+).
    assert lint(VL306, config(FSDP, {RMPAD: (False, 3),
                                     f"{A}.fsdp_config.ulysses_sequence_parallel_size": (2, 4)},
                              version="0.7.1")) == []


def test_vl306_megatron_and_unknown_skip():
    assert lint(VL306, config(MEGATRON, {RMPAD: (False, 3)})) == []
    cfg = config(FSDP, {RMPAD: (Unknown(reason="$RM"), 3),
                        f"{A}.ulysses_sequence_parallel_size": (2, 4)})
    assert lint(VL306, cfg) == []


def test_vl306_critic():
    cfg = config(FSDP, {"critic.model.use_remove_padding": (False, 3),
                        "critic.ulysses_sequence_parallel_size": (2, 4),
                        "algorithm.adv_estimator": ("gae", 5)})
    [d] = lint(VL306, cfg)
    assert d.message.startswith("critic Ulysses sequence parallelism")


# ---- VL307 -------------------------------------------------------------------------------


def test_vl307_visible_devices():
    cfg = config(FSDP, {"trainer.n_gpus_per_node": (16, 9)})
    [d] = lint(VL307, cfg, visible="0,1,2,3,4,5,6,7")
    assert d.message == ("trainer.n_gpus_per_node 16 (line 9) but the script makes 8 devices "
                         "visible (0,1,2,3,4,5,6,7)")
    # In an NPU scenario a CUDA list does not restrict the NPUs.
    assert lint(VL307, cfg, visible="0,1,2,3,4,5,6,7", device="npu") == []
    assert d.span.line == 9 and d.severity.value == "warning"
    assert lint(VL307, cfg, visible="0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15") == []
    assert lint(VL307, cfg, visible=Unknown(reason="$CUDA_VISIBLE_DEVICES")) == []
    assert lint(VL307, cfg, visible=None) == []
    assert lint(VL307, cfg, visible="") == []
    [d] = lint(VL307, config(FSDP), visible="0")
    assert d.span == LAUNCH_SPAN and "1 device visible" in d.message


def test_vl303_critic_copying_actor_mini_batch_reported_once():
    cfg = config(FSDP, {MINI: (20, 4), "algorithm.adv_estimator": ("gae", 2)},
                 inherited={"critic.ppo_mini_batch_size": (MINI, 4)})
    [d] = lint(VL303, cfg)  # 20 × 1 over 8 ranks: the actor's finding only
    assert d.message.startswith("actor_rollout_ref.actor.ppo_mini_batch_size 20 ×")
    cfg = config(FSDP, {MINI: (16, 4), MICRO: (2, 3), "algorithm.adv_estimator": ("gae", 2),
                        "critic.ppo_micro_batch_size_per_gpu": (3, 5)},
                 inherited={"critic.ppo_mini_batch_size": (MINI, 4)})
    [d] = lint(VL303, cfg)  # 16 / 8 = 2 per rank: the critic's micro batch 3 does not divide it
    assert d.message.startswith("the per-rank critic mini batch 16 / 8 = 2")


def test_literal_fix_replaces_a_plain_value_only():
    from verl_lint.evaluate.model import Launch, Override, Scenario, ScenarioRun
    from verl_lint.rules.base import LaunchContext
    from verl_lint.source import SourceText
    from verl_lint.verl.analysis import LaunchAnalysis
    from verl_lint.verl.effective import EffectiveConfig, Origin, Resolved

    text = ("python3 -m verl.trainer.main_ppo \\\n"
            "    actor_rollout_ref.rollout.expert_parallel_size=16 \\\n"
            "    actor_rollout_ref.rollout.tensor_model_parallel_size=${TP}\n")
    source = SourceText(text.encode())
    data = source.data

    def override(key: str, value: str, literal: bool) -> Override:
        start = data.index(key.encode())
        end = data.index(b" ", start) if literal else data.index(b"\n", start)
        value_start = start + len(key) + 1
        return Override(key=key, value=value, text=source.slice(source.span(start, end)),
                        span=source.span(start, end), key_span=source.span(start, value_start - 1),
                        value_span=source.span(value_start, end) if literal else None)

    ep = override(f"{R}.expert_parallel_size", "16", True)
    tp = override(RTP, "4", False)
    base = config(FSDP, trainer__nnodes=2)
    entries = {k: base.get(k) for k in base.keys()}
    for o, v in ((ep, 16), (tp, 4)):
        entries[o.key] = Resolved(key=o.key, value=v, origin=Origin(kind="script", span=o.span))
    launch = Launch(module="verl.trainer.main_ppo", span=source.span(0, len(data)),
                    overrides=[ep, tp])
    run = ScenarioRun(scenario=Scenario(label=""), launches=[launch])
    ctx = LaunchContext(path="t.sh", source=source, model=None, settings=None, run=run,
                        launch=launch, release=None,
                        analysis=LaunchAnalysis(config=EffectiveConfig("0.9.1", "ppo_trainer",
                                                                       entries)))
    [d] = list(VL302().check(ctx))
    assert d.fix is not None and d.fix.applicability == "unsafe"
    [edit] = d.fix.edits
    assert data[edit.start:edit.end] == b"16" and edit.replacement == "4"
    # TP comes from a variable: a finding on it has no fix.
    entries[RTP] = Resolved(key=RTP, value=3, origin=Origin(kind="script", span=tp.span))
    entries[f"{R}.expert_parallel_size"] = base.get(f"{R}.expert_parallel_size")
    [d] = list(VL302().check(ctx))
    assert d.message.startswith("world size 16") and d.fix is None


def test_vl304_missing_micro_batch_behind_passthrough_is_only_info():
    # `"$@"` may pass the key: the script alone cannot know it is missing
    from verl_lint.engine import lint_source
    from verl_lint.settings import Settings
    from verl_lint.source import SourceText

    launch = ("python3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.name=vllm "
              "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4")
    report = {}
    for tail in ("", ' "$@"'):
        text = f"#!/usr/bin/env bash\n{launch}{tail}\n".encode()
        diags = lint_source(SourceText(text), Settings(), path="t.sh").diagnostics
        report[tail] = [d for d in diags if d.code == "VL304"
                        and "rollout.log_prob_micro_batch_size_per_gpu" in d.message]
    [plain] = report[""]
    [soft] = report[' "$@"']
    assert plain.severity.value == "error"
    assert soft.severity.value == "info"
    assert soft.message == plain.message + ' (unless the caller passes it through "$@")'

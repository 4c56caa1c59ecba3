"""VL4xx knowledge base: the YAML format, the interpreter, the rules, fixes, extend-rules."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from knowledge_support import FSDP_080, apply_fix, make_ctx, run_rule
from verl_lint.rules.knowledge import (
    BUILTIN_DIR, KnowledgeBaseError, load_rule_folder, register_rule_folder,
)
from verl_lint.rules.knowledge.families import FamilyMatcher, load_family_table, parse_params_b
from verl_lint.rules.registry import all_rules, get_rule

HEAD = "#!/usr/bin/env bash\nset -xeuo pipefail\n"

# seed 002/003: Qwen3.5 Megatron script, NPU settings in the npu branch, REF without the keys
QWEN35 = HEAD + textwrap.dedent("""\
    MODEL_PATH=${MODEL_PATH:-Qwen/Qwen3.5-122B-A10B}
    ACTOR=(
        actor_rollout_ref.model.path=${MODEL_PATH}
        actor_rollout_ref.actor.use_kl_loss=True
        actor_rollout_ref.actor.use_dynamic_bsz=False
        actor_rollout_ref.actor.megatron.use_remove_padding=False
    )
    case "${DEVICE}" in
      gpu)
        ACTOR+=(actor_rollout_ref.actor.megatron.use_mbridge=True)
        ;;
      npu)
        ACTOR+=(
            actor_rollout_ref.actor.megatron.vanilla_mbridge=False
        )
        ;;
    esac
    REF=(
        actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=1
    )
    ROLLOUT=(
        actor_rollout_ref.rollout.name=vllm
        actor_rollout_ref.rollout.gpu_memory_utilization=0.6
    )
    python3 -m verl.trainer.main_ppo --config-name=ppo_megatron_trainer \\
        "${ACTOR[@]}" "${REF[@]}" "${ROLLOUT[@]}" "$@"
    """)


@pytest.fixture(autouse=True)
def _restore_registry():
    """User rules registered by a test must not leak into other tests' registries."""
    from verl_lint.rules import registry

    all_rules()
    saved = dict(registry._RULES)
    yield
    registry._RULES.clear()
    registry._RULES.update(saved)


def codes(diags):
    return [d.code for d in diags]


# ---- registry and docs -----------------------------------------------------------------------

def test_builtin_rules_register_with_yaml_docs():
    builtin = {r.code: r for r in all_rules() if r.code.startswith("VL4")}
    assert {"VL401", "VL402", "VL403", "VL404", "VL405", "VL407", "VL408"} <= set(builtin)
    for rule in builtin.values():
        doc = rule.docs()
        for section in ("What it does", "Why is this bad?", "Example", "Use instead", "References"):
            assert section in doc, (rule.code, section)
        assert rule.scope in ("launch", "script", "scenario")
    assert get_rule("gdn-remove-padding").code == "VL401"
    assert get_rule("VL401").origin.endswith("VL401.yaml")


def test_rule_names_and_severities_match_the_catalogue():
    expected = {
        "VL401": ("gdn-remove-padding", "error"), "VL402": ("npu-megatron-bridge", "error"),
        "VL403": ("qwen35-npu-mm-cache", "error"), "VL404": ("npu-rollout-memory-headroom", "info"),
        "VL405": ("gspo-clip-scale", "warning"), "VL406": ("device-env-mismatch", "warning"),
        "VL407": ("rollout-engine-kwargs-mismatch", "warning"),
        "VL408": ("npu-unsupported-rollout", "error"),
    }
    for code, (name, severity) in expected.items():
        rule = get_rule(code)
        assert rule is not None, code
        assert (rule.name, rule.severity.value) == (name, severity)


# ---- model families --------------------------------------------------------------------------

@pytest.mark.parametrize("path,family,traits,params", [
    ("Qwen/Qwen3.5-397B-A17B", "qwen3.5", {"gdn", "moe", "vlm"}, 397),
    ("/data/models/qwen3_5_35b_a3b", "qwen3.5", {"gdn", "moe"}, 35),
    ("Qwen/Qwen3-Next-80B-A3B-Instruct", "qwen3-next", {"gdn", "moe"}, 80),
    ("Qwen/Qwen3-30B-A3B", "qwen3", {"moe"}, 30),
    ("Qwen/Qwen3-32B", "qwen3", set(), 32),
    ("Qwen/Qwen2.5-VL-7B-Instruct", "qwen2.5-vl", {"vlm"}, 7),
    ("Qwen/Qwen2.5-0.5B-Instruct", "qwen2.5", set(), 0.5),
    ("mistralai/Mixtral-8x7B-v0.1", "mixtral", {"moe"}, 56),
    ("deepseek-ai/DeepSeek-V3", "deepseek-v3", {"moe"}, 671),
    ("/ckpt/my-model", None, set(), None),
])
def test_model_family_table(path, family, traits, params):
    info = FamilyMatcher(load_family_table(BUILTIN_DIR / "model_families.yaml")).classify(path)
    assert info.family == family
    assert traits <= info.traits
    assert info.params_b == params
    if family != "qwen3.5":
        assert "gdn" not in info.traits or family == "qwen3-next"


def test_params_parse_ignores_active_parameter_suffix():
    assert parse_params_b("Qwen3.5-122B-A10B") == 122
    assert parse_params_b("x/Qwen3-Next-80B-A3B/hf") == 80


# ---- VL401 gdn-remove-padding ----------------------------------------------------------------

def test_vl401_ref_inheriting_from_actor_is_fine():
    # seed 002's review asked for ref use_remove_padding=False; on 0.8.0 the ref inherits it
    _, diags = run_rule("VL401", QWEN35, device="npu")
    assert diags == []


def test_vl401_explicit_ref_contradiction_fires():
    script = QWEN35.replace("log_prob_micro_batch_size_per_gpu=1",
                            "log_prob_micro_batch_size_per_gpu=1\n"
                            "    actor_rollout_ref.ref.megatron.use_remove_padding=True")
    ctx, diags = run_rule("VL401", script, device="gpu")
    assert codes(diags) == ["VL401"]
    d = diags[0]
    assert "actor_rollout_ref.ref.megatron.use_remove_padding" in d.message
    assert ctx.source.slice(d.span) == "True"
    assert "set at line" in d.message
    fixed = apply_fix(ctx, d.fix)
    assert "actor_rollout_ref.ref.megatron.use_remove_padding=False" in fixed


def test_vl401_actor_default_reports_actor_once_with_fix_in_actor_array():
    script = QWEN35.replace("    actor_rollout_ref.actor.megatron.use_remove_padding=False\n", "")
    ctx, diags = run_rule("VL401", script, device="gpu")
    # the ref inherits the same default from the actor: one finding, not two
    assert len(diags) == 1
    d = diags[0]
    assert "actor_rollout_ref.actor.megatron.use_remove_padding" in d.message
    assert "verl default" in d.message
    fixed = apply_fix(ctx, d.fix)
    assert ("    actor_rollout_ref.actor.use_dynamic_bsz=False\n"
            "    actor_rollout_ref.actor.megatron.use_remove_padding=False\n") in fixed
    assert d.fix.applicability == "unsafe"  # it changes how batches are built (issue 16)


def test_vl401_dynamic_bsz():
    script = QWEN35.replace("use_dynamic_bsz=False", "use_dynamic_bsz=True")
    ctx, diags = run_rule("VL401", script, device="gpu")
    assert len(diags) == 1 and ctx.source.slice(diags[0].span) == "True"
    assert "use_dynamic_bsz" in diags[0].message


def test_vl401_skips_unknown_model_path_and_other_models_and_fsdp():
    assert run_rule("VL401", QWEN35.replace("${MODEL_PATH:-Qwen/Qwen3.5-122B-A10B}",
                                            "${MODEL_PATH}").replace("use_dynamic_bsz=False",
                                                                     "use_dynamic_bsz=True"),
                    device="gpu")[1] == []
    assert run_rule("VL401", QWEN35.replace("Qwen3.5-122B-A10B", "Qwen3-32B")
                    .replace("use_dynamic_bsz=False", "use_dynamic_bsz=True"), device="gpu")[1] == []
    assert run_rule("VL401", QWEN35.replace("use_dynamic_bsz=False", "use_dynamic_bsz=True"),
                    defaults=FSDP_080, device="gpu")[1] == []


def test_vl401_scoped_to_gpu_megatron_core_before_018():
    script = QWEN35.replace("use_dynamic_bsz=False", "use_dynamic_bsz=True")
    # NPU: MindSpeed runs GDN in THD (verl/models/mcore/util.py preprocess_for_mindspeed)
    assert run_rule("VL401", script, device="npu")[1] == []
    # an unknown device may be a GPU: still checked
    assert len(run_rule("VL401", script, device=None)[1]) == 1
    # verl 0.9.x targets Megatron-Core 0.18, whose GDN supports THD
    assert run_rule("VL401", script, device="gpu", version="0.9.1")[1] == []


def test_model_known_from_the_literal_end_of_an_unknown_path():
    # `$HOME` is unknown, but the last path segment names the model (corpus scripts do this)
    script = QWEN35.replace("${MODEL_PATH:-Qwen/Qwen3.5-122B-A10B}",
                            "${MODEL_PATH:-$HOME/models/Qwen3.5-122B-A10B}")
    ctx, diags = run_rule("VL403", script, device="npu")
    assert ctx.config.get("actor_rollout_ref.model.path").value.reason
    assert len(diags) == 1 and "Qwen3.5" in diags[0].message
    # …but not when the unknown part is the model's own name
    for path in ("$HOME/models/${MODEL_NAME}", "$HOME/models/Qwen3.5-${SIZE}", "${ROOT}"):
        script = QWEN35.replace("${MODEL_PATH:-Qwen/Qwen3.5-122B-A10B}", f"${{MODEL_PATH:-{path}}}")
        assert run_rule("VL403", script, device="npu")[1] == [], path


def test_vl401_skips_unknown_values():
    script = QWEN35.replace("use_remove_padding=False", "use_remove_padding=${RMPAD}")
    _, diags = run_rule("VL401", script, device="gpu")
    assert diags == []


# ---- VL402 npu-megatron-bridge ---------------------------------------------------------------

def test_vl402_npu_branch_sets_vanilla_bridge_off():
    assert run_rule("VL402", QWEN35, device="npu")[1] == []
    # the GPU branch may keep the vanilla bridge
    assert run_rule("VL402", QWEN35, device="gpu")[1] == []


def test_vl402_npu_default_vanilla_bridge_fires_with_fix_in_npu_branch():
    script = QWEN35.replace("actor_rollout_ref.actor.megatron.vanilla_mbridge=False",
                            "actor_rollout_ref.actor.megatron.use_mbridge=True")
    ctx, diags = run_rule("VL402", script, device="npu")
    assert len(diags) == 1
    d = diags[0]
    assert "vanilla_mbridge" in d.message and "verl default" in d.message
    fixed = apply_fix(ctx, d.fix)
    assert ("        actor_rollout_ref.actor.megatron.use_mbridge=True\n"
            "        actor_rollout_ref.actor.megatron.vanilla_mbridge=False\n") in fixed
    assert d.fix.applicability == "safe"


def test_vl402_release_bounds():
    script = QWEN35.replace("actor_rollout_ref.actor.megatron.vanilla_mbridge=False",
                            "actor_rollout_ref.actor.megatron.use_mbridge=True")
    assert run_rule("VL402", script, device="npu", version="0.9.0")[1] == []
    assert len(run_rule("VL402", script, device="npu", version="0.7.0")[1]) == 1
    assert run_rule("VL402", script, device="gpu", version="0.8.0")[1] == []


def test_vl402_explicit_ref_contradiction_on_any_device():
    script = QWEN35.replace("log_prob_micro_batch_size_per_gpu=1",
                            "log_prob_micro_batch_size_per_gpu=1\n"
                            "    actor_rollout_ref.ref.megatron.use_mbridge=False")
    ctx, diags = run_rule("VL402", script, device="gpu")
    assert len(diags) == 1
    assert "actor_rollout_ref.ref.megatron.use_mbridge" in diags[0].message
    assert ctx.source.slice(diags[0].span) == "False"


def test_vl402_ref_fix_when_ref_is_explicitly_vanilla_on_npu():
    script = QWEN35.replace("log_prob_micro_batch_size_per_gpu=1",
                            "log_prob_micro_batch_size_per_gpu=1\n"
                            "    actor_rollout_ref.ref.megatron.vanilla_mbridge=True")
    ctx, diags = run_rule("VL402", script, device="npu")
    # (a) the ref contradicts the actor, (b) the ref runs the vanilla bridge on NPU
    assert len(diags) == 2
    assert all("actor_rollout_ref.ref.megatron.vanilla_mbridge" in d.message for d in diags)
    fixes = [d.fix for d in diags if d.fix]
    assert fixes and "ref.megatron.vanilla_mbridge=False" in apply_fix(ctx, fixes[0])


# ---- VL403 qwen35-npu-mm-cache ---------------------------------------------------------------

def test_vl403_fires_on_npu_080_and_fix_adds_an_npu_block():
    ctx, diags = run_rule("VL403", QWEN35, device="npu")
    assert len(diags) == 1
    d = diags[0]
    assert "mm_processor_cache_gb" in d.message and "not set" in d.message
    assert ctx.source.slice(d.span) == "ROLLOUT=("  # where the fix adds the npu block
    fixed = apply_fix(ctx, d.fix)
    # ROLLOUT is shared by both devices and no device branch follows it: a new npu block
    assert ("    actor_rollout_ref.rollout.gpu_memory_utilization=0.6\n"
            ")\n"
            'if [ "${DEVICE}" = "npu" ]; then\n'
            "    ROLLOUT+=(+actor_rollout_ref.rollout.engine_kwargs.vllm.mm_processor_cache_gb=0)\n"
            "fi\n") in fixed
    assert d.fix.applicability == "safe"


def test_vl403_fix_in_a_function_is_unsafe_next_to_the_shared_element():
    script = QWEN35.replace("ROLLOUT=(", "setup() {\nROLLOUT=(").replace(
        "gpu_memory_utilization=0.6\n)\n", "gpu_memory_utilization=0.6\n)\n}\nsetup\n")
    ctx, diags = run_rule("VL403", script, device="npu")
    assert diags[0].fix.applicability == "unsafe"
    assert ("gpu_memory_utilization=0.6\n"
            "    +actor_rollout_ref.rollout.engine_kwargs.vllm.mm_processor_cache_gb=0\n"
            ) in apply_fix(ctx, diags[0].fix)


def test_vl403_fix_appends_in_branch_after_the_array():
    script = QWEN35.replace(
        "python3 -m", 'case "${DEVICE}" in\n  npu)\n    export X=1\n    ;;\nesac\npython3 -m')
    ctx, diags = run_rule("VL403", script, device="npu")
    fixed = apply_fix(ctx, diags[0].fix)
    assert ("    export X=1\n"
            "    ROLLOUT+=(+actor_rollout_ref.rollout.engine_kwargs.vllm.mm_processor_cache_gb=0)\n"
            ) in fixed
    assert diags[0].fix.applicability == "safe"


def test_vl403_not_on_gpu_not_on_090_not_when_set():
    assert run_rule("VL403", QWEN35, device="gpu")[1] == []
    assert run_rule("VL403", QWEN35, device="npu", version="0.9.0")[1] == []
    script = QWEN35.replace("actor_rollout_ref.rollout.gpu_memory_utilization=0.6",
                            "actor_rollout_ref.rollout.gpu_memory_utilization=0.6\n"
                            "    +actor_rollout_ref.rollout.engine_kwargs.vllm.mm_processor_cache_gb=0")
    assert run_rule("VL403", script, device="npu")[1] == []


def test_vl403_wrong_value_points_at_it():
    script = QWEN35.replace("actor_rollout_ref.rollout.gpu_memory_utilization=0.6",
                            "+actor_rollout_ref.rollout.engine_kwargs.vllm.mm_processor_cache_gb=4")
    ctx, diags = run_rule("VL403", script, device="npu")
    assert len(diags) == 1 and ctx.source.slice(diags[0].span) == "4"
    assert "mm_processor_cache_gb=0" in apply_fix(ctx, diags[0].fix)


# ---- VL404 npu-rollout-memory-headroom -------------------------------------------------------

SEED000 = HEAD + textwrap.dedent("""\
    gen_tp=4
    ROLLOUT=(
      actor_rollout_ref.rollout.name=vllm
      actor_rollout_ref.rollout.tensor_model_parallel_size=${gen_tp}
      actor_rollout_ref.rollout.gpu_memory_utilization=0.8
    )
    python3 -m verl.trainer.main_ppo \\
        actor_rollout_ref.model.path=Qwen/Qwen3-Next-80B-A3B-Instruct \\
        "${ROLLOUT[@]}"
    """)


def test_vl404_seed000():
    ctx, diags = run_rule("VL404", SEED000, device="npu", defaults=FSDP_080, env={"gen_tp": "4"})
    assert len(diags) == 1
    d = diags[0]
    assert d.severity.value == "info"
    assert ctx.source.slice(d.span) == "0.8"
    assert "80B" in d.message
    assert "gpu_memory_utilization=0.6" in apply_fix(ctx, d.fix)
    assert d.fix.applicability == "unsafe"


def test_vl404_ascend_only_script_without_device_branch():
    script = SEED000.replace("gen_tp=4\n", "gen_tp=4\nexport HCCL_CONNECT_TIMEOUT=1800\n")
    assert len(run_rule("VL404", script, device=None, defaults=FSDP_080)[1]) == 1
    # without Ascend environment, or with CUDA's too, the device stays unknown
    assert run_rule("VL404", SEED000, device=None, defaults=FSDP_080)[1] == []
    mixed = script.replace("gen_tp=4\n", "gen_tp=4\nexport NCCL_DEBUG=INFO\n")
    assert run_rule("VL404", mixed, device=None, defaults=FSDP_080)[1] == []


def test_vl404_bounds():
    kw = dict(defaults=FSDP_080, env={"gen_tp": "4"})
    assert run_rule("VL404", SEED000, device="npu", version="0.7.1", **kw)[1] == []
    assert run_rule("VL404", SEED000, device="gpu", **kw)[1] == []
    assert run_rule("VL404", SEED000.replace("0.8\n", "0.6\n"), device="npu", **kw)[1] == []
    assert run_rule("VL404", SEED000.replace("Qwen3-Next-80B-A3B", "Qwen3-8B"),
                    device="npu", **kw)[1] == []


# ---- VL405 gspo-clip-scale -------------------------------------------------------------------

SEED001 = HEAD + textwrap.dedent("""\
    CLIP_RATIO_LOW=${CLIP_RATIO_LOW:-3e-4}
    CLIP_RATIO_HIGH=${CLIP_RATIO_HIGH:-4e-4}
    ACTOR=(
        actor_rollout_ref.actor.strategy=fsdp2
        actor_rollout_ref.actor.policy_loss.loss_mode=gspo
        actor_rollout_ref.actor.loss_agg_mode=seq-mean-token-mean
        actor_rollout_ref.actor.clip_ratio_low=${CLIP_RATIO_LOW}
        actor_rollout_ref.actor.clip_ratio_high=${CLIP_RATIO_HIGH}
    )
    python3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.name=vllm "${ACTOR[@]}"
    """)


def test_vl405_seed001_is_fine():
    assert run_rule("VL405", SEED001, defaults=FSDP_080)[1] == []


def test_vl405_token_scale_and_aggregation():
    script = SEED001.replace("3e-4}", "0.2}").replace(
        "    actor_rollout_ref.actor.loss_agg_mode=seq-mean-token-mean\n", "")
    # 0.9.1: the first release whose GSPO loss reads loss_agg_mode
    ctx, diags = run_rule("VL405", script, defaults=FSDP_080, version="0.9.1")
    msgs = sorted(d.message for d in diags)
    assert len(diags) == 2
    assert any("clip_ratio_low" in m and "0.2" in m for m in msgs)
    assert any("loss_agg_mode" in m and "token-mean (verl default)" in m for m in msgs)
    agg = next(d for d in diags if "loss_agg_mode" in d.message)
    assert "    actor_rollout_ref.actor.loss_agg_mode=seq-mean-token-mean\n" in apply_fix(ctx, agg.fix)


def test_vl405_aggregation_not_read_before_091():
    # verl 0.6.0–0.9.0 hard-code seq-mean-token-mean in compute_policy_loss_gspo
    script = SEED001.replace("    actor_rollout_ref.actor.loss_agg_mode=seq-mean-token-mean\n", "")
    for version in ("0.6.0", "0.8.0", "0.9.0"):
        assert run_rule("VL405", script, defaults=FSDP_080, version=version)[1] == [], version
    assert run_rule("VL405", script, defaults=FSDP_080, version="0.5.0")[1] == []  # no GSPO yet


def test_vl405_default_clip_ratio_with_gspo():
    script = SEED001.replace("    actor_rollout_ref.actor.clip_ratio_low=${CLIP_RATIO_LOW}\n", "")
    _, diags = run_rule("VL405", script, defaults=FSDP_080)
    assert len(diags) == 1 and "verl default" in diags[0].message


def test_vl405_not_for_other_loss_modes():
    script = SEED001.replace("loss_mode=gspo", "loss_mode=vanilla").replace("3e-4}", "0.2}")
    assert run_rule("VL405", script, defaults=FSDP_080)[1] == []


# ---- VL407 / VL408 ---------------------------------------------------------------------------

def test_vl407_engine_kwargs_for_other_engine():
    script = HEAD + ("python3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.name=sglang \\\n"
                     "    +actor_rollout_ref.rollout.engine_kwargs.vllm.mm_processor_cache_gb=0\n")
    ctx, diags = run_rule("VL407", script, defaults=FSDP_080, device=None)
    assert len(diags) == 1 and "sglang" in diags[0].message
    assert ctx.source.slice(diags[0].span) == "0"
    assert run_rule("VL407", script.replace("name=sglang", "name=vllm"), defaults=FSDP_080)[1] == []
    assert run_rule("VL407", script.replace("name=sglang", "name=${ENGINE}"),
                    defaults=FSDP_080)[1] == []


def test_vl408_npu_rollout_engine():
    script = HEAD + "python3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.name=trtllm\n"
    ctx, diags = run_rule("VL408", script, defaults=FSDP_080, device="npu")
    assert len(diags) == 1 and ctx.source.slice(diags[0].span) == "trtllm"
    assert apply_fix(ctx, diags[0].fix).endswith("rollout.name=vllm\n")
    assert run_rule("VL408", script, defaults=FSDP_080, device="gpu")[1] == []
    # a mandatory value nobody set is VL210's business
    assert run_rule("VL408", HEAD + "python3 -m verl.trainer.main_ppo\n", defaults=FSDP_080)[1] == []


def test_no_config_no_findings():
    ctx = make_ctx(QWEN35)
    object.__setattr__(ctx, "analysis", None)
    for rule in all_rules():
        if rule.code.startswith("VL4") and rule.scope == "launch":
            assert list(rule().check(ctx)) == []


# ---- the format: errors name file, rule and field --------------------------------------------

def _rule_file(tmp_path: Path, text: str, name: str = "TEAM001.yaml") -> Path:
    folder = tmp_path / "rules"
    folder.mkdir(exist_ok=True)
    (folder / name).write_text(textwrap.dedent(text))
    return folder


GOOD = """\
    code: TEAM001
    name: npu-needs-big-timeout
    severity: warning
    summary: our NPU cluster needs trainer.ray_wait_register_center_timeout >= 600
    evidence: [https://wiki.example.com/npu-cluster]
    when:
      device: npu
    require:
      - key: trainer.ray_wait_register_center_timeout
        ">=": 600
        fix:
          set: {trainer.ray_wait_register_center_timeout: 600}
    doc: |
      ## What it does
      Checks the timeout.
      ## Why is this bad?
      Registration times out on our cluster.
      ## Example
      ```bash
      python3 -m verl.trainer.main_ppo trainer.ray_wait_register_center_timeout=300
      ```
      ## Use instead
      ```bash
      python3 -m verl.trainer.main_ppo trainer.ray_wait_register_center_timeout=600
      ```
      ## References
      - our wiki
    """


@pytest.mark.parametrize("mutation,field,problem", [
    (("severity: warning", "severity: fatal"), "severity", "error"),
    (('">=": 600', '">=": 600\n        "<": 9'), "require.0", "exactly one operator"),
    (('">=": 600', '">=": lots'), "require.0", "needs a number"),
    (("device: npu", "device: tpu"), "when.device.0", "gpu"),
    (("## Use instead", "## Instead"), "doc", "Use instead"),
    (("name: npu-needs-big-timeout", "name: NpuTimeout"), "name", "kebab-case"),
    (("    when:\n", "    whenn:\n"), "whenn", "Extra inputs"),
    (("key: trainer.ray_wait_register_center_timeout\n",
      "key: trainer..timeout\n"), "require.0.key", "dotted config key"),
    (('">=": 600', '">=": 600\n        message: "{colour} is wrong"'), "require.0.message",
     "unknown placeholder(s) {colour}"),
    (("set: {trainer.ray_wait_register_center_timeout: 600}", "set: {}"), "require.0.fix.set",
     "at least 1"),
    (("      device: npu\n", '      config:\n        - {key: a.b, "~=": 1}\n'), "when.config.0",
     "(got none; unknown: ~=)"),
    (("      device: npu\n", "      config:\n        - any: [{key: a.b}]\n"),
     "when.config.0.any.0", "exactly one operator"),
])
def test_malformed_rule_names_file_rule_and_field(tmp_path, mutation, field, problem):
    folder = _rule_file(tmp_path, GOOD.replace(*mutation))
    with pytest.raises(KnowledgeBaseError) as exc:
        load_rule_folder(folder)
    message = str(exc.value)
    assert "TEAM001.yaml" in message and "rule TEAM001" in message
    assert f"field `{field}" in message and problem in message


def test_unknown_model_family_is_rejected(tmp_path):
    folder = _rule_file(tmp_path, GOOD.replace("      device: npu\n",
                                               "      model: {family: qwen35}\n"))
    with pytest.raises(KnowledgeBaseError, match=r"rule TEAM001: field `when.model.family`: "
                                                 r"unknown family qwen35 \(model_families"):
        load_rule_folder(folder)


def test_invalid_yaml_names_file_and_line(tmp_path):
    folder = _rule_file(tmp_path, "code: TEAM001\nname: [unclosed\n")
    with pytest.raises(KnowledgeBaseError, match=r"TEAM001.yaml: invalid YAML \(line \d+\)"):
        load_rule_folder(folder)


def test_missing_folder_and_duplicate_code(tmp_path):
    with pytest.raises(KnowledgeBaseError, match="not found"):
        load_rule_folder(tmp_path / "nope")
    folder = _rule_file(tmp_path, GOOD.replace("TEAM001", "VL401"), name="mine.yaml")
    with pytest.raises(KnowledgeBaseError, match=r"rule VL401: field `code`: already used by "
                                                 r"gdn-remove-padding"):
        register_rule_folder(folder)


def test_user_folder_registers_and_runs(tmp_path):
    folder = _rule_file(tmp_path, GOOD)
    rules = register_rule_folder(folder)
    assert [r.code for r in rules] == ["TEAM001"]
    assert register_rule_folder(folder) == rules  # idempotent
    assert get_rule("npu-needs-big-timeout") is rules[0]
    assert "Checks the timeout." in rules[0].docs()
    script = HEAD + ("python3 -m verl.trainer.main_ppo \\\n"
                     "    trainer.ray_wait_register_center_timeout=300 \\\n"
                     "    trainer.nnodes=1\n")
    defaults = {"trainer.ray_wait_register_center_timeout": 300}
    ctx = make_ctx(script, defaults=defaults, device="npu")
    diags = list(rules[0]().check(ctx))
    assert len(diags) == 1 and ctx.source.slice(diags[0].span) == "300"
    assert "timeout=600" in apply_fix(ctx, diags[0].fix)
    assert list(rules[0]().check(make_ctx(script, defaults=defaults, device="gpu"))) == []


def test_user_folder_model_families_extend_the_table(tmp_path):
    folder = _rule_file(tmp_path, GOOD.replace("      device: npu\n",
                                               "      model: {family: acme}\n"))
    (folder / "model_families.yaml").write_text(
        "families:\n  - name: acme\n    match: 'acme-lm'\n    traits: [gdn]\n")
    (rule,) = load_rule_folder(folder)
    script = HEAD + ("python3 -m verl.trainer.main_ppo actor_rollout_ref.model.path=/m/acme-lm-7b "
                     "trainer.ray_wait_register_center_timeout=300\n")
    ctx = make_ctx(script, defaults={"trainer.ray_wait_register_center_timeout": 300})
    assert len(list(rule().check(ctx))) == 1


def test_origin_restricts_a_require_entry_to_values_of_that_origin(tmp_path):
    """`origin: script` on a require entry: a verl default is outside the entry, not a
    violation (it used to be reported: "`…` is 300 (verl default); it must be >= 600")."""
    folder = _rule_file(tmp_path, GOOD.replace('">=": 600', '">=": 600\n        origin: script'))
    (rule,) = load_rule_folder(folder)
    defaults = {"trainer.ray_wait_register_center_timeout": 300}
    default_only = HEAD + "python3 -m verl.trainer.main_ppo trainer.nnodes=1\n"
    assert list(rule().check(make_ctx(default_only, defaults=defaults))) == []
    script = HEAD + "python3 -m verl.trainer.main_ppo trainer.ray_wait_register_center_timeout=60\n"
    ctx = make_ctx(script, defaults=defaults)
    [d] = rule().check(ctx)
    assert ctx.source.slice(d.span) == "60" and "must be >= 600" in d.message


@pytest.mark.parametrize("section,value,phrase", [
    ("require", "false", "it must not be set"), ("require", "true", "it must be set"),
    ("forbid", "false", "it must be set"), ("forbid", "true", "it must not be set"),
])
def test_is_set_message_says_what_the_entry_asks(tmp_path, section, value, phrase):
    head, rest = GOOD.split("    require:\n")
    text = (f"{head}    {section}:\n"
            f"      - {{key: trainer.ray_wait_register_center_timeout, is_set: {value}}}\n"
            + rest[rest.index("    doc: |"):])
    (rule,) = load_rule_folder(_rule_file(tmp_path, text))
    script = HEAD + "python3 -m verl.trainer.main_ppo trainer.ray_wait_register_center_timeout=60\n"
    defaults = {"trainer.ray_wait_register_center_timeout": None}
    # the key set (60) violates `require: is_set false` and `forbid: is_set true`; null (not
    # set) violates the other two
    violating = script if (section == "require") != (value == "true") else (
        HEAD + "python3 -m verl.trainer.main_ppo trainer.nnodes=1\n")
    [d] = rule().check(make_ctx(violating, defaults=defaults))
    assert d.message.endswith(phrase), d.message


# ---- VL406 device-env-mismatch (Python rule) -------------------------------------------------

ENV_SCRIPT = HEAD + textwrap.dedent("""\
    case "${DEVICE}" in
      gpu)
        export CUDA_VISIBLE_DEVICES=0,1,2,3
        export NCCL_DEBUG=WARN
        ;;
      npu)
        export CUDA_VISIBLE_DEVICES=0,1,2,3
        export HCCL_CONNECT_TIMEOUT=5400
        export NCCL_DEBUG=WARN
        ;;
    esac
    python3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.name=vllm
    """)


def test_vl406_cuda_env_in_npu_branch():
    ctx, diags = run_rule("VL406", ENV_SCRIPT, defaults=FSDP_080, device="npu")
    assert [ctx.source.slice(d.span) for d in diags] == ["CUDA_VISIBLE_DEVICES", "NCCL_DEBUG"]
    assert "ASCEND_RT_VISIBLE_DEVICES" in diags[0].message and "HCCL_*" in diags[1].message
    assert diags[0].span.line == 9
    fixed = apply_fix(ctx, diags[0].fix)
    assert "    export ASCEND_RT_VISIBLE_DEVICES=0,1,2,3\n    export HCCL" in fixed
    assert diags[1].fix is None


def test_vl406_gpu_branch_is_fine_and_ascend_env_in_gpu_branch_fires():
    assert run_rule("VL406", ENV_SCRIPT, defaults=FSDP_080, device="gpu")[1] == []
    script = ENV_SCRIPT.replace("export NCCL_DEBUG=WARN\n    ;;\n  npu",
                                "export HCCL_BUFFSIZE=300\n    ;;\n  npu")
    ctx, diags = run_rule("VL406", script, defaults=FSDP_080, device="gpu")
    assert [ctx.source.slice(d.span) for d in diags] == ["HCCL_BUFFSIZE"]


def test_vl406_trainer_device_before_070():
    script = ENV_SCRIPT.replace("export CUDA_VISIBLE_DEVICES=0,1,2,3\n    export HCCL",
                                "export ASCEND_RT_VISIBLE_DEVICES=0,1,2,3\n    export HCCL"
                                ).replace("    export NCCL_DEBUG=WARN\n    ;;\nesac", "    ;;\nesac")
    ctx, diags = run_rule("VL406", script, defaults=FSDP_080, device="npu", version="0.6.1")
    assert len(diags) == 1 and "trainer.device" in diags[0].message
    assert "cuda (verl default)" in diags[0].message
    assert "trainer.device=npu" in apply_fix(ctx, diags[0].fix)
    assert run_rule("VL406", script, defaults=FSDP_080, device="npu", version="0.7.0")[1] == []
    ok = script.replace("rollout.name=vllm", "rollout.name=vllm trainer.device=npu")
    assert run_rule("VL406", ok, defaults=FSDP_080, device="npu", version="0.6.1")[1] == []


# ---- extend-rules end to end (config file → engine → CLI output, suppression, rule docs) -------

TEAM_RULE = GOOD.replace("TEAM001", "TEAM101").replace("npu-needs-big-timeout",
                                                         "team-npu-register-timeout")


def _project(tmp_path: Path, rule_text: str) -> Path:
    (tmp_path / "pyproject.toml").write_text('[tool.verl-lint]\nextend-rules = ["team-rules"]\n')
    folder = tmp_path / "team-rules"
    folder.mkdir()
    (folder / "TEAM101.yaml").write_text(textwrap.dedent(rule_text))
    script = tmp_path / "run.sh"
    script.write_text(
        "#!/usr/bin/env bash\n# verl==0.8.0\nset -xeuo pipefail\nDEVICE=npu\n"
        "python3 -m verl.trainer.main_ppo \\\n"
        "    actor_rollout_ref.rollout.name=vllm \\\n"
        "    trainer.ray_wait_register_center_timeout=300 \\\n"
        "    trainer.device=npu\n")
    return script


def test_extend_rules_end_to_end(tmp_path, monkeypatch):
    from click.testing import CliRunner

    from verl_lint.cli import main

    script = _project(tmp_path, TEAM_RULE)
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["check", "--format", "concise", str(script)])
    assert "TEAM101" in result.output, result.output
    assert "run.sh:7:" in result.output
    result = CliRunner().invoke(main, ["rule", "TEAM101"])
    assert result.exit_code == 0 and "Checks the timeout." in result.output
    # a suppression works like for built-in rules
    text = script.read_text()
    script.write_text(text.replace("python3 -m", "# verl-lint: disable=TEAM101\npython3 -m"))
    result = CliRunner().invoke(main, ["check", "--format", "concise", str(script)])
    assert "TEAM101" not in result.output, result.output


def test_extend_rules_malformed_file_is_a_clear_error(tmp_path, monkeypatch):
    from click.testing import CliRunner

    from verl_lint.cli import main

    script = _project(tmp_path, TEAM_RULE.replace("severity: warning", "severity: loud"))
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["check", str(script)])
    assert result.exit_code == 2, result.output
    assert "TEAM101.yaml: rule TEAM101: field `severity`" in result.output
    assert "Traceback" not in result.output


def test_builtin_folder_is_the_top_level_rules_folder_shipped_as_package_data():
    # the wheel ships `rules/` through this symlink (setuptools copies it as package data)
    # (an editable install reads it through the link; a regular install holds a copy)
    repo = Path(__file__).resolve().parent.parent
    link = repo / "verl_lint" / "rules" / "knowledge" / "builtin"
    assert link.is_symlink() and link.resolve() == (repo / "rules").resolve()
    shipped = {p.name: p.read_bytes() for p in BUILTIN_DIR.glob("*.yaml")}
    in_repo = {p.name: p.read_bytes() for p in (repo / "rules").glob("*.yaml")}
    assert shipped == in_repo
    assert {"model_families.yaml", "VL401.yaml", "VL408.yaml"} <= set(shipped)


def test_fix_joins_the_scenario_if_block():
    script = QWEN35.replace("python3 -m", 'if [ "${DEVICE}" = "npu" ]; then\n'
                            "    ROLLOUT+=(actor_rollout_ref.rollout.enforce_eager=True)\nfi\n"
                            "python3 -m")
    ctx, diags = run_rule("VL403", script, device="npu")
    assert diags[0].fix.applicability == "safe"
    assert ("    ROLLOUT+=(actor_rollout_ref.rollout.enforce_eager=True "
            "+actor_rollout_ref.rollout.engine_kwargs.vllm.mm_processor_cache_gb=0)\nfi\n"
            ) in apply_fix(ctx, diags[0].fix)


def _rule_keys(spec):
    """(key, release range) of every literal key a rule reads, except keys it requires to be
    added (`if_missing: violated`: absent from verl's config by design)."""
    def of_when(when, rng):
        for c in when.config if when else ():
            for cond in getattr(c, "any", None) or [c]:
                yield cond.key, rng
    rng = spec.when.verl
    yield from of_when(spec.when, rng)
    for entry in (*spec.require, *spec.forbid):
        entry_rng = (entry.when.verl if entry.when else None) or rng
        if "*" not in entry.key and entry.if_missing != "violated":
            yield entry.key, entry_rng
        if hasattr(entry.value, "key"):
            yield entry.value.key, entry_rng
        yield from of_when(entry.when, entry_rng)


def test_rule_keys_exist_in_verl_releases_of_their_range():
    """A misspelt key would silently never match: each key must exist in some bundled release
    (ppo_trainer or ppo_megatron_trainer) inside the rule's range."""
    import gzip
    import json

    from verl_lint.rules.knowledge import load_builtin_rules
    from verl_lint.verl.versions import SUPPORTED_VERSIONS, in_range

    data = Path(__file__).resolve().parent.parent / "verl_lint" / "verl" / "data"

    def has(tree, key):
        node = tree
        for part in key.split("."):
            if not isinstance(node, dict) or part not in node:
                return False
            node = node[part]
        return True

    trees = {}
    for v in SUPPORTED_VERSIONS:
        composed = json.load(gzip.open(data / f"{v}-composed.json.gz"))
        trees[v] = [t for name, t in composed.items()
                    if "|ppo_trainer|" in name or "|ppo_megatron_trainer|" in name]
    for rule in load_builtin_rules():
        for key, rng in _rule_keys(rule.spec):
            versions = [v for v in SUPPORTED_VERSIONS if in_range(v, rng)]
            assert any(has(t, key) for v in versions for t in trees[v]), (rule.code, key)


def test_warm_start_reads_validated_rules_from_the_cache(tmp_path):
    """Start-up cost: with a warm cache the rules load without pydantic (their plain form is
    cached); a cold cache validates with the schema, and the cached specs equal freshly
    validated ones."""
    import os
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from verl_lint.rules.knowledge import loader\n"
        "from verl_lint.rules.registry import all_rules\n"
        "assert all_rules()\n"
        "print('pydantic' in sys.modules)\n"
        "specs = [loader._validate_rule(p, p.read_text(encoding='utf-8'))"
        " for p in sorted(loader.BUILTIN_DIR.glob('*.yaml')) if p.name != 'model_families.yaml']\n"
        "assert specs == [r.spec for r in loader.load_builtin_rules()]\n"
        "from verl_lint.rules.knowledge import families\n"
        "path = loader.BUILTIN_DIR / families.FAMILY_FILE\n"
        "fresh = families._validate_table(path, path.read_text(encoding='utf-8'))\n"
        "assert loader._builtin_table() == fresh and fresh.families\n"
    )
    env = dict(os.environ, VERL_LINT_CACHE_DIR=str(tmp_path))
    runs = [subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
            for _ in range(2)]
    assert [r.returncode for r in runs] == [0, 0], runs[-1].stderr
    assert runs[0].stdout.split() == ["True"]
    assert runs[1].stdout.split() == ["False"]


@pytest.mark.parametrize("passthrough", [False, True])
def test_required_key_missing_behind_passthrough_is_only_info(passthrough):
    """`if_missing: violated` (VL403): a launch ending in "$@" may get the key from its caller,
    which the script alone cannot know, so the finding drops to info and says so (as VL304)."""
    from test_rule_fixtures import lint_text

    path = Path(__file__).parent.parent / "fixtures/rules/VL403/bad_home_relative_model_path.sh"
    text = path.read_text()
    if passthrough:
        text = text.replace('    2>&1 | tee', '    "$@" 2>&1 | tee')
    [d] = [d for d in lint_text(text, path).diagnostics if d.code == "VL403"]
    assert d.severity.value == ("info" if passthrough else "error")
    assert d.message.endswith('(unless the caller passes it through "$@")') is passthrough


def test_in_against_a_value_that_is_not_a_list_gives_no_verdict():
    # `in: {key: other.key}` where other.key is a string compared character by character
    from verl_lint.rules.knowledge.conditions import compare

    assert compare("in", "a", "abc") is None and compare("not_in", "x", "abc") is None
    assert compare("in", "a", ["a", "b"]) is True and compare("not_in", "a", ["a"]) is False


def test_a_plain_fix_spec_defaults_as_the_schema_does():
    from verl_lint.rules.knowledge import plain, schema

    optional = {n: f.default for n, f in schema.FixSpec.model_fields.items() if not f.is_required()}
    assert optional and all(getattr(plain.FixSpec, n) == d for n, d in optional.items())

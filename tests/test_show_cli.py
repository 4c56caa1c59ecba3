"""`verl-lint show`: tables, JSON, pins, --effective, and clear errors for bad input."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from verl_lint.cli import main

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "scripts"
MEGATRON = str(FIXTURES / "run_qwen3_5_35b_megatron.sh")


def show(*args: str):
    return CliRunner().invoke(main, ["show", *args])


def test_table_lists_each_scenario_and_override():
    r = show(MEGATRON)
    assert r.exit_code == 0, r.output
    assert "scenario DEVICE=gpu" in r.output and "scenario DEVICE=npu" in r.output
    assert "--config-name ppo_megatron_trainer.yaml" in r.output
    assert "actor_rollout_ref.actor.megatron.pipeline_model_parallel_size" in r.output
    assert "ACTOR[@] $PP" in r.output  # where the value came from
    assert '"$@": the caller may add arguments here' in r.output


def test_json_output_per_scenario():
    r = show(MEGATRON, "--format", "json")
    assert r.exit_code == 0, r.output
    data = json.loads(r.output)
    assert [s["label"] for s in data["scenarios"]] == ["DEVICE=gpu", "DEVICE=npu"]
    npu = data["scenarios"][1]["launches"][0]
    assert npu["module"] == "verl.trainer.main_ppo"
    rows = {o["key"]: o for o in npu["overrides"]}
    assert rows["trainer.device"]["value"] == "npu" and rows["trainer.device"]["line"] == 99
    assert rows["data.train_files"]["value"] == {"unknown": "$HOME comes from the environment"}
    assert rows["actor_rollout_ref.rollout.engine_kwargs.vllm.mm_processor_cache_gb"][
        "prefix"] == "+"
    assert npu["passthrough"][0]["line"] == 115


def test_device_and_set_pin_one_scenario():
    r = show(MEGATRON, "--device", "npu", "--set", "TP=8", "--format", "json")
    data = json.loads(r.output)
    (scenario,) = data["scenarios"]
    assert scenario["label"] == "DEVICE=npu" and scenario["pins"] == {"DEVICE": "npu", "TP": "8"}
    rows = {o["key"]: o["value"] for o in scenario["launches"][0]["overrides"]}
    assert rows["actor_rollout_ref.actor.megatron.tensor_model_parallel_size"] == "8"


def test_effective_prints_values_or_the_unresolved_reason():
    r = show(MEGATRON, "--device", "gpu", "--effective", "trainer.nnodes",
             "--verl-version", "0.9.1")
    assert r.exit_code == 0, r.output
    assert "effective config (verl 0.9.1)" in r.output
    assert "trainer.nnodes = 2 (set at line 82)" in r.output  # NNODES=${NNODES:-2}
    recipe = FIXTURES.parent / "corpus" / "recipe_dapo.sh"
    r = show(str(recipe), "--effective", "trainer.nnodes", "--verl-version", "0.9.1")
    assert r.exit_code == 0, r.output
    assert "unavailable: recipe entry point recipe.dapo.main_dapo" in r.output


def test_single_scenario_script_and_no_launch(tmp_path):
    r = show(str(FIXTURES / "run_sft_torchrun.sh"))
    assert "single scenario" in r.output and "torchrun" in r.output
    p = tmp_path / "prep.sh"
    p.write_text("#!/bin/bash\nhf download x --local-dir data\n")
    r = show(str(p))
    assert r.exit_code == 0 and "no verl launch found" in r.output


def test_bad_inputs_exit_2_without_traceback(tmp_path):
    binary = tmp_path / "bin.sh"
    binary.write_bytes(b"\x7fELF\x00\x01")
    latin = tmp_path / "latin.sh"
    latin.write_bytes("echo caf\xe9\n".encode("latin-1"))
    for target, needle in ((tmp_path / "missing.sh", "no such file"),
                           (tmp_path, "is a directory"),
                           (binary, "binary file"),
                           (latin, "not valid UTF-8")):
        r = show(str(target))
        assert r.exit_code == 2, r.output
        assert needle in r.output and "Traceback" not in r.output
    r = show(MEGATRON, "--set", "NOEQUALS")
    assert r.exit_code == 2 and "--set expects VAR=VALUE" in r.output


def test_parse_errors_are_listed(tmp_path):
    p = tmp_path / "broken.sh"
    p.write_text("python3 -m verl.trainer.main_ppo a=1\nif true; then\n")
    r = show(str(p), "--format", "json")
    data = json.loads(r.output)
    assert data["parse_errors"] and data["parse_errors"][0]["message"].startswith("syntax error")


def test_uses_the_configuration_check_uses(tmp_path):
    """`show` reads the script's `[tool.verl-lint]` / `.verl-lint.toml` like `check`: its
    verl-version, device and pinned variables; the command line still wins."""
    script = tmp_path / "run.sh"
    script.write_text("#!/usr/bin/env bash\n# verl==0.6.0\nTP=${TP:-2}\n"
                      'case "$DEVICE" in\n  gpu) X=1 ;;\n  npu) X=2 ;;\nesac\n'
                      "python3 -m verl.trainer.main_ppo trainer.nnodes=$TP\n")
    (tmp_path / ".verl-lint.toml").write_text(
        'verl-version = "0.8.0"\ndevice = "npu"\nset = {TP = "4"}\n')
    data = json.loads(show(str(script), "--format", "json", "--effective", "trainer.nnodes").output)
    [scenario] = data["scenarios"]
    assert scenario["label"] == "DEVICE=npu"
    effective = scenario["launches"][0]["effective"]
    assert effective["verl_version"] == "0.8.0"
    assert effective["entries"][0]["value"] == 4
    data = json.loads(show(str(script), "--format", "json", "--effective", "trainer.nnodes",
                           "--verl-version", "0.7.0", "--device", "gpu").output)
    assert [s["label"] for s in data["scenarios"]] == ["DEVICE=gpu"]
    assert data["scenarios"][0]["launches"][0]["effective"]["verl_version"] == "0.7.0"


def test_broken_configuration_is_a_clear_error(tmp_path):
    script = tmp_path / "run.sh"
    script.write_text("#!/usr/bin/env bash\necho\n")
    (tmp_path / ".verl-lint.toml").write_text("device = [\n")
    r = show(str(script))
    assert r.exit_code == 2 and "error:" in r.output and "Traceback" not in r.output

"""The CLI keeps its word (issue 16): a device the script never tests, a version that is not
one, missing paths among others, summaries that never claim more than was checked, a
statistics table, `show` that never cuts a key and names the line behind a group default."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from verl_lint.cli import main

HEAD = "#!/usr/bin/env bash\nset -xeuo pipefail\n"
DEVICE_CASE = HEAD + """DEVICE=${DEVICE:-gpu}
case "${DEVICE}" in
    gpu) export CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7 ;;
    npu) export ASCEND_RT_VISIBLE_DEVICES=0,1,2,3,4,5,6,7 ;;
    *) echo "unknown device ${DEVICE}" >&2; exit 1 ;;
esac
python3 -m verl.trainer.main_ppo \\
    actor_rollout_ref.rollout.name=vllm \\
    trainer.n_gpus_per_node=8
"""


def run(*args: str):
    return CliRunner().invoke(main, [*args], catch_exceptions=False)


@pytest.fixture
def script(tmp_path):
    path = tmp_path / "run.sh"
    path.write_text(DEVICE_CASE)
    return path


def test_a_device_the_script_never_tests_is_an_error(script):
    result = run("check", "--no-color", "--device", "tpu", str(script))
    assert result.exit_code == 2
    assert "device 'tpu' is not one this script tests ($DEVICE: gpu, npu)" in result.stderr
    assert "All checks passed" not in result.stdout
    pinned = run("check", "--no-color", "--set", "DEVICE=tpu", str(script))
    assert pinned.exit_code == 2 and "device 'tpu' is not one" in pinned.stderr
    assert run("check", "--set", "TP=4", "-q", str(script)).exit_code != 2
    shown = run("show", "--device", "tpu", str(script))
    assert shown.exit_code == 2 and "device 'tpu' is not one" in shown.stderr
    # a tested device (or its alias) is fine, and so is a script without device branches
    assert run("check", "--no-color", "--device", "npu", "-q", str(script)).exit_code != 2
    assert run("check", "--no-color", "--device", "cuda", "-q", str(script)).exit_code != 2
    script.write_text(HEAD + "python3 -m verl.trainer.main_ppo trainer.n_gpus_per_node=8\n")
    assert "not one this script tests" not in run("check", "--device", "tpu",
                                                  str(script)).stderr


def test_fix_skips_a_device_the_script_never_tests(script):
    result = run("check", "--fix", "--unsafe-fixes", "--device", "tpu", str(script))
    assert result.exit_code == 2 and script.read_text() == DEVICE_CASE


@pytest.mark.parametrize("command", [["check"], ["show"]])
def test_a_version_that_is_no_version_is_a_usage_error(script, command):
    result = run(*command, "--verl-version", "banana", str(script))
    assert result.exit_code == 2
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and "error:" in lines[0] and "'banana' is not a verl version" in lines[0]
    assert result.stdout == ""


def test_an_unbundled_version_is_reported_once_per_run(tmp_path):
    for name in ("a.sh", "b.sh", "c.sh"):
        (tmp_path / name).write_text(DEVICE_CASE)
    result = run("check", "--format", "json", "--verl-version", "0.9.3", str(tmp_path))
    found = [d for d in json.loads(result.stdout)["diagnostics"] if d["code"] == "VL003"]
    assert len(found) == 1 and "0.9.3" in found[0]["message"]
    assert result.exit_code == 1  # the warning still counts


def test_a_missing_path_among_several_is_reported_and_the_others_linted(script, tmp_path):
    result = run("check", "--no-color", "--format", "concise", str(tmp_path / "nope.sh"),
                 str(script), str(tmp_path / "gone"))
    assert result.exit_code == 2
    assert result.stderr.count("no such file or directory") == 2
    assert f"{script}:" in result.stdout  # linted: its findings are there
    assert "2 files could not be linted" in result.stdout


def test_fix_mode_lints_the_others_too(script, tmp_path):
    result = run("check", "--fix", str(tmp_path / "nope.sh"), str(script))
    assert result.exit_code == 2 and "nope.sh: no such file or directory" in result.stderr
    assert "Fixed" in result.stderr


def test_never_all_checks_passed_when_a_file_was_not_linted(script, tmp_path):
    clean = HEAD + "echo nothing to launch\n"
    script.write_text(clean)
    binary = tmp_path / "blob.sh"
    binary.write_bytes(b"\x00\x01")
    result = run("check", "--no-color", str(script), str(binary))
    assert result.exit_code == 2
    assert "All checks passed" not in result.stdout
    assert "No findings (2 files checked); 1 file could not be linted" in result.stdout


def test_statistics_one_row_per_rule_with_severities_as_columns(script, tmp_path):
    config = tmp_path / ".verl-lint.toml"
    config.write_text('severity = { VL307 = "error" }\n'
                      'per-file-ignores = {}\n')
    other = tmp_path / "sub" / "run.sh"
    other.parent.mkdir()
    other.write_text(DEVICE_CASE.replace("=8\n", "=16\n"))
    (other.parent / ".verl-lint.toml").write_text("")  # its own config: default severities
    script.write_text(DEVICE_CASE.replace("=8\n", "=16\n"))
    result = run("check", "--statistics", str(script), str(other))
    rows = [line.split() for line in result.stdout.splitlines()]
    assert rows[0] == ["code", "name", "error", "warning", "info", "total"]
    (vl307,) = [r for r in rows if r[0] == "VL307"]
    errors, warnings, infos, total = map(int, vl307[2:])  # one row, both severities
    assert errors and warnings and not infos and total == errors + warnings


LONG_KEY = "+actor_rollout_ref.actor.megatron.override_transformer_config.moe_token_dispatcher_type"


def test_show_never_cuts_a_key(tmp_path):
    path = tmp_path / "run.sh"
    path.write_text(HEAD + f"""VERY_LONG_VARIABLE_NAME_FOR_THE_TRAINING_FILES=/data/{'a/' * 30}train.parquet
ANOTHER_QUITE_LONG_VARIABLE_NAME=/data/x
ACTOR=(
    {LONG_KEY}=flex
    data.train_files="${{VERY_LONG_VARIABLE_NAME_FOR_THE_TRAINING_FILES}}${{ANOTHER_QUITE_LONG_VARIABLE_NAME}}"
)
python3 -m verl.trainer.main_ppo "${{ACTOR[@]}}"
""")
    result = run("show", str(path))
    assert result.exit_code == 0
    assert LONG_KEY in result.stdout and "data.train_files" in result.stdout
    assert "…" not in result.stdout  # the long value wraps instead of being cut


def test_show_effective_names_the_line_of_a_group_override(tmp_path):
    path = tmp_path / "run.sh"
    path.write_text(HEAD + "python3 -m verl.trainer.main_ppo \\\n"
                    "    actor_rollout_ref.rollout.name=vllm \\\n"
                    "    model_engine=megatron \\\n"
                    "    actor_rollout_ref.actor.megatron.param_offload=True\n")
    result = run("show", "--effective", "model_engine", "--effective",
                 "actor_rollout_ref.actor.megatron.sequence_parallel", "--effective",
                 "actor_rollout_ref.actor.megatron.param_offload", "--effective",
                 "actor_rollout_ref.ref.megatron.seed", "--format", "json",
                 str(path))
    (launch,) = json.loads(result.stdout)["scenarios"][0]["launches"]
    origins = {e["key"]: e["origin"] for e in launch["effective"]["entries"]}
    assert origins["model_engine"] == (
        "set at line 5 by the config group override model_engine=megatron")
    assert origins["actor_rollout_ref.actor.megatron.sequence_parallel"] == (
        "default of the config group model_engine=megatron, chosen at line 5")
    assert origins["actor_rollout_ref.actor.megatron.param_offload"] == "set at line 6"
    assert origins["actor_rollout_ref.ref.megatron.seed"] == (
        "inherited from actor_rollout_ref.actor.megatron.seed, default of the config group "
        "model_engine=megatron, chosen at line 5")

"""Fixes that never make a script worse (issue 16): findings that follow from a misplaced group
override carry no fix, renames never land on a key the launch sets, "did you mean" stays in
the key's role and engine section, deletions leave valid bash."""

from __future__ import annotations

import shutil
import subprocess

import pytest
from click.testing import CliRunner

from verl_lint.cli import main
from verl_lint.diagnostics import Edit
from verl_lint.rules.overrides._common import widen_deletion
from verl_lint.verl.suggest import closest_keys, fits

HEAD = "#!/usr/bin/env bash\nset -xeuo pipefail\n"

MISPLACED_GROUP = HEAD + """python3 -m verl.trainer.main_ppo \\
    actor_rollout_ref.rollout.name=vllm \\
    actor_rollout_ref.actor.model_engine=megatron \\
    actor_rollout_ref.actor.megatron.tensor_model_parallel_size=2 \\
    actor_rollout_ref.actor.megatron.pipeline_model_parallel_size=2 \\
    actor_rollout_ref.ref.megatron.expert_tensor_parallel_size=1 \\
    trainer.n_gpus_per_node=8
"""


def run(*args: str):
    return CliRunner().invoke(main, ["check", "--no-color", *args], catch_exceptions=False)


def bash_ok(path) -> bool:
    return subprocess.run(["bash", "-n", str(path)], capture_output=True).returncode == 0


def json_diagnostics(path, *args):
    import json

    return json.loads(run("--format", "json", "--select", "VL2", *args, str(path)).stdout)[
        "diagnostics"]


def test_keys_of_a_misplaced_group_follow_from_it_and_carry_no_fix(tmp_path):
    script = tmp_path / "run.sh"
    script.write_text(MISPLACED_GROUP)
    found = {d["line"]: d for d in json_diagnostics(script) if d["code"] == "VL201"}
    assert found[5]["fix"]["edits"][0]["replacement"] == "model_engine"
    for line in (6, 7, 8):
        assert found[line]["fix"] is None
        assert "model_engine=megatron" in found[line]["message"]
        assert [lab["line"] for lab in found[line]["labels"]] == [5]


def test_fix_moves_the_group_first_and_judges_the_rest_on_the_fixed_text(tmp_path):
    script = tmp_path / "run.sh"
    script.write_text(MISPLACED_GROUP)
    run("--fix", "--unsafe-fixes", str(script))
    fixed = script.read_text()
    assert fixed == MISPLACED_GROUP.replace("actor_rollout_ref.actor.model_engine=",
                                            "model_engine=")
    assert not [d for d in json_diagnostics(script) if d["code"] == "VL201"]


def test_did_you_mean_stays_in_the_role_and_the_engine_section():
    from verl_lint.verl.configs import composed
    from verl_lint.verl.release import load_release

    release = load_release("0.9.1")
    tree = composed(release, release.entry_point("verl.trainer.main_ppo"), "ppo_trainer", ())
    # the FSDP config has no megatron section: nothing under fsdp_config, nothing of the rollout
    for key in ("actor_rollout_ref.ref.megatron.expert_tensor_parallel_size",
                "actor_rollout_ref.actor.megatron.pipeline_model_parallel_size",
                "actor_rollout_ref.actor.megatron.tensor_model_parallel_size"):
        assert closest_keys(key, tree=tree, value=2) == [], key
    assert closest_keys("actor_rollout_ref.actor.learning_rate", tree=tree, value=1e-6) == [
        "actor_rollout_ref.actor.optim.lr"]
    # a group written under a role is still found
    assert closest_keys("actor_rollout_ref.actor.model_engine", tree=tree,
                        value="megatron") == ["model_engine"]


def test_a_suggestion_whose_type_does_not_fit_the_value_is_dropped():
    assert fits(True, False) and fits(0.2, 3) and fits("x", 3) and fits(None, {"a": 1})
    assert not fits(True, 4) and not fits(4, "abc") and not fits({"a": 1}, 3)
    assert not fits(4, True)
    tree = {"trainer": {"use_x": True, "n_x": 4}}
    assert closest_keys("trainer.use_xx", tree=tree, value=5) == []
    assert closest_keys("trainer.use_xx", tree=tree, value=False) == ["trainer.use_x"]


RENAMED = HEAD + """ROLLOUT=(
    actor_rollout_ref.rollout.name=vllm
    actor_rollout_ref.rollout.response_length=4096
    actor_rollout_ref.rollout.single_turn_response_length={value}
)
python3 -m verl.trainer.main_ppo \\
    "${{ROLLOUT[@]}}" \\
    trainer.n_gpus_per_node=8
"""


def test_a_rename_never_lands_on_a_key_the_launch_sets(tmp_path):
    script = tmp_path / "run.sh"
    script.write_text(RENAMED.format(value=86016))
    (d,) = [d for d in json_diagnostics(script) if d["line"] == 6]
    assert "response_length" in d["message"] and d["fix"] is None
    before = script.read_text()
    run("--fix", "--unsafe-fixes", str(script))
    assert script.read_text() == before


def test_a_rename_onto_the_same_value_deletes_the_old_element(tmp_path):
    script = tmp_path / "run.sh"
    script.write_text(RENAMED.format(value=4096))
    run("--fix", "--unsafe-fixes", str(script))
    assert script.read_text() == RENAMED.format(value=4096).replace(
        "    actor_rollout_ref.rollout.single_turn_response_length=4096\n", "")
    assert bash_ok(script)


def test_a_renamed_key_set_again_with_the_same_value_is_deleted_from_the_chain(tmp_path):
    script = tmp_path / "run.sh"
    text = HEAD + """python3 -m verl.trainer.main_ppo \\
    actor_rollout_ref.rollout.name=vllm \\
    actor_rollout_ref.rollout.checkpoint_engine.update_weights_bucket_megabytes=512 \\
    actor_rollout_ref.rollout.update_weights_bucket_megabytes=512
echo done
"""
    script.write_text(text)
    run("--fix", str(script))  # safe: the new key exists in this release
    assert script.read_text() == text.replace(
        " \\\n    actor_rollout_ref.rollout.update_weights_bucket_megabytes=512", "")
    assert bash_ok(script)


@pytest.mark.parametrize("text, word, expected", [
    # a continuation line in the middle of a command: the whole line
    ("cmd \\\n    a=1 \\\n    b=2 \\\n    c=3\n", "b=2", "cmd \\\n    a=1 \\\n    c=3\n"),
    # the last argument of a continued command: the ` \` before it too
    ("cmd \\\n    a=1 \\\n    b=2\necho\n", "b=2", "cmd \\\n    a=1\necho\n"),
    # an array element, with its comment
    ("A=(\n    a=1\n    b=2  # why\n)\n", "b=2", "A=(\n    a=1\n)\n"),
    # a word among others on its line: the blanks before it
    ("cmd a=1 b=2 c=3\n", "b=2", "cmd a=1 c=3\n"),
    ("A=(b=2 a=1)\n", "b=2", "A=( a=1)\n"),
    # CRLF
    ("cmd \\\r\n    a=1 \\\r\n    b=2\r\n", "b=2", "cmd \\\r\n    a=1\r\n"),
])
def test_a_deleted_word_leaves_valid_bash(tmp_path, text, word, expected):
    data = text.encode()
    start = data.index(word.encode())
    edit = widen_deletion(data, Edit(start=start, end=start + len(word), replacement=""))
    out = data[:edit.start] + data[edit.end:]
    assert out.decode() == expected
    path = tmp_path / "x.sh"
    path.write_bytes(out)
    assert bash_ok(path)


def test_part_of_a_word_is_not_widened():
    data = b"cmd \\\n    +a=1\n"
    edit = Edit(start=data.index(b"+"), end=data.index(b"+") + 1, replacement="")
    assert widen_deletion(data, edit) == edit


pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")


QWEN35_MEGATRON = """#!/usr/bin/env bash
# verl==0.8.0
set -xeuo pipefail
python3 -m verl.trainer.main_ppo --config-name=ppo_megatron_trainer \\
    actor_rollout_ref.model.path=Qwen/Qwen3.5-35B-A3B \\
    actor_rollout_ref.rollout.name=vllm \\
    actor_rollout_ref.actor.use_kl_loss=True \\
    actor_rollout_ref.actor.megatron.use_remove_padding=True
"""


def test_a_fix_that_changes_the_run_is_never_applied_by_plain_fix(tmp_path):
    from pathlib import Path

    import yaml

    root = Path(__file__).resolve().parents[1]
    script = tmp_path / "run.sh"
    script.write_text(QWEN35_MEGATRON)
    (d,) = json_diagnostics(script, "--select", "VL401")
    assert d["fix"]["applicability"] == "unsafe"  # it flips how the run builds its batches
    run("--fix", "--select", "VL401", str(script))
    assert script.read_text() == QWEN35_MEGATRON
    run("--fix", "--unsafe-fixes", "--select", "VL401", str(script))
    assert "use_remove_padding=False" in script.read_text()
    hooks = {h["id"]: h["entry"] for h in yaml.safe_load(
        (root / ".pre-commit-hooks.yaml").read_text())}
    assert "--fix" in hooks["verl-lint-fix"] and "--unsafe-fixes" not in hooks["verl-lint-fix"]


def test_a_fix_that_would_add_an_error_is_not_applied(tmp_path):
    """VL307 would set n_gpus_per_node=8 to match CUDA_VISIBLE_DEVICES, but the actor's
    TP×PP = 16 then no longer divides the world size (VL301)."""
    script = tmp_path / "run.sh"
    text = HEAD + """export CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7
python3 -m verl.trainer.main_ppo model_engine=megatron \\
    actor_rollout_ref.rollout.name=vllm \\
    actor_rollout_ref.actor.megatron.tensor_model_parallel_size=8 \\
    actor_rollout_ref.actor.megatron.pipeline_model_parallel_size=2 \\
    trainer.n_gpus_per_node=16
"""
    script.write_text(text)
    assert [d["fix"] is not None for d in json_diagnostics(script, "--select", "VL307")] == [True]
    result = run("--fix", "--unsafe-fixes", "--select", "VL307,VL301", str(script))
    assert script.read_text() == text
    assert "VL307 fix not applied: it would add an error" in result.stderr


def test_a_finding_that_follows_from_a_group_has_no_guess_of_its_own(tmp_path):
    script = tmp_path / "run.sh"
    script.write_text(MISPLACED_GROUP.replace(
        "    trainer.n_gpus_per_node=8\n",
        "    actor_rollout_ref.actor.megatron.router_replay.mode=R3 \\\n"
        "    trainer.n_gpus_per_node=8\n"))
    (d,) = [d for d in json_diagnostics(script) if d["line"] == 9]
    assert "did you mean" not in d["message"] and "model_engine=megatron" in d["message"]


def test_a_key_directly_under_actor_rollout_ref_may_mean_any_of_its_roles():
    tree = {"actor_rollout_ref": {"actor": {"optim": {"lr": 1e-6}}, "hybrid_engine": True}}
    assert closest_keys("actor_rollout_ref.lr", tree=tree, value=1e-5) == [
        "actor_rollout_ref.actor.optim.lr"]


def test_scenarios_that_disagree_on_a_rename_get_no_fix(tmp_path):
    """On GPU the launch sets the new key already (with another value): renaming there would set
    it twice; on NPU it does not. The word is shared, so no fix is right for both."""
    script = tmp_path / "run.sh"
    text = HEAD + """DEVICE=${DEVICE:-gpu}
ROLLOUT=(
    actor_rollout_ref.rollout.name=vllm
    actor_rollout_ref.rollout.single_turn_response_length=4096
)
case "${DEVICE}" in
    gpu) ROLLOUT+=(actor_rollout_ref.rollout.response_length=8192) ;;
    npu) ;;
esac
python3 -m verl.trainer.main_ppo "${ROLLOUT[@]}" trainer.n_gpus_per_node=8
"""
    script.write_text(text)
    found = [d for d in json_diagnostics(script) if d["line"] == 6]
    assert sorted(tuple(d["scenarios"]) for d in found) == [("DEVICE=gpu",), ("DEVICE=npu",)]
    run("--fix", "--unsafe-fixes", "--select", "VL201", str(script))
    assert script.read_text() == text


def test_fixes_that_do_not_settle_are_reported():
    from verl_lint.fixes import FixOptions, FixResult, summary

    result = FixResult(path="run.sh", original=b"a", fixed=b"b", converged=False)
    assert "run.sh: fixes did not settle after 10 rounds" in summary([result], FixOptions(fix=True))


def test_another_engine_only_for_the_very_same_setting():
    tree = {"actor_rollout_ref": {"actor": {"veomni": {"param_offload": False}}}}
    assert closest_keys("actor_rollout_ref.actor.fsdp_config.param_offload", tree=tree,
                        value=True) == ["actor_rollout_ref.actor.veomni.param_offload"]
    tree = {"actor_rollout_ref": {"actor": {"fsdp_config": {"turbo_config": {
        "distributed": {"tensor_parallel_size": 1}}}}}}
    assert closest_keys("actor_rollout_ref.actor.megatron.tensor_model_parallel_size",
                        tree=tree, value=2) == []


def test_a_cached_suggestion_is_filtered_by_value_too():
    """The ranking is cached per tree and key; the value filter must apply on every call (a
    cache hit once offered `critic.megatron.sequence_parallel` for an int value, and a second
    `--fix` run over a folder renamed into it)."""
    from verl_lint.verl.configs import composed
    from verl_lint.verl.release import load_release
    from verl_lint.verl.suggest import closest_keys

    rel = load_release("0.9.1")
    tree = composed(rel, rel.entry_point("verl.trainer.main_ppo"), "ppo_megatron_trainer")
    first = closest_keys("critic.ulysses_sequence_parallel_size", tree=tree, value=2)
    again = closest_keys("critic.ulysses_sequence_parallel_size", tree=tree, value=2)
    assert first == again and "critic.megatron.sequence_parallel" not in again

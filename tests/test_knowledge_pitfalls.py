"""Issue 18 rules beyond their fixtures: bash as the oracle for VL111/VL112, severities."""

from __future__ import annotations

import shutil
import subprocess

import pytest
from test_rule_fixtures import lint_text

from verl_lint.diagnostics import Severity
from verl_lint.fixes import apply_edits
from verl_lint.shell.parser import parse_script
from verl_lint.rules.shell.unquoted_glob_override import glob_pattern
from verl_lint.source import SourceText

BASH = shutil.which("bash")
needs_bash = pytest.mark.skipif(BASH is None, reason="bash is not installed")

GLOB_WORDS = [
    "trainer.logger=['console','wandb']", "a.b=[x]", "a.b=x*", "a.b=x?y", "a.b=[x",
    "a.b=x]", "a.b=x\\[1]", "a.b=x[1']'", "a.b='[x]'", 'a.b="[x]"*', "a.b=[x\\]",
    "a.b=$'[x]'", "a.b=[[x]", "a.b=x]y[", "hydra.searchpath=[pkg://my.config]", "a.b=[x]/y",
    "a.b=[x'/'y]",
]


def _words(line: str):
    model = parse_script(SourceText(f"python3 -m verl.trainer.main_ppo {line}\n".encode(), "t"))
    return model.commands[0].words[3:]


@needs_bash
@pytest.mark.parametrize("text", GLOB_WORDS)
def test_glob_pattern_agrees_with_bash(text, tmp_path):
    """A word is a pattern exactly when bash's nullglob removes it in an empty folder."""
    (word,) = _words(text)
    out = subprocess.run([BASH, "-c", f"shopt -s nullglob; set -- {text}; printf %s $#"],
                         cwd=tmp_path, capture_output=True, text=True, check=True).stdout
    assert (glob_pattern(word) is not None) == (out == "0"), (text, out)


@needs_bash
def test_glob_fix_passes_the_same_argument(tmp_path):
    script = tmp_path / "run.sh"
    text = ("#!/usr/bin/env bash\npython3 -m verl.trainer.main_ppo "
            "trainer.logger=['console','wandb'] checkpoint.save_contents=[model,optimizer]\n")
    report = lint_text(text, script, ["--select", "VL111"])
    edits = [e for d in report.diagnostics for e in d.fix.edits]
    assert len(edits) == 2 and all(d.severity == Severity.INFO for d in report.diagnostics)
    fixed = apply_edits(text.encode(), edits).decode()
    argv = []
    for body in (text, fixed):
        shim = body.replace("python3 -m verl.trainer.main_ppo", "printf '<%s>'")
        argv.append(subprocess.run([BASH, "-c", shim], cwd=tmp_path, capture_output=True,
                                   text=True, check=True).stdout)
    assert argv[0] == argv[1] == (
        "<trainer.logger=[console,wandb]><checkpoint.save_contents=[model,optimizer]>")
    assert not lint_text(fixed, script, ["--select", "VL111"]).diagnostics


def test_glob_under_nullglob_is_a_warning(tmp_path):
    text = "shopt -s nullglob\npython3 -m verl.trainer.main_ppo trainer.logger=[console]\n"
    (d,) = lint_text(text, tmp_path / "run.sh", ["--select", "VL111"]).diagnostics
    assert d.severity == Severity.WARNING


@needs_bash
def test_placeholder_launcher_is_command_not_found(tmp_path):
    text = "TORCHRUN -m verl.trainer.sft_trainer data.train_files=a model.path=b\n"
    assert [d.code for d in lint_text(text, tmp_path / "run.sh", ["--select", "VL112"])
            .diagnostics] == ["VL112"]
    rc = subprocess.run([BASH, "-c", text], cwd=tmp_path, capture_output=True).returncode
    assert rc == 127


@pytest.mark.parametrize("text,size", [
    ("torchrun --standalone --nnodes=2 --nproc_per_node=8 -m verl.trainer.sft_trainer a.b=1", 16),
    ("N=4\ntorchrun --nproc-per-node $N -m verl.trainer.sft_trainer a.b=1", 4),
    ("torchrun --nnodes=2:2 --nproc_per_node=8 -m verl.trainer.sft_trainer a.b=1", 16),
    ("torchrun -m verl.trainer.sft_trainer a.b=1", 1),
    ("python3 -m torch.distributed.run --nproc_per_node=2 -m verl.trainer.fsdp_sft_trainer a=1", 2),
    ("torchrun --nproc_per_node=$NP -m verl.trainer.sft_trainer a.b=1", "unknown"),
    ("torchrun $DIST_ARGS -m verl.trainer.sft_trainer a.b=1", "unknown"),
    ("torchrun --nnodes=1:4 --nproc_per_node=8 -m verl.trainer.sft_trainer a.b=1", "unknown"),
    ("torchrun --nproc_per_node=gpu -m verl.trainer.sft_trainer a.b=1", "unknown"),
    ("python3 -m verl.trainer.main_ppo a.b=1", None),
])
def test_torchrun_world_size(text, size):
    from verl_lint.evaluate import Unknown, evaluate_script

    model = parse_script(SourceText(f"{text}\n".encode(), "t"))
    (launch,) = evaluate_script(model)[0].launches
    got = launch.world_size
    assert ("unknown" if isinstance(got, Unknown) else got) == size


def test_referenced_file_relative_to_the_current_folder(tmp_path, monkeypatch):
    """Without a `cd`, a relative path is read from verl-lint's own folder only when the file
    is there: a wrong name is reported, a missing file is not (the run may start elsewhere)."""
    (tmp_path / "reward.py").write_text("def compute_score_math(*a):\n    return 0.0\n")
    monkeypatch.chdir(tmp_path)
    script = tmp_path / "scripts" / "run.sh"
    script.parent.mkdir()
    text = ("python3 -m verl.trainer.main_ppo actor_rollout_ref.model.path=Qwen/Qwen3-8B "
            "custom_reward_function.path=reward.py custom_reward_function.name={name} "
            "data.custom_cls.path=missing.py data.custom_cls.name=Dataset\n")
    bad = lint_text(text.format(name="compute_score"), script, ["--select", "VL212"])
    assert [d.message.split(" (")[0] for d in bad.diagnostics] == [
        "reward.py defines no function `compute_score`"]
    good = lint_text(text.format(name="compute_score_math"), script, ["--select", "VL212"])
    assert not good.diagnostics
    # the same script cd's somewhere else first: nothing can be said
    moved = "cd /srv/job\n" + text.format(name="compute_score")
    assert not lint_text(moved, script, ["--select", "VL212"]).diagnostics

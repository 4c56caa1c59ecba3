"""The README's first commands work as printed, and what it claims is what the code does
(issue 16): the install lines, the pre-commit `rev:`, the demo over `examples/`, rule counts."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from verl_lint.cli import main
from verl_lint.rules.registry import all_rules

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
EXAMPLES = ROOT / "examples"


def lint_examples(*args: str):
    return CliRunner().invoke(main, ["check", "--no-color", *args, str(EXAMPLES)],
                              catch_exceptions=False)


def test_first_command_installs_from_the_clone_and_lints_the_examples():
    first = re.search(r"```bash\n(.*?)```", README, re.S).group(1)
    assert "pip install . && verl-lint examples/" in first
    assert "git clone https://github.com/verl-lint/verl-lint" in first


def test_no_install_line_assumes_pypi():
    # `pip install verl-lint` fails while the package is not on PyPI
    assert not re.search(r"pip install ['\"]?verl-lint\b(?![./])", README)
    assert "pip install git+https://github.com/verl-lint/verl-lint" in README


def test_pre_commit_rev_exists():
    revs = re.findall(r"^\s+rev:\s*(\S+)", README, re.M)
    assert revs
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    for rev in revs:
        found = subprocess.run(["git", "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"],
                               cwd=ROOT, capture_output=True)
        assert found.returncode == 0, f"rev: {rev} is no tag, branch or commit of the repository"


def test_the_demo_is_short_and_has_the_findings_the_readme_names():
    result = lint_examples("--format", "concise")
    assert result.exit_code == 1
    found = sorted((Path(line.split(":")[0]).name, int(line.split(":")[1]), line.split()[1])
                   for line in result.stdout.splitlines() if ": VL" in line)
    assert found == [
        ("run_qwen2_5_7b_ppo_megatron.sh", 24, "VL301"),
        ("run_qwen2_5_7b_ppo_megatron.sh", 28, "VL204"),
        ("run_qwen3_8b_grpo_fsdp.sh", 22, "VL406"),
        ("run_qwen3_8b_grpo_fsdp.sh", 41, "VL201"),
        ("run_qwen3_8b_grpo_fsdp.sh", 52, "VL203"),
    ]
    summary = result.stdout.splitlines()[-1]
    assert f"```text\n{summary}\n```" in README
    assert len(lint_examples().stdout.splitlines()) < 80  # readable at a glance


def test_examples_are_valid_bash():
    if shutil.which("bash") is None:
        pytest.skip("needs bash")
    for script in sorted(EXAMPLES.glob("*.sh")):
        assert subprocess.run(["bash", "-n", str(script)]).returncode == 0, script


def test_rule_counts_in_the_readme_are_true():
    for n in re.findall(r"\b(\d+) rules\b", README):
        assert int(n) == len(all_rules()), f"README says {n} rules; there are {len(all_rules())}"


def test_output_shown_in_the_readme_is_what_the_command_prints(monkeypatch):
    import shlex

    monkeypatch.chdir(ROOT)  # the README's paths are relative to the clone
    blocks = re.findall(r"```text\n\$ verl-lint ([^\n]*)\n(.*?)```", README, re.S)
    assert blocks
    for args, shown in blocks:
        result = CliRunner().invoke(main, ["--no-color", *shlex.split(args)],
                                    catch_exceptions=False)
        assert result.stdout == shown, args


def test_json_example_in_the_readme_is_what_the_command_prints(monkeypatch):
    import json

    monkeypatch.chdir(ROOT)
    shown = json.loads(re.search(r"```json\n(.*?)```", README, re.S).group(1))
    result = CliRunner().invoke(main, ["check", "--format", "json", "--select", "VL406",
                                       "examples/run_qwen3_8b_grpo_fsdp.sh"],
                                catch_exceptions=False)
    assert json.loads(result.stdout) == shown

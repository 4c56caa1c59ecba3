"""The published pre-commit hooks, run the way users run them: `pre-commit try-repo`.

try-repo installs this repository into pre-commit's own virtualenv, so the test works on a
committed copy of the working tree (the hooks file must be committed) and runs the hook on
scripts in a second throwaway git repository.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
BAD = ROOT / "fixtures" / "corpus" / "bug_hydra_prefixes.sh"
GOOD = ROOT / "fixtures" / "corpus" / "inline_grpo_gsm8k.sh"
SKIP = {".git", ".ci-venv", "build", "dist", "__pycache__", ".pytest_cache", ".hypothesis",
        "verl_lint.egg-info"}


def _pre_commit() -> str | None:
    local = Path(sys.executable).parent / "pre-commit"
    return str(local) if local.exists() else shutil.which("pre-commit")


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.com",
                    "-c", "commit.gpgsign=false", *args],
                   cwd=cwd, check=True, capture_output=True)


def test_hooks_file_matches_the_contract():
    hooks = {h["id"]: h for h in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())}
    assert hooks["verl-lint"]["entry"] == "verl-lint check --force-exclude"
    assert hooks["verl-lint-fix"]["entry"] == "verl-lint check --fix --force-exclude"
    for hook in hooks.values():
        assert hook["types"] == ["shell"] and hook["require_serial"] is True
        assert hook["language"] == "python"


@pytest.fixture(scope="module")
def try_repo(tmp_path_factory):
    exe = _pre_commit()
    if exe is None:
        pytest.skip("pre-commit is not installed (pip install '.[test]' provides it)")
    if shutil.which("git") is None:
        pytest.skip("git is not installed; pre-commit needs it")
    base = tmp_path_factory.mktemp("precommit")
    hook_repo = base / "verl-lint"
    shutil.copytree(ROOT, hook_repo, ignore=lambda d, names: [n for n in names if n in SKIP])
    _git(hook_repo, "init", "-q")
    _git(hook_repo, "add", "-A")
    _git(hook_repo, "commit", "-q", "-m", "snapshot")
    project = base / "project"
    project.mkdir()
    shutil.copy(BAD, project / "bad.sh")
    shutil.copy(GOOD, project / "good.sh")
    _git(project, "init", "-q")
    _git(project, "add", "-A")
    env = {**os.environ, "PRE_COMMIT_HOME": str(base / "cache"), "NO_COLOR": "1"}
    env.pop("VIRTUAL_ENV", None)
    # try-repo installs the hook into a fresh store each time: run both at once
    procs = {
        name: subprocess.Popen([exe, "try-repo", str(hook_repo), "verl-lint", "--files", name],
                               cwd=project, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)
        for name in ("bad.sh", "good.sh")
    }
    results = {}
    for name, proc in procs.items():
        out, _ = proc.communicate(timeout=900)
        results[name] = (proc.returncode, out)
    return results


def test_hook_fails_on_a_bad_script_with_the_finding(try_repo):
    status, out = try_repo["bad.sh"]
    assert status == 1, out
    assert "VL203" in out and "bad.sh" in out, out


def test_hook_passes_on_a_good_script(try_repo):
    status, out = try_repo["good.sh"]
    assert status == 0, out
    assert "verl-lint" in out and "Passed" in out, out

"""A configuration file that loops (a symlink to itself, or a ring of them) is one error line per
file it governs; the other files are linted and the run ends with exit 2 (issue 19)."""

from __future__ import annotations

import os

import pytest
from click.testing import CliRunner

from verl_lint.cli import main
from verl_lint.settings import clear_caches

SCRIPT = "#!/bin/bash\necho $UNSET_X\n"


@pytest.fixture
def tree(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("VERL_LINT_NO_CACHE", "1")
    for name in ("self", "ring", "fine"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "run.sh").write_text(SCRIPT)
    os.symlink(".verl-lint.toml", tmp_path / "self" / ".verl-lint.toml")
    os.symlink("b.toml", tmp_path / "ring" / "a.toml")
    os.symlink("a.toml", tmp_path / "ring" / "b.toml")
    os.symlink("a.toml", tmp_path / "ring" / ".verl-lint.toml")
    clear_caches()
    yield tmp_path
    clear_caches()


@pytest.mark.parametrize("args", [
    ["self", "fine", "ring"],
    ["self/run.sh", "fine/run.sh", "ring/run.sh"],
    ["--fix", "self", "fine", "ring"],
])
def test_a_looping_config_is_reported_per_file_and_the_run_goes_on(tree, args):
    result = CliRunner().invoke(main, ["--format", "concise", *args], catch_exceptions=False)
    assert result.exit_code == 2
    assert "fine/run.sh:2:6: VL101" in result.stdout  # the other file is linted
    errors = [e for e in result.stderr.splitlines() if e.startswith("error:")]
    assert len(errors) == 2, errors
    for name, line in zip(("self", "ring"), errors):
        assert line.startswith(f"error: {name}/run.sh: ")
        assert f"{name}{os.sep}.verl-lint.toml: cannot read" in line

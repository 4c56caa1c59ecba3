"""As a new user would: the installed `verl-lint` on the bundled fixtures, every stage real."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

ROOT = Path(__file__).parent.parent


def verl_lint(*args: str) -> subprocess.CompletedProcess:
    exe = shutil.which("verl-lint", path=str(Path(sys.executable).parent))
    cmd = [exe] if exe else [sys.executable, "-c", "from verl_lint.cli import main; main()"]
    return subprocess.run([*cmd, *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=600)


def test_full_output_with_code_frames_exits_1():
    result = verl_lint("fixtures/rules/VL002/bad_stale_directives.sh", "--no-color")
    assert result.returncode == 1, result.stderr
    assert ("warning[VL002]: unused suppression: `VL001` (shell-parse-error) reports nothing "
            "on the next statement\n --> fixtures/rules/VL002/bad_stale_directives.sh:7:26\n"
            "  |\n7 |     # verl-lint: disable=VL001\n"
            "  |                          ^^^^^ unused-suppression\n") in result.stdout
    assert result.stdout.rstrip().endswith("(1 file checked)")
    assert verl_lint("fixtures/rules/VL002/bad_stale_directives.sh", "--exit-zero").returncode == 0


@pytest.mark.parametrize("fmt", ["json", "sarif"])
def test_machine_formats_on_every_fixture(fmt):
    result = verl_lint("fixtures/corpus", "fixtures/scripts", "--format", fmt, "--jobs", "2")
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    doc = json.loads(result.stdout)
    if fmt == "json":
        assert doc["diagnostics"] and all(f["error"] is None for f in doc["files"])
    else:
        schema = json.loads((ROOT / "tests" / "data" / "sarif-schema-2.1.0.json").read_text())
        jsonschema.validate(doc, schema, format_checker=jsonschema.FormatChecker())

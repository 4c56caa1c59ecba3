"""`verl-lint check` and `verl-lint rule` end to end (in process, with the fake rules of
test_engine so these tests do not depend on the other rules' progress)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from test_engine import fakes  # noqa: F401 - fixture

from verl_lint.cli import main
from verl_lint.settings import clear_caches

BAD = "#!/usr/bin/env bash\nset -euo pipefail\nbad\nonly_npu\n"
CLEAN = "#!/usr/bin/env bash\necho ok\n"


@pytest.fixture
def project(tmp_path, monkeypatch, fakes):
    monkeypatch.chdir(tmp_path)
    clear_caches()
    (tmp_path / "scripts").mkdir()
    (tmp_path / "scripts" / "bad.sh").write_text(BAD)
    (tmp_path / "scripts" / "clean.sh").write_text(CLEAN)
    (tmp_path / "scripts" / "launch").write_text(BAD)  # no extension, bash shebang
    (tmp_path / "scripts" / "notes.txt").write_text("bad\n")
    (tmp_path / ".verl-lint.toml").write_text('select = ["VL9", "VL002"]\n')
    yield tmp_path
    clear_caches()


def run(*args: str, input: bytes | None = None):
    return CliRunner().invoke(main, list(args), input=input, catch_exceptions=False)


def test_findings_exit_1_with_concise_lines(project):
    result = run("check", "--format", "concise", "scripts")
    assert result.exit_code == 1
    assert result.stdout.splitlines() == [
        "scripts/bad.sh:3:1: VL901 bad command",
        "scripts/bad.sh:4:1: VL902 only_npu seen [DEVICE=npu]",
        "scripts/launch:3:1: VL901 bad command",
        "scripts/launch:4:1: VL902 only_npu seen [DEVICE=npu]",
        "2 errors, 2 warnings in 2 files (3 files checked)",
    ]


def test_default_command_is_check_and_full_format(project):
    result = run("scripts/bad.sh", "--no-color")
    assert result.exit_code == 1
    assert "error[VL901]: bad command\n --> scripts/bad.sh:3:1" in result.stdout
    assert "  = when: DEVICE=npu" in result.stdout
    assert "\x1b[" not in result.stdout


def test_clean_exit_0(project):
    result = run("check", "scripts/clean.sh")
    assert result.exit_code == 0 and "All checks passed (1 file checked)" in result.stdout
    assert run("check", "-q", "scripts/clean.sh").stdout == ""


def test_exit_zero_and_fail_on(project):
    assert run("check", "--exit-zero", "scripts").exit_code == 0
    only_warnings = run("check", "--ignore", "VL901", "--fail-on", "error", "scripts")
    assert only_warnings.exit_code == 0 and "VL902" in only_warnings.stdout
    assert run("check", "--ignore", "VL901", "scripts").exit_code == 1  # warning fails by default


def test_select_device_and_set(project):
    result = run("check", "--format", "concise", "--select", "VL902", "--device", "gpu",
                 "scripts/bad.sh")
    assert result.exit_code == 0
    assert run("check", "--set", "NOEQUALS", "scripts").exit_code == 2


def test_config_discovery_closest_wins(project):
    (project / "scripts" / ".verl-lint.toml").write_text('ignore = ["VL901", "VL902"]\n')
    result = run("check", "--format", "concise", "scripts")
    assert result.exit_code == 0, result.stdout  # scripts/ config: ALL minus the two fakes
    clear_caches()
    result = run("check", "--config", ".verl-lint.toml", "--format", "concise", "scripts")
    assert result.exit_code == 1


def test_exclude(project):
    (project / ".verl-lint.toml").write_text('select = ["VL9"]\nexclude = ["launch"]\n')
    result = run("check", "--format", "concise", "scripts")
    assert "scripts/launch" not in result.stdout
    assert "scripts/launch" in run("check", "--format", "concise", "scripts/launch").stdout
    forced = run("check", "--force-exclude", "scripts/launch")
    assert forced.exit_code == 0 and "launch" not in forced.stdout


def test_bad_config_exit_2(project):
    (project / ".verl-lint.toml").write_text('select = ["VL9"]\nfail_on = "error"\n')
    result = run("check", "scripts")
    assert result.exit_code == 2
    assert result.stderr.startswith(f"error: {project / '.verl-lint.toml'}: unknown key "
                                    "'fail_on' (did you mean 'fail-on'?)")
    assert "Traceback" not in result.output


def test_unknown_rule_code_exit_2(project):
    result = run("check", "--select", "VL9999", "scripts")
    assert result.exit_code == 2
    assert result.stderr.startswith("error: --select: unknown rule selector 'VL9999'")


def test_stdin_uses_filename_for_config_and_display(project):
    (project / "scripts" / ".verl-lint.toml").write_text('select = ["VL901"]\n')
    result = run("check", "--format", "concise", "-", "--stdin-filename", "scripts/x.sh",
                 input=BAD.encode())
    assert result.exit_code == 1
    assert result.stdout.splitlines()[0] == "scripts/x.sh:3:1: VL901 bad command"
    assert "VL902" not in result.stdout
    assert run("check", "-", input=b"echo \xff\n").exit_code == 2


def test_json_and_output_file(project):
    result = run("check", "--format", "json", "--output", "out.json", "scripts")
    assert result.exit_code == 1 and result.stdout == ""
    doc = json.loads((project / "out.json").read_text())
    assert [f["path"] for f in doc["files"]] == ["scripts/bad.sh", "scripts/clean.sh",
                                                 "scripts/launch"]
    assert doc["diagnostics"][1]["scenarios"] == ["DEVICE=npu"]


def test_unlintable_and_missing_files_exit_2(project):
    (project / "scripts" / "blob.sh").write_bytes(b"\x00\x01")
    result = run("check", "--format", "concise", "scripts")
    assert result.exit_code == 2
    assert "error: scripts/blob.sh: binary file (contains NUL bytes); not linted" in result.stderr
    missing = run("check", "nope.sh")
    assert missing.exit_code == 2 and "nope.sh: no such file or directory" in missing.stderr
    (project / "empty").mkdir()
    assert "no shell scripts" in run("check", "empty").stderr


def test_statistics(project):
    result = run("check", "--statistics", "scripts")
    assert [line.split() for line in result.stdout.splitlines()[:3]] == [
        ["code", "name", "error", "warning", "info", "total"],
        ["VL901", "fake-bad-command", "2", "0", "0", "2"],
        ["VL902", "fake-scenario", "0", "2", "0", "2"]]


def test_jobs_same_output(project):
    serial = run("check", "--format", "concise", "scripts").stdout
    assert run("check", "--format", "concise", "--jobs", "2", "scripts").stdout == serial


def test_show_settings(project):
    result = run("check", "--show-settings", "--fail-on", "info", "scripts/bad.sh")
    assert result.exit_code == 0
    head, body = result.stdout.split("\n", 1)
    assert head == f"Settings for scripts/bad.sh from {project / '.verl-lint.toml'}:"
    data = json.loads(body)
    assert data["fail-on"] == "info" and data["select"] == ["VL9", "VL002"]


def test_rule_command():
    page = run("rule", "VL001")
    assert page.exit_code == 0
    assert page.stdout.startswith("# VL001 shell-parse-error\n\nSeverity: error")
    assert "## What it does" in page.stdout
    assert run("rule", "unused-suppression").stdout.startswith("# VL002 unused-suppression")
    listing = json.loads(run("rule", "--all", "--format", "json").stdout)
    assert [r["code"] for r in listing][:4] == ["VL001", "VL002", "VL003", "VL004"]
    unknown = run("rule", "VL0001")
    assert unknown.exit_code == 2 and "did you mean 'VL001'" in unknown.stderr
    assert run("rule").exit_code == 2


def test_readme_rules_table_is_current():
    """README's rules table is `verl-lint rule --all --format markdown`
    (VERL_LINT_UPDATE_SNAPSHOTS=1 rewrites it)."""
    import os

    readme_path = Path(__file__).parent.parent / "README.md"
    readme = readme_path.read_text(encoding="utf-8")
    start = readme.index("<!-- rules-table -->\n") + len("<!-- rules-table -->\n")
    end = readme.index("<!-- /rules-table -->")
    table = run("rule", "--all", "--format", "markdown").stdout
    if os.environ.get("VERL_LINT_UPDATE_SNAPSHOTS") == "1":
        readme_path.write_text(readme[:start] + table + readme[end:], encoding="utf-8")
        return
    assert readme[start:end] == table, (
        "README rules table is stale: run VERL_LINT_UPDATE_SNAPSHOTS=1 pytest tests/test_cli.py")


def test_docs_rules_md_is_current():
    """docs/rules.md (where every rule's docs URL points) is generated from the registry."""
    import os

    from verl_lint.cli.rule import docs_markdown
    from verl_lint.rules.registry import all_rules

    path = Path(__file__).parent.parent / "docs" / "rules.md"
    text = docs_markdown(all_rules())
    if os.environ.get("VERL_LINT_UPDATE_SNAPSHOTS") == "1":
        path.parent.mkdir(exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return
    assert path.exists() and path.read_text(encoding="utf-8") == text, (
        "docs/rules.md is stale: run VERL_LINT_UPDATE_SNAPSHOTS=1 pytest tests/test_cli.py")
    for rule in all_rules():
        assert f"\n## {rule.code} {rule.name}\n" in text  # the anchor of rule.url()


@pytest.mark.parametrize("head, found", [
    (b"#!/usr/bin/env bash\n", True), (b"#!/bin/sh\n", True), (b"\xef\xbb\xbf#!/bin/bash\n", True),
    (b"#!/bin/sh -e\n", True), (b"#!/bin/sh\r\n", True),
    (b"#!/usr/bin/env python3\n", False), (b"echo hi\n", False), (b"\xef\xbb\xbfecho\n", False),
    (b"#!/bin/csh\n", False),
])
def test_extensionless_files_are_scripts_by_their_shebang(tmp_path, head, found):
    from verl_lint.discovery import is_script
    from verl_lint.lsp.server import is_script_document

    path = tmp_path / "launch"
    path.write_bytes(head + b"echo ok\n")
    assert is_script(path) is found
    # the language server decides an open document without a shell language id the same way
    text = (head + b"echo ok\n").decode("utf-8")
    assert is_script_document(path.as_uri(), "plaintext", text) is found

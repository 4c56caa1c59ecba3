"""`--fix --unsafe-fixes` over verl's own launch scripts and the fixtures (issue 16): every fixed
file still passes `bash -n`, a second run changes nothing, and no fixed file has an error on a
line that had none."""

from __future__ import annotations

import difflib
import json
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from verl_lint.cli import main

ROOT = Path(__file__).resolve().parents[1]
VERL_HEAD = ROOT.parent / "shared" / "corpus" / "verl-head"

pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")


def check(*args: str):
    return CliRunner().invoke(main, ["check", "--no-color", *args], catch_exceptions=False)


def error_lines(tree: Path) -> tuple[dict[str, set[int]], set[str]]:
    """{path: 1-based lines with an error finding}, and the files that could not be linted."""
    report = json.loads(check("--format", "json", "--select", "ALL", str(tree)).stdout)
    lines: dict[str, set[int]] = {}
    for d in report["diagnostics"]:
        if d["severity"] == "error":
            lines.setdefault(d["path"], set()).add(d["line"])
    return lines, {f["path"] for f in report["files"] if f["error"]}


def old_line(before: list[str], after: list[str], line: int) -> int:
    """The line of `before` that line `line` of `after` comes from (a changed line: the first
    of the lines it replaced)."""
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, before, after).get_opcodes():
        if j1 < line <= j2 or (j1 == j2 == line - 1):
            return i1 + 1 + (line - 1 - j1 if tag == "equal" else 0)
    return line


@pytest.fixture(scope="module")
def fixed(tmp_path_factory):
    tree = tmp_path_factory.mktemp("fixcorpus")
    shutil.copytree(ROOT / "fixtures", tree / "fixtures")
    if VERL_HEAD.is_dir():
        shutil.copytree(VERL_HEAD, tree / "verl-head")
    originals = {p: p.read_bytes() for p in tree.rglob("*.sh")}
    before, failed = error_lines(tree)
    check("--fix", "--unsafe-fixes", "-q", "--format", "concise", str(tree))
    changed = {p: data for p, data in originals.items() if p.read_bytes() != data}
    return tree, originals, changed, before, failed


def test_fixing_changes_something(fixed):
    _, _, changed, _, _ = fixed
    assert len(changed) >= 20  # the fixtures alone have dozens of fixable findings


def test_every_fixed_file_still_parses_with_bash(fixed, tmp_path):
    _, _, changed, _, _ = fixed
    broken = []
    for path, data in changed.items():
        original = tmp_path / "original.sh"
        original.write_bytes(data)
        was_ok = subprocess.run(["bash", "-n", str(original)], capture_output=True).returncode
        now = subprocess.run(["bash", "-n", str(path)], capture_output=True)
        if now.returncode and not was_ok:
            broken.append(f"{path}: {now.stderr.decode(errors='replace')}")
    assert not broken


def test_a_second_run_changes_nothing(fixed):
    tree, originals, _, _, _ = fixed
    now = {p: p.read_bytes() for p in originals}
    check("--fix", "--unsafe-fixes", "-q", "--format", "concise", str(tree))
    assert [str(p) for p, data in now.items() if p.read_bytes() != data] == []


def test_no_fixed_file_has_a_new_error(fixed):
    tree, _, changed, before, failed = fixed
    after, _ = error_lines(tree)
    new = []
    for path, data in changed.items():
        if str(path) in failed:
            continue  # a rule crashed on the original: its findings are incomplete
        old_text = data.decode("utf-8", "replace").splitlines()
        new_text = path.read_text(encoding="utf-8", errors="replace").splitlines()
        had = before.get(str(path), set())
        for line in sorted(after.get(str(path), set())):
            if old_line(old_text, new_text, line) not in had:
                new.append(f"{path}:{line}: {new_text[line - 1].strip()}")
    assert not new


def test_every_fix_comes_from_a_rule_whose_docs_state_its_safety():
    from verl_lint.rules.registry import all_rules

    report = json.loads(check("--format", "json", "--select", "ALL",
                              str(ROOT / "fixtures")).stdout)
    fixable = {r.code for r in all_rules() if r.fixable}  # their docs need a Fix safety section
    assert {d["code"] for d in report["diagnostics"] if d["fix"]} <= fixable

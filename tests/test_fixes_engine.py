"""`check --fix/--diff/--show-fixes/--add-suppressions` over the real engine and rules."""

from __future__ import annotations

import shutil
import stat
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given

from strategies import hostile_scripts, verl_scripts
from verl_lint.cli import main
from verl_lint.engine import lint_source
from verl_lint.fixes import count_parse_errors, engine_lint, fix_source, suppress_source
from verl_lint.settings import Settings
from verl_lint.source import SourceText

ROOT = Path(__file__).resolve().parents[1]
CORPUS = sorted((ROOT / "fixtures" / "corpus").rglob("*.sh"))
BAD = ROOT / "fixtures" / "corpus" / "bug_hydra_prefixes.sh"
SETTINGS = Settings()


def run(*args: str):
    return CliRunner().invoke(main, ["check", "--no-color", *args], catch_exceptions=False)


def codes(path: Path) -> list[str]:
    report = lint_source(SourceText(path.read_bytes(), str(path)), SETTINGS, path=str(path))
    return [d.code for d in report.diagnostics]


@pytest.fixture
def bad(tmp_path) -> Path:
    target = tmp_path / "run.sh"
    shutil.copy(BAD, target)
    target.chmod(0o754)
    return target


def test_diff_prints_fixes_and_changes_nothing(bad):
    before = bad.read_bytes()
    result = run("--diff", str(bad))
    assert result.exit_code == 1
    assert "-    +actor_rollout_ref.rollout.n=8 \\\n+    actor_rollout_ref.rollout.n=8 \\\n" \
        in result.stdout
    assert bad.read_bytes() == before


def test_fix_rewrites_keeps_mode_and_relints_clean_of_fixed_rules(bad):
    assert "VL203" in codes(bad)
    result = run("--fix", "--show-fixes", str(bad))
    assert "VL203" in result.stdout and "Fixed" in result.stdout
    assert "VL203" not in codes(bad)
    assert "    actor_rollout_ref.rollout.n=8 \\\n" in bad.read_text()
    assert stat.S_IMODE(bad.stat().st_mode) == 0o754
    again = run("--diff", str(bad))
    assert again.exit_code == 0, again.stdout  # nothing left to fix: converged


def test_fix_keeps_crlf(tmp_path):
    target = tmp_path / "crlf.sh"
    target.write_bytes(BAD.read_bytes().replace(b"\n", b"\r\n"))
    run("--fix", str(target))
    data = target.read_bytes()
    assert b"    actor_rollout_ref.rollout.n=8 \\\r\n" in data
    assert data.count(b"\n") == data.count(b"\r\n")


def test_add_suppressions_silences_every_finding(bad):
    assert run(str(bad)).exit_code == 1
    result = run("--add-suppressions", str(bad))
    assert result.exit_code == 0, result.stdout
    assert "# verl-lint: disable=" in bad.read_text()
    assert codes(bad) == []


@pytest.mark.parametrize("script", CORPUS, ids=lambda p: p.name)
def test_add_suppressions_on_the_corpus_leaves_no_finding(script):
    source = SourceText(script.read_bytes(), str(script))
    result = suppress_source(source, engine_lint(SETTINGS, str(script)))
    assert [f"{d.code}:{d.span.line}" for d in result.diagnostics] == []
    assert count_parse_errors(SourceText(result.fixed)) <= count_parse_errors(source)


@pytest.mark.parametrize("script", CORPUS, ids=lambda p: p.name)
def test_fixing_the_corpus_converges_without_parse_errors(script):
    source = SourceText(script.read_bytes(), str(script))
    result = fix_source(source, engine_lint(SETTINGS, str(script)), unsafe=True)
    assert result.converged
    assert count_parse_errors(SourceText(result.fixed)) <= count_parse_errors(source)


def _check_fix_property(data: bytes) -> None:
    source = SourceText(data, "gen.sh")
    before = count_parse_errors(source)
    result = fix_source(source, engine_lint(SETTINGS, "gen.sh"))
    assert count_parse_errors(SourceText(result.fixed)) <= before
    assert result.converged and result.rounds <= 10


@given(verl_scripts())
def test_property_safe_fixes_parse_and_converge(data):
    _check_fix_property(data)


@given(hostile_scripts())
def test_property_safe_fixes_on_hostile_input(data):
    _check_fix_property(data)


def test_show_fixes_alone_lists_and_changes_nothing(bad):
    before = bad.read_bytes()
    result = run("--show-fixes", "--format", "concise", str(bad))
    assert result.stdout.startswith("Would fix 3 findings:")
    assert "2 × VL203 (append-existing-key)" in result.stdout
    assert bad.read_bytes() == before and result.exit_code == 1


def test_stdin_fix_prints_the_fixed_script():
    result = CliRunner().invoke(main, ["check", "--fix", "--stdin-filename", "run.sh", "-"],
                                input=BAD.read_bytes())
    assert "    actor_rollout_ref.rollout.n=8 \\\n" in result.stdout
    assert result.stdout.startswith("#!/usr/bin/env bash")
    assert result.exit_code == 1  # VL205 has no safe fix and remains

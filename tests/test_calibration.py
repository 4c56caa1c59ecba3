"""Issue 15: rule severities and verdicts calibrated against verl's code, with the regression
fixtures cut from verl's own scripts (`fixtures/rules/`; the expected files do not hold the
severity, so it is checked here)."""

from __future__ import annotations

from pathlib import Path

import pytest

from verl_lint.diagnostics import Severity

from test_rule_fixtures import ROOT, lint_text


def findings(case: str, code: str | None = None):
    script = ROOT / f"{case}.sh"
    code = code or case.split("/", 1)[0]
    report = lint_text(script.read_text(encoding="utf-8"), script, ["--extend-select", code])
    assert report.error is None, report.error
    return [d for d in report.diagnostics if d.code == code]


def severities(case: str, code: str | None = None) -> list[tuple[int, Severity]]:
    return [(d.span.line, d.severity) for d in findings(case, code)]


# ---- VL106: info unless the script's own known value is split ------------------------------

def test_vl106_caller_arguments_and_unknown_elements_are_info():
    got = dict(severities("VL106/bad_unquoted_arrays"))
    assert got[16] == Severity.INFO  # DATA: $HOME values, nothing known to split
    assert got[18] == Severity.INFO  # `$@`: only what a caller passes could split


def test_vl106_known_element_with_a_space_is_a_warning():
    got = dict(severities("VL106/bad_unquoted_arrays"))
    assert got[17] == Severity.WARNING  # "trainer.logger=['console', 'wandb']" splits in two


def test_vl106_brace_word_is_a_warning():
    assert {s for _, s in severities("VL106/bad_brace_expansion")} == {Severity.WARNING}


def test_vl106_sliced_arguments_are_info_and_keep_the_fix():
    (d,) = findings("VL106/bad_sliced_arguments")
    assert d.severity == Severity.INFO and d.fix is not None


# ---- VL209: a dead value the run uses anyway is redundant, not a wrong run ------------------

def test_vl209_grad_clip_equal_to_clip_grad_is_info():
    assert severities("VL209/bad_grad_clip_redundant_091") == [(22, Severity.INFO)]


def test_vl209_grad_clip_that_differs_is_a_warning():
    assert severities("VL209/bad_grad_clip_080") == [(11, Severity.WARNING)]


def test_vl209_legacy_reward_manager_other_than_the_default_is_a_warning():
    assert {s for _, s in severities("VL209/bad_legacy_reward_091")} == {Severity.WARNING}

"""VL101 as bash sees it (issue 14): once per variable and scenario, optional and required-input
idioms, the device variable nothing assigns, and linear on huge scripts (issue 19)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from verl_lint.cli.check import settings_for_args
from verl_lint.engine import lint_source
from verl_lint.source import SourceText

LAUNCH = "python3 -m verl.trainer.main_ppo"


def vl101(text: str, *args: str) -> list:
    path = Path("run.sh")
    settings = settings_for_args(["--select", "VL101", *args], path)
    report = lint_source(SourceText(text.encode(), "run.sh"), settings, path="run.sh")
    assert report.error is None, report.error
    return report.diagnostics


def test_one_finding_per_variable_with_the_other_uses_as_labels():
    (d,) = vl101("echo $U\nset -u\necho $U $U\n")
    assert (d.span.line, d.severity.value) == (3, "error")  # where bash stops
    assert [lb.span.line for lb in d.labels] == [1, 3]
    assert all(lb.message == "`$U` is also used here" for lb in d.labels)


@pytest.mark.parametrize("line", [
    '[ -n "${WANDB_RUN_ID}" ] && echo resume',
    '[[ -z $EXTRA ]] || echo "$EXTRA"',
    "${CONDA_BIN_PATH}ray start",
    'echo "${EXTRA:+--extra $EXTRA}"',
])
def test_optional_idioms_are_silent_without_set_u(line):
    assert vl101(line + "\n") == []
    # under `set -u` bash stops at each of them (but `:+`): still an error there
    found = vl101("set -u\n" + line + "\n")
    assert [d.severity.value for d in found] == ([] if ":+" in line else ["error"])


@pytest.mark.parametrize("text, message", [
    ("X=${X}\n", "the script reads it from its caller (`X=${X}`) and gives it no value of its own"),
    ('set -u\n: "${X:?set X}"\n', "the run stops here when it is unset"),
    ('X=${X:?set X}\n', "the run stops here when it is unset"),
    ('[ -z "$X" ] && { echo "X is not set"; exit 1; }\necho "$X"\n',
     "the run stops here when it is unset"),
    ('if [ -z "${X}" ]; then\n  exit 1\nfi\necho "$X"\n', "the run stops here when it is unset"),
    ('X=${A:-}\n: "${X:?set A}"\n', "the run stops here when it is unset"),  # set, but empty
])
def test_required_inputs_are_info(text, message):
    (d,) = vl101(text)
    assert d.severity.value == "info" and d.message == f"`$X` must come from the environment: " \
                                                       f"{message}"


def test_a_guard_that_does_not_stop_is_no_guard():
    (d,) = vl101('[ -z "$X" ] && echo "no X"\necho "$X"\n')
    assert d.severity.value == "warning" and d.span.line == 2


def test_device_variable_nothing_assigns_under_set_u():
    text = "set -u\ncase \"${DEVICE}\" in\n  npu) A=1 ;;\n  *) A=2 ;;\nesac\n" + LAUNCH + " a=$A\n"
    (d,) = vl101(text)
    assert d.severity.value == "error" and d.scenarios == ()  # the same in both scenarios
    assert "the device scenarios assume the caller exports it" in d.message
    assert vl101(text, "--device", "npu") == []  # pinned by the user: it comes from outside
    assert vl101(text.replace("set -u\n", "")) == []
    assert vl101(text.replace("set -u\n", "set -u\nDEVICE=${DEVICE:-gpu}\n")) == []


def test_a_long_chain_is_linear():
    """`V1=$PREV …` over 10,000 lines, and 10,000 distinct unset names, finish fast."""
    chain = "set -u\n" + "".join(f"V{i}=$PREV\n" for i in range(10_000)) + LAUNCH + " a=$V9\n"
    names = "".join(f"W{i}=${{U{i}}}x\n" for i in range(10_000))
    for text, count in ((chain, 1), (names, 10_000)):
        start = time.perf_counter()
        assert len(vl101(text)) == count
        assert time.perf_counter() - start < 10


@pytest.mark.parametrize("text", [
    "X=" + "$(echo " * 300 + "a" + ")" * 300 + "\n" + LAUNCH + " a=$X\n",
    "X=" + "${A:-" * 300 + "a" + "}" * 300 + "\n" + LAUNCH + " a=$X\n",
    'X="' + '${A:-"' * 300 + "a" + '"}' * 300 + '"\n' + LAUNCH + " a=$X\n",
    "if true; then\n" * 300 + LAUNCH + " a=1\n" + "fi\n" * 300,
    "X=$((" + "(" * 300 + "1" + ")" * 300 + "))\n" + LAUNCH + " a=$X\n",
])
def test_deep_nesting_is_linted_or_not_linted_never_a_crash(text):
    # linted (the value unknown), or — nesting past the shell model builder's stack — reported
    # as not linted: never an internal error, never a VL001 (bash parses all of these)
    path = Path("run.sh")
    settings = settings_for_args([], path)
    report = lint_source(SourceText(text.encode(), "run.sh"), settings, path="run.sh")
    assert report.error in (None, "nested too deeply to analyse (parsing); not linted")
    assert not [d for d in report.diagnostics if d.code == "VL001"]

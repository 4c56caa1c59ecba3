"""Output formats: snapshot per format on a small hand-made report, SARIF validated against the
bundled SARIF 2.1.0 schema, GitHub escaping, summary wording.

Snapshots live in tests/snapshots/; rewrite them with VERL_LINT_UPDATE_SNAPSHOTS=1 (and read
the diff before committing)."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import jsonschema
import pytest

from verl_lint.diagnostics import Diagnostic, Edit, Fix, Label, Severity
from verl_lint.engine import FileReport
from verl_lint.report import FORMATS, RenderOptions, render, statistics, summary
from verl_lint.report.github import escape_data, escape_property
from verl_lint.source import SourceText

HERE = Path(__file__).parent
SNAPSHOTS = HERE / "snapshots"

SCRIPT = """\
#!/usr/bin/env bash
set -xeuo pipefail
ACTOR=(
    actor_rollout_ref.actor.learning_rate=1e-6  # 学习率
    actor_rollout_ref.actor.ppo_mini_batch_size=256
)
python3 -m verl.trainer.main_ppo \\
\t"${ACTOR[@]}" \\
    trainer.n_gpus_per_node=8 "$@"
"""


@pytest.fixture(autouse=True)
def _no_step_summary(monkeypatch):
    # running inside GitHub Actions must not append test output to the real run summary
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)


def _span(src: SourceText, needle: str, occurrence: int = 0):
    data = src.data
    at = -1
    for _ in range(occurrence + 1):
        at = data.index(needle.encode(), at + 1)
    return src.span(at, at + len(needle.encode()))


def sample_reports() -> list[FileReport]:
    src = SourceText(SCRIPT.encode(), "examples/run.sh")
    key = _span(src, "actor_rollout_ref.actor.learning_rate")
    lr = Diagnostic(
        code="VL201", name="unknown-override-key", severity=Severity.ERROR,
        message="unknown key `actor_rollout_ref.actor.learning_rate` in verl 0.9.1",
        span=key, help="did you mean `actor_rollout_ref.actor.optim.lr`?",
        labels=(Label(span=_span(src, '"${ACTOR[@]}"'), message="passed to the launch here"),),
        fix=Fix(title="Rename to actor_rollout_ref.actor.optim.lr",
                edits=(Edit(start=key.start, end=key.end,
                            replacement="actor_rollout_ref.actor.optim.lr"),),
                applicability="unsafe"),
        scenarios=("DEVICE=npu",), path="examples/run.sh",
        url="https://example.invalid/rules#vl201-unknown-override-key")
    launch = src.span(src.data.index(b"python3"), src.data.index(b'"$@"') + 4)
    passthrough = Diagnostic(
        code="VL004", name="unknown-config", severity=Severity.INFO,
        message="a message with 100% of the special characters: a,b\r\nc", span=launch,
        path="examples/run.sh", url="https://example.invalid/rules#vl004-unknown-config")
    gpus = Diagnostic(
        code="VL307", name="device-count-mismatch", severity=Severity.WARNING,
        message="trainer.n_gpus_per_node=8 but 4 devices are visible",
        span=_span(src, "8"), path="examples/run.sh",
        url="https://example.invalid/rules#vl307-device-count-mismatch")
    clean = FileReport(path="examples/clean.sh", source=SourceText(b"echo ok\n"))
    broken = FileReport(path="examples/binary.sh",
                        error="binary file (contains NUL bytes); not linted")
    main = FileReport(path="examples/run.sh", source=src,
                      diagnostics=sorted([lr, passthrough, gpus], key=Diagnostic.sort_key))
    return [main, clean, broken]


def check_snapshot(name: str, text: str) -> None:
    path = SNAPSHOTS / name
    if os.environ.get("VERL_LINT_UPDATE_SNAPSHOTS") == "1":
        path.parent.mkdir(exist_ok=True)
        with open(path, "w", encoding="utf-8", newline="") as f:
            f.write(text)
    assert path.exists(), f"missing snapshot {path}: run with VERL_LINT_UPDATE_SNAPSHOTS=1"
    with open(path, encoding="utf-8", newline="") as f:
        assert text == f.read()


def rendered(fmt: str, **options) -> str:
    out = io.StringIO()
    render(fmt, sample_reports(), out, RenderOptions(**options))
    return out.getvalue()


def _without_rules(text: str) -> str:
    # the rules table grows with every rule; the results are what the snapshot pins
    doc = json.loads(text)
    doc["runs"][0]["tool"]["driver"]["rules"] = "<registry>"
    doc["runs"][0]["tool"]["driver"]["version"] = "<version>"
    doc["runs"][0]["tool"]["driver"]["semanticVersion"] = "<version>"
    for result in doc["runs"][0]["results"]:
        result.pop("ruleIndex", None)
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


def _without_version(text: str) -> str:
    doc = json.loads(text)
    doc["verl_lint_version"] = "<version>"
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_snapshot(fmt):
    text = rendered(fmt)
    if fmt == "sarif":
        text = _without_rules(text)
    elif fmt == "json":
        text = _without_version(text)
    check_snapshot(f"report.{fmt}.txt", text)


def test_full_in_colour_has_the_same_text():
    import re

    coloured = rendered("full", color=True)
    assert "\x1b[" in coloured
    assert re.sub(r"\x1b\[[0-9;]*m", "", coloured) == rendered("full")


def test_quiet_has_no_summary():
    assert "checked" not in rendered("concise", quiet=True)
    assert "checked" not in rendered("full", quiet=True)


def test_sarif_validates_against_schema():
    schema = json.loads((HERE / "data" / "sarif-schema-2.1.0.json").read_text())
    doc = json.loads(rendered("sarif"))
    jsonschema.validate(doc, schema, format_checker=jsonschema.FormatChecker())
    run = doc["runs"][0]
    ids = [r["id"] for r in run["tool"]["driver"]["rules"]]
    assert ids == sorted(ids) and "VL001" in ids
    assert len(run["results"]) == 3
    for result in run["results"]:  # every sample code is a registered rule
        assert ids[result["ruleIndex"]] == result["ruleId"]
    assert run["invocations"][0]["executionSuccessful"] is False  # the binary file


def test_json_schema_fields():
    doc = json.loads(rendered("json"))
    assert set(doc) == {"verl_lint_version", "verl_version", "files", "diagnostics"}
    for d in doc["diagnostics"]:
        assert {"code", "name", "severity", "message", "path", "line", "column", "end_line",
                "end_column", "scenarios", "fix", "url"} <= set(d)
    fix = doc["diagnostics"][0]["fix"]
    assert fix["title"].startswith("Rename") and fix["edits"][0]["line"] == 4


def test_github_escaping():
    assert escape_data("100%\r\n") == "100%25%0D%0A"
    assert escape_property("a:b,c%") == "a%3Ab%2Cc%25"
    lines = rendered("github").splitlines()
    multi = next(line for line in lines if "VL004" in line)
    assert ",col=" not in multi  # the launch spans several lines


def test_summary_wording():
    reports = sample_reports()
    assert summary(reports) == ("1 error, 1 warning, 1 info in 1 file (3 files checked); "
                                "1 file could not be linted (see the error lines)")
    assert summary([FileReport(path="a")]) == "All checks passed (1 file checked)"
    # a file that could not be linted (or a rule that crashed on it) was not fully checked
    assert summary([FileReport(path="a"), FileReport(path="b", error="binary file")]) == (
        "No findings (2 files checked); 1 file could not be linted (see the error lines)")


def test_statistics():
    assert statistics(sample_reports()).splitlines() == [
        "code   name                   error  warning  info  total",
        "VL004  unknown-config             0        0     1      1",
        "VL201  unknown-override-key       1        0     0      1",
        "VL307  device-count-mismatch      0        1     0      1",
    ]


def test_full_does_not_import_rich_without_colour():
    import subprocess
    import sys

    code = ("import sys, io; sys.path.insert(0, 'tests'); from test_report import rendered; "
            "rendered('full'); rendered('concise'); print('rich' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=HERE.parent)
    assert out.stdout.strip() == "False", out.stderr


def test_github_step_summary(tmp_path, monkeypatch):
    target = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(target))
    rendered("github")
    text = target.read_text()
    assert text.startswith("### verl-lint\n\n1 error, 1 warning, 1 info in 1 file")
    assert "| VL201 | unknown-override-key | error | 1 |" in text


def test_full_underline_aligns_after_wide_characters_and_tabs():
    from verl_lint.report.full import diagnostic_segments

    src = SourceText('\tX="实验" trainer.nnodes=2\n'.encode())
    at = src.data.index(b"trainer")
    d = Diagnostic(code="VL201", name="n", message="m", span=src.span(at, at + 7))
    lines = "".join(t for t, _ in diagnostic_segments("a.sh", src, d)).splitlines()
    code, marks = lines[3], lines[4]
    assert code == '1 |     X="实验" trainer.nnodes=2'
    # 4 spaces for the tab, 2 cells per CJK character
    assert marks == "  |" + " " * (1 + 4 + len('X="') + 4 + len('" ')) + "^^^^^^^ n"

"""Inline suppressions: targets (next statement, file header, trailing), `all`, names, and
VL002 for directives that suppressed nothing (with its removal fix)."""

from __future__ import annotations

from test_engine import brief, fakes, lint  # noqa: F401 - `fakes` is a fixture

from verl_lint.diagnostics import Severity
from verl_lint.fixes import apply_edits


def codes(report):
    return [(d.code, d.span.line) for d in report.diagnostics]


def test_own_line_applies_to_next_command_only(fakes):
    report = lint("echo start\n# verl-lint: disable=VL901\nbad one\nbad two\n")
    assert codes(report) == [("VL901", 4)]


def test_next_command_spans_continuation_lines(fakes):
    text = "echo\n# verl-lint: disable=fake-bad-command\nrun \\\n  x \\\n  BADARG\nrun BADARG\n"
    assert codes(lint(text)) == [("VL901", 6)]


def test_header_directive_is_file_wide(fakes):
    text = "#!/usr/bin/env bash\n# verl-lint: disable=VL901\nbad\necho\nbad\n"
    assert codes(lint(text)) == []


def test_blank_line_ends_the_header(fakes):
    text = "#!/usr/bin/env bash\n\n# verl-lint: disable=VL901\nbad\nbad\n"
    assert codes(lint(text)) == [("VL901", 5)]


def test_disable_next_line_alias_and_all(fakes):
    text = ("echo\n# verl-lint: disable-next-line=VL901\nbad\n"
            "# verl-lint: disable=all\neverywhere\nbad\n")
    assert codes(lint(text)) == [("VL901", 6)]


def test_trailing_directive_on_array_element(fakes):
    text = ("ARR=(\n  BADARG  # verl-lint: disable=VL901\n  BADARG\n)\n"
            "bad  # verl-lint: disable=VL901\nbad\n")
    assert codes(lint(text)) == [("VL901", 3), ("VL901", 6)]


def test_unused_code_is_reported_with_a_fix(fakes):
    text = "echo\n# verl-lint: disable=VL901, VL902\nbad\n"
    report = lint(text)
    assert brief(report) == [
        ("VL002", 2, "unused suppression: `VL902` (fake-scenario) reports nothing on the next "
                     "statement", ()),
    ]
    fixed = apply_edits(text.encode(), report.diagnostics[0].fix.edits).decode()
    assert fixed == "echo\n# verl-lint: disable=VL901\nbad\n"


def test_unused_directive_is_removed_whole(fakes):
    text = "echo\n# verl-lint: disable=VL901\necho ok\n"
    (d,) = lint(text).diagnostics
    assert d.code == "VL002" and d.span.column == len("# verl-lint: disable=") + 1
    assert apply_edits(text.encode(), d.fix.edits).decode() == "echo\necho ok\n"


def test_unused_trailing_directive_is_removed_with_the_blanks_before_it(fakes):
    text = "echo ok  # verl-lint: disable=VL901\n"
    (d,) = lint(text).diagnostics
    assert d.code == "VL002" and apply_edits(text.encode(), d.fix.edits).decode() == "echo ok\n"


def test_unknown_code_and_disabled_rule(fakes):
    text = "echo\n# verl-lint: disable=VL999,VL001\necho\n"
    report = lint(text)
    # VL001 is not enabled here, so its directive cannot have been used: not reported
    assert brief(report) == [
        ("VL002", 2, "`VL999` in this suppression is not a verl-lint rule", ()),
    ]


def test_unused_all_and_file_wide_vl002(fakes):
    report = lint("echo\n# verl-lint: disable=all\necho\n")
    assert [d.message for d in report.diagnostics] == [
        "unused suppression: `disable=all` suppressed nothing here"]
    quiet = "#!/bin/bash\n# verl-lint: disable=VL002\necho\n# verl-lint: disable=VL901\necho\n"
    assert lint(quiet).diagnostics == []


def test_unused_not_reported_when_vl002_not_selected(fakes):
    assert lint("echo\n# verl-lint: disable=VL901\necho\n", select=("VL9",)).diagnostics == []


def test_directive_at_end_of_file_is_unused(fakes):
    (d,) = lint("echo\n# verl-lint: disable=VL901\n").diagnostics
    assert d.code == "VL002"


def test_unused_has_the_rule_metadata(fakes):
    (d,) = lint("echo\n# verl-lint: disable=VL901\necho\n").diagnostics
    assert (d.severity.value, d.name) == ("warning", "unused-suppression")
    assert d.url.endswith("#vl002-unused-suppression")
    assert lint("echo\n# verl-lint: disable=VL901\necho\n",
                severity={"VL002": Severity.INFO}).diagnostics[0].severity.value == "info"


def test_file_wide_all_also_silences_vl002(fakes):
    text = "#!/bin/bash\n# verl-lint: disable=all\nbad\n# verl-lint: disable=VL902\necho\n"
    assert lint(text).diagnostics == []


def test_directive_above_a_compound_command_covers_all_of_it(fakes):
    """As in shellcheck: above a `case`, `if`, loop or pipeline the directive covers the whole
    compound command, not just the first command inside it."""
    for block in ("if true; then\n  echo\n  bad one\nfi\n", "case x in\n  a) echo; bad one ;;\nesac\n",
                  "for i in 1 2; do\n  bad one\ndone\n", "echo x | bad one\n"):
        text = "echo\n# verl-lint: disable=VL901\n" + block + "bad two\n"
        assert codes(lint(text)) == [("VL901", text.count("\n"))], block


def test_directive_above_case_suppresses_a_finding_on_the_case_itself():
    from pathlib import Path

    from test_rule_fixtures import lint_text

    path = Path(__file__).parent.parent / "fixtures/rules/VL108/bad_case_without_fallback.sh"
    text = path.read_text()
    assert [d.code for d in lint_text(text, path).diagnostics if d.code == "VL108"] == ["VL108"]
    text = text.replace('case "${DEVICE}" in', '# verl-lint: disable=VL108\ncase "${DEVICE}" in', 1)
    assert [d.code for d in lint_text(text, path).diagnostics if d.code in ("VL108", "VL002")] == []


def test_a_long_header_of_directives_is_linear():
    # 30,000 file-wide directives: each asked whether only comments precede it, line by line
    # (quadratic: the file ran out of its 20 s budget); the header is measured once now
    import time

    from verl_lint.engine import lint_source
    from verl_lint.settings import Settings
    from verl_lint.source import SourceText

    data = b"#!/bin/bash\n" + b"# verl-lint: disable=VL201,VL101\n" * 30_000 + b"echo $Q\n"
    started = time.monotonic()
    report = lint_source(SourceText(data), Settings(), path="h.sh")
    assert report.error is None
    # one VL002 a directive: VL201 nowhere, VL101 only on `$Q` (for the first directive)
    assert [d.code for d in report.diagnostics] == ["VL002"] * 30_000
    assert time.monotonic() - started < 10

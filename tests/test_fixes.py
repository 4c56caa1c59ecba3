"""Fix application, suppression placement and file writing, over fake findings.

The fake linter below reports regex matches with fixes, so these tests do not depend on the
rules that exist; `test_fixes_engine.py` runs the same machinery over the real engine.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import pytest
from hypothesis import given, settings as hsettings, strategies as st

from verl_lint.diagnostics import Diagnostic, Edit, Fix
from verl_lint.fixes import (
    FixOptions,
    apply_edits,
    collect_fixes,
    file_suppression_edit,
    fix_source,
    newline_of,
    show_fixes,
    summary,
    suppress_source,
    suppression_edits,
    unified_diff,
)
from verl_lint.source import SourceText, Span


def quote_errors(source: SourceText) -> int:
    """A stand-in parser: one error per line with an odd number of double quotes."""
    return sum(line.count('"') % 2 for line in source.text.splitlines())


def finding(source: SourceText, start: int, end: int, code: str, fix: Fix | None) -> Diagnostic:
    return Diagnostic(code=code, message=code, span=source.span(start, end), fix=fix)


def regex_linter(*rules: tuple[str, str, str, str]):
    """rules: (code, pattern, replacement, applicability)."""

    def lint(source: SourceText):
        out = []
        for code, pattern, repl, applicability in rules:
            for m in re.finditer(pattern.encode(), source.data):
                fix = Fix(title=f"replace with {repl!r}", applicability=applicability,
                          edits=(Edit(start=m.start(), end=m.end(), replacement=repl),))
                out.append(finding(source, m.start(), m.end(), code, fix))
        return sorted(out, key=Diagnostic.sort_key)

    return lint


# --- edits -------------------------------------------------------------------------------------


def test_apply_edits_any_order_and_insertions():
    data = b"abcdef"
    edits = [Edit(start=4, end=6, replacement="XY"), Edit(start=0, end=0, replacement=">"),
             Edit(start=1, end=2, replacement="")]
    assert apply_edits(data, edits) == b">acdXY"


def test_apply_edits_rejects_overlap():
    with pytest.raises(ValueError):
        apply_edits(b"abcdef", [Edit(start=0, end=3, replacement=""),
                                Edit(start=2, end=4, replacement="")])


def test_crlf_files_keep_crlf():
    data = b"a=1\r\nb=2\r\n"
    assert newline_of(data) == b"\r\n"
    assert apply_edits(data, [Edit(start=5, end=5, replacement="# x\n")]) == \
        b"a=1\r\n# x\r\nb=2\r\n"
    assert newline_of(b"a\nb\r\nc\n") == b"\n"


def test_collect_fixes_filters_unsafe_duplicates_and_overlaps():
    src = SourceText(b"0123456789")
    safe = Fix(title="s", edits=(Edit(start=0, end=3, replacement="x"),))
    dup = Fix(title="s", edits=(Edit(start=0, end=3, replacement="x"),))
    overlapping = Fix(title="o", edits=(Edit(start=2, end=5, replacement="y"),))
    unsafe = Fix(title="u", applicability="unsafe", edits=(Edit(start=6, end=7, replacement="z"),))
    broken = Fix(title="b", edits=(Edit(start=8, end=99, replacement=""),))
    diags = [finding(src, 0, 3, "VL1", safe), finding(src, 0, 3, "VL1", dup),
             finding(src, 2, 5, "VL2", overlapping), finding(src, 6, 7, "VL3", unsafe),
             finding(src, 8, 9, "VL4", broken), finding(src, 9, 10, "VL5", None)]
    assert [f.title for _, f in collect_fixes(diags, size=10)] == ["s"]
    assert [f.title for _, f in collect_fixes(diags, unsafe=True, size=10)] == ["s", "u"]


# --- the fix loop ------------------------------------------------------------------------------


def test_fixes_reapply_until_nothing_changes():
    lint = regex_linter(("VL1", "foo", "bar", "safe"), ("VL2", "bar", "baz", "safe"))
    result = fix_source(SourceText(b"foo foo\n"), lint, parse_errors=quote_errors)
    assert result.fixed == b"baz baz\n"
    assert result.rounds == 2 and result.converged
    assert [a.code for a in result.applied] == ["VL1", "VL1", "VL2", "VL2"]
    assert result.diagnostics == []


def test_unsafe_fixes_only_when_asked():
    lint = regex_linter(("VL1", "foo", "bar", "unsafe"))
    assert fix_source(SourceText(b"foo\n"), lint, parse_errors=quote_errors).fixed == b"foo\n"
    assert fix_source(SourceText(b"foo\n"), lint, unsafe=True,
                      parse_errors=quote_errors).fixed == b"bar\n"


def test_fix_that_would_not_parse_is_dropped_and_others_kept():
    lint = regex_linter(("VL1", "foo", 'f"oo', "safe"), ("VL2", "qux", "ok", "safe"))
    result = fix_source(SourceText(b"foo qux\n"), lint, parse_errors=quote_errors)
    assert result.fixed == b"foo ok\n"
    assert [d.code for d in result.dropped] == ["VL1"]
    assert result.converged


def test_cycles_stop_and_are_reported():
    lint = regex_linter(("VL1", "ab", "ba", "safe"), ("VL2", "ba", "ab", "safe"))
    result = fix_source(SourceText(b"ab\n"), lint, parse_errors=quote_errors)
    assert not result.converged
    assert result.rounds <= 10


def test_rounds_are_bounded():
    lint = regex_linter(("VL1", "x$", "xx", "safe"))  # grows forever at end of file
    result = fix_source(SourceText(b"x"), lint, parse_errors=quote_errors, max_rounds=5)
    assert result.rounds == 5 and not result.converged and result.fixed == b"x" * 6


@hsettings(max_examples=150, deadline=None)
@given(st.text(alphabet='ab" \n', max_size=30),
       st.lists(st.tuples(st.sampled_from(["a", "b", "ab", '"', " "]),
                          st.sampled_from(["", "b", '"', "a", "ba"])), max_size=4))
def test_property_fixes_never_add_parse_errors_and_stop(text, rules):
    lint = regex_linter(*[(f"VL{i}", re.escape(p), r, "safe") for i, (p, r) in enumerate(rules)])
    source = SourceText(text.encode())
    result = fix_source(source, lint, parse_errors=quote_errors)
    assert quote_errors(SourceText(result.fixed)) <= quote_errors(source)
    assert result.rounds <= 10
    if result.converged:  # every fix still offered would add a parse error
        fixed = SourceText(result.fixed)
        for _, fix in collect_fixes(lint(fixed), size=len(result.fixed)):
            assert quote_errors(SourceText(apply_edits(result.fixed, fix.edits))) > \
                quote_errors(fixed)


# --- suppressions ------------------------------------------------------------------------------


@dataclass
class FakeModel:
    """Statements as (start, end) byte ranges; `next_statement_span` like the shell model's."""

    source: SourceText
    statements: list[tuple[int, int]]

    def next_statement_span(self, offset: int) -> Span | None:
        starts = sorted(s for s in self.statements if s[0] >= offset)
        return self.source.span(*starts[0]) if starts else None


def stmt(source: SourceText, text: str, occurrence: int = 0, *, to: str | None = None):
    """The byte range from the n-th `text` to the end of its line (or to the end of `to`)."""
    start = -1
    for _ in range(occurrence + 1):
        start = source.data.index(text.encode(), start + 1)
    if to is None:
        end = source.data.index(b"\n", start)
    else:
        end = source.data.index(to.encode(), start) + len(to)
    return start, end


SCRIPT = """#!/usr/bin/env bash
set -xeuo pipefail
ACTOR=(
    actor_rollout_ref.actor.optim.lr=1e-6
    # a comment inside an array is fine
    actor_rollout_ref.actor.bogus=1
)
python3 -m verl.trainer.main_ppo \\
    "${ACTOR[@]}" \\
    trainer.nnodes=1 \\
    trainer.bogus=2
"""


def _script_model(source: SourceText) -> FakeModel:
    return FakeModel(source, [
        stmt(source, "set -x"),
        stmt(source, "ACTOR=(", to="\n)"),
        stmt(source, "actor_rollout_ref.actor.optim"),
        stmt(source, "actor_rollout_ref.actor.bogus"),
        stmt(source, "python3", to="trainer.bogus=2"),
    ])


def _lint_codes(*pairs: tuple[str, str]):
    def lint(source: SourceText):
        out = []
        for code, needle in pairs:
            at = source.data.find(needle.encode())
            if at >= 0:
                out.append(finding(source, at, at + len(needle), code, None))
        return out

    return lint


def test_suppressions_go_before_element_and_before_continued_command():
    source = SourceText(SCRIPT.encode())
    lint = _lint_codes(("VL201", "actor.bogus"), ("VL201", "trainer.bogus"),
                       ("VL105", "trainer.nnodes"))
    edits = suppression_edits(source, _script_model(source), lint(source))
    fixed = apply_edits(source.data, edits).decode()
    assert fixed == SCRIPT.replace(
        "    actor_rollout_ref.actor.bogus",
        "    # verl-lint: disable=VL201\n    actor_rollout_ref.actor.bogus").replace(
        "python3 -m", "# verl-lint: disable=VL105,VL201\npython3 -m")


def test_suppression_merges_into_existing_directive_and_keeps_crlf():
    text = SCRIPT.replace("python3 -m", "# verl-lint: disable=VL105\npython3 -m")
    source = SourceText(text.replace("\n", "\r\n").encode())
    model = _script_model(source)
    edits = suppression_edits(source, model, _lint_codes(("VL201", "trainer.bogus"))(source))
    fixed = apply_edits(source.data, edits)
    assert b"# verl-lint: disable=VL105,VL201\r\npython3 -m" in fixed
    assert fixed.count(b"\n") == fixed.count(b"\r\n")


def test_findings_outside_any_statement_get_a_file_wide_directive():
    source = SourceText(b"#!/bin/bash\necho 'unterminated\n")
    model = FakeModel(source, [])
    edits = suppression_edits(source, model, _lint_codes(("VL001", "'unterm"))(source))
    assert apply_edits(source.data, edits) == \
        b"#!/bin/bash\n# verl-lint: disable=VL001\necho 'unterminated\n"
    merged = file_suppression_edit(SourceText(apply_edits(source.data, edits)), ["VL101"])
    assert merged.replacement == "VL001,VL101"


def test_unused_suppression_findings_are_not_suppressed():
    source = SourceText(SCRIPT.encode())
    assert suppression_edits(source, _script_model(source),
                             _lint_codes(("VL002", "set -x"))(source)) == []


def test_suppress_source_reports_what_it_did():
    source = SourceText(SCRIPT.encode())
    result = suppress_source(source, _lint_codes(("VL201", "actor.bogus")),
                             model=_script_model(source))
    assert result.changed and [a.code for a in result.applied] == ["VL201"]


# --- files and output --------------------------------------------------------------------------


def test_unified_diff():
    diff = unified_diff("run.sh", b"a\nb\n", b"a\nc")
    assert diff.splitlines()[:2] == ["--- a/run.sh", "+++ b/run.sh"]
    assert "-b\n+c\n\\ No newline at end of file\n" in diff
    assert unified_diff("run.sh", b"x", b"x") == ""


def test_show_fixes_and_summary():
    lint = regex_linter(("VL202", r"(?<!\+)foo", "+foo", "safe"),
                        ("VL204", "old", "new", "unsafe"))
    result = fix_source(SourceText(b"foo foo old\n"), lint, parse_errors=quote_errors,
                        path="run.sh")
    text = show_fixes([result])
    assert text.startswith("Fixed 2 findings:\nrun.sh:\n    2 × VL202")
    line = summary([result], FixOptions(fix=True))
    assert "Fixed 2 findings in 1 file." in line and "1 more fix available" in line


# --- placement over the real shell model -------------------------------------------------------

CASE_SCRIPT = """#!/usr/bin/env bash
set -xeuo pipefail
case "${DEVICE}" in
  gpu) ACTOR+=(actor_rollout_ref.actor.bogus=1) ;;
  npu)
    ACTOR+=(
        actor_rollout_ref.actor.other=2
    )
    ;;
esac
python3 -m verl.trainer.main_ppo "${ACTOR[@]}" \\
    trainer.x=1 2>&1 | tee log.txt
"""


def _placed(script: str, needle: str) -> str:
    from verl_lint.shell import parse_script

    source = SourceText(script.encode())
    at = script.index(needle)
    edits = suppression_edits(source, parse_script(source),
                              [finding(source, at, at + len(needle), "VL201", None)])
    fixed = apply_edits(source.data, edits).decode()
    assert quote_errors(SourceText(fixed.encode())) == 0
    return fixed


def test_real_model_places_directive_before_case_pattern_line():
    fixed = _placed(CASE_SCRIPT, "actor.bogus")
    assert "  # verl-lint: disable=VL201\n  gpu) ACTOR+=(" in fixed


def test_real_model_places_directive_before_multiline_array_element():
    fixed = _placed(CASE_SCRIPT, "actor.other")
    assert "(\n        # verl-lint: disable=VL201\n        actor_rollout_ref.actor.other" in fixed


def test_real_model_places_directive_before_piped_continued_command():
    fixed = _placed(CASE_SCRIPT, "trainer.x")
    assert "esac\n# verl-lint: disable=VL201\npython3 -m" in fixed


def test_a_directive_that_would_not_parse_is_left_out():
    source = SourceText(SCRIPT.encode())
    lint = _lint_codes(("VL201", "actor.bogus"), ("VL105", "trainer.nnodes"))

    # a stand-in parser that rejects any directive inside the array
    def errors(src: SourceText) -> int:
        text = src.text
        return int("    # verl-lint" in text[text.index("ACTOR=("):text.index("\n)")])

    result = suppress_source(source, lint, model=_script_model(source), parse_errors=errors)
    assert b"# verl-lint: disable=VL105\npython3" in result.fixed
    assert b"    # verl-lint" not in result.fixed
    assert [(d.code, d.line) for d in result.dropped] == [("", 6)]
    assert [a.code for a in result.applied] == ["VL105"]  # VL201's directive was left out
    line = summary([result], FixOptions(add_suppressions=True))
    assert "suppression not applied" in line and "Added suppressions for 1 finding in" in line

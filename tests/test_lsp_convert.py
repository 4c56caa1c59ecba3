"""Position conversion and Diagnostic → LSP conversion (no server process)."""

from __future__ import annotations

from lsprotocol import types

from verl_lint.diagnostics import Diagnostic, Edit, Fix, Label, Severity
from verl_lint.lsp.convert import Positions, overlaps, to_lsp_diagnostic, workspace_edit
from verl_lint.source import SourceText

TEXT = "x=1\n# 模型 😀 here\ny=2\r\n"


def test_utf16_utf8_utf32_positions_round_trip():
    src = SourceText(TEXT.encode())
    here = TEXT.encode().index(b"here")
    expected = {"utf-16": 8, "utf-8": 1 + 1 + 3 + 3 + 1 + 4 + 1, "utf-32": 7}
    for encoding, col in expected.items():
        pos = Positions(src, encoding)
        p = pos.position(here)
        assert (p.line, p.character) == (1, col), encoding
        assert pos.offset(p) == here


def test_offsets_past_line_end_clamp_before_the_newline():
    src = SourceText(TEXT.encode())
    for encoding in ("utf-16", "utf-8", "utf-32"):
        pos = Positions(src, encoding)
        assert pos.offset(types.Position(line=2, character=99)) == TEXT.encode().index(b"\r\n")
        assert pos.offset(types.Position(line=9, character=0)) == len(src.data)


def test_diagnostic_conversion_keeps_code_link_scenarios_and_labels():
    src = SourceText(TEXT.encode())
    diag = Diagnostic(code="VL201", name="unknown-override-key", severity=Severity.WARNING,
                      message="bad key", span=src.span(0, 1), scenarios=("DEVICE=npu",),
                      labels=(Label(span=src.span(4, 5), message="first set here"),),
                      help="did you mean z?",
                      fix=Fix(title="t", edits=(Edit(start=0, end=1, replacement="z"),)))
    out = to_lsp_diagnostic(diag, Positions(src), "file:///x.sh")
    assert out.code == "VL201" and out.source == "verl-lint"
    assert out.severity == types.DiagnosticSeverity.Warning
    assert out.code_description.href.endswith("#vl201-unknown-override-key")
    assert out.message == "bad key [DEVICE=npu]\ndid you mean z?"
    assert out.related_information[0].message == "first set here"


def test_workspace_edit_is_versioned_when_the_version_is_known():
    src = SourceText(TEXT.encode())
    edit = workspace_edit("file:///x.sh", [Edit(start=0, end=1, replacement="z")],
                          Positions(src), version=3)
    change = edit.document_changes[0]
    assert change.text_document.version == 3 and change.edits[0].new_text == "z"
    assert workspace_edit("file:///x.sh", [], Positions(src)).changes == {"file:///x.sh": []}


def test_overlaps_counts_touching_ranges():
    def r(a, b, c, d):
        return types.Range(start=types.Position(line=a, character=b),
                           end=types.Position(line=c, character=d))

    assert overlaps(r(1, 0, 1, 5), r(1, 5, 1, 5))
    assert not overlaps(r(1, 0, 1, 5), r(1, 6, 2, 0))


def test_negotiated_encoding_enum_is_understood():
    pos = Positions(SourceText(TEXT.encode()), types.PositionEncodingKind.Utf8)
    assert pos.encoding == "utf-8"


def test_offset_of_a_position_before_the_document_is_its_start():
    # a negative line used to index line_starts[-1]: the start of the last line
    assert SourceText(TEXT.encode()).offset_of_utf16(-1, 3) == 0

"""Rendering is linear and streams: tens of thousands of findings render in seconds in every
format, `full` in colour prints what rich prints, and a run over many files keeps a batch of
reports alive, not all of them."""

from __future__ import annotations

import gc
import io
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from verl_lint.diagnostics import Diagnostic, Edit, FileReport, Fix, Label, Severity
from verl_lint.report import FORMATS, RenderOptions, render
from verl_lint.source import SourceText, SpanFactory

LINE = "    actor_rollout_ref.actor.ppo_mini_batch_size=256 \\\\  # 中文 comment\n"


def big_report(n: int, one_line: bool = False) -> FileReport:
    """One file with `n` findings, each with a label, help, scenarios and a fix, as a hostile
    file gives them: thousands of unused suppressions, or one line of overrides (non-ASCII:
    a column is a count of characters)."""
    line = LINE.rstrip("\\\n") + " " if one_line else LINE
    text = line * n + "\n" if one_line else line * n
    source = SourceText(text.encode(), "big.sh")
    width = len(line.encode())
    diagnostics = []
    lazy = SpanFactory(source)
    for i in range(n):
        start = i * width + 4
        # lazy, as the rules make them: positions are worked out when a renderer reads them
        span, label = lazy(start, start + 30), lazy(start + 31, start + 34)
        diagnostics.append(Diagnostic(
            code="VL201", name="unknown-override-key", severity=Severity.WARNING,
            message=f"unknown key number {i} in verl 0.9.1", span=span, path="big.sh",
            labels=(Label(span=label, message="set here"),), help="did you mean `x`?",
            scenarios=("gpu", "npu"), url="https://example.invalid/vl201",
            fix=Fix(title="Rename", edits=(Edit(start=start, end=start + 5, replacement="y"),))))
    return FileReport(path="big.sh", diagnostics=diagnostics, source=source)


FORMAT_CASES = [(f, False, False) for f in FORMATS] + [("full", True, False)]
# one long line too, but not in `full`: its code frame shows the line for every finding
FORMAT_CASES += [(f, False, True) for f in FORMATS if f != "full"]


@pytest.mark.parametrize("fmt, color, one_line", FORMAT_CASES)
def test_thirty_thousand_findings_render_in_seconds(fmt, color, one_line):
    report = big_report(12_000 if one_line else 30_000, one_line)
    out = io.StringIO()
    start = time.process_time()
    render(fmt, [report], out, RenderOptions(color=color))
    took = time.process_time() - start
    assert out.getvalue() and took < 5, f"{fmt}: {took:.1f} s"


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["a", "é", "中", "\U0001f600", " ", "\n"]), min_size=1,
                max_size=40).map("".join), st.integers(1, 9000), st.data())
def test_columns_on_long_lines_count_characters(piece, repeat, data):
    raw = (piece * repeat).encode()
    source = SourceText(raw)
    offset = data.draw(st.integers(0, len(raw)))  # inside a character too
    line, column = source.position(offset)
    start = source.line_starts[line - 1]
    expected = len(raw[start:min(offset, len(raw))].decode("utf-8", errors="replace")) + 1
    plain = SourceText(raw)
    plain._long_lines[line - 1] = None  # the decoding path
    assert (line, column) == plain.position(offset)
    assert column == expected or offset >= len(raw) - 2  # the last newline's own rule


def _rich(segments) -> str:
    from rich.console import Console
    from rich.text import Text

    out = io.StringIO()
    console = Console(file=out, force_terminal=True, highlight=False, soft_wrap=True,
                      emoji=False, markup=False)
    text = Text()
    for chunk, style in segments:
        text.append(chunk, style=style or None)
    console.print(text, end="")
    return out.getvalue()


STYLES = st.sampled_from(["", "bold", "bold red", "bold yellow", "bold blue", "cyan"])
TEXTS = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12) | \
    st.sampled_from(["\n", "\n\n", "a\nb", "  ", "\t", "x\ty", "\r", "^^^ label\n", "中文"])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(TEXTS, STYLES), max_size=8))
def test_colour_output_is_what_rich_prints(segments):
    from verl_lint.report.full import _Colors

    out = io.StringIO()
    _Colors(out).write(segments)
    assert out.getvalue() == _rich(segments)


def test_full_format_over_many_files_keeps_a_batch_of_reports(tmp_path, monkeypatch):
    from click.testing import CliRunner

    from verl_lint.cli import check, main
    from verl_lint.report import full

    for i in range(24):
        (tmp_path / f"run_{i:02}.sh").write_text(
            "#!/bin/bash\npython3 -m verl.trainer.main_ppo trainer.unknown_key=1\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(check, "STREAM_FILES", 4, raising=False)
    alive: list[int] = []
    plain_file = full.Renderer.file

    def counting(self, report):
        gc.collect()
        alive.append(sum(isinstance(o, FileReport) for o in gc.get_objects()))
        plain_file(self, report)

    monkeypatch.setattr(full.Renderer, "file", counting, raising=False)
    result = CliRunner().invoke(main, ["--no-cache", "--no-color", "-j", "1", "."])
    assert result.exit_code == 1, result.output
    assert "24 files checked" in result.output and len(alive) == 24
    assert max(alive) <= 2 * 4, alive  # a batch (and the one being written), not the run


def test_a_run_of_many_batches_in_processes_equals_one_process(tmp_path, monkeypatch):
    from click.testing import CliRunner

    from verl_lint.cli import check, main

    for i in range(12):
        (tmp_path / f"run_{i:02}.sh").write_text(
            "#!/bin/bash\npython3 -m verl.trainer.main_ppo trainer.unknown_key=1\n"
            + "echo $UNSET_%d\n" % i)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(check, "STREAM_FILES", 4)  # three batches, each forking its workers
    runs = [CliRunner().invoke(main, ["--no-cache", "--no-color", "-j", jobs, "."])
            for jobs in ("2", "1")]
    assert runs[0].exit_code == runs[1].exit_code == 1, runs[0].output
    assert "12 files checked" in runs[0].output
    assert runs[0].output == runs[1].output

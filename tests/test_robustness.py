"""Properties over generated scripts: never crash, valid spans, deterministic, layout-blind.

The number of examples comes from the hypothesis profile (tests/conftest.py): `ci` by default,
`VERL_LINT_HYPOTHESIS_PROFILE=long` for a long local run.
"""

from __future__ import annotations

import time
from dataclasses import asdict, fields, is_dataclass
from collections.abc import Iterator

import pytest
from pydantic import BaseModel
from hypothesis import given

from strategies import big_script, equivalent_pairs, hostile_scripts, verl_scripts
from verl_lint import shell
from verl_lint.shell import parse_script
from verl_lint.source import SourceText, Span


def _evaluate():
    from verl_lint.evaluate import evaluate_script

    return evaluate_script


def _engine():
    from verl_lint.engine import lint_source
    from verl_lint.settings import Settings

    return lint_source, Settings


def _source(data: bytes) -> SourceText:
    return SourceText(data, "generated.sh")


def spans_in(obj, seen: set[int] | None = None) -> Iterator[Span]:
    """Every Span reachable from a record or model (fields, tuples, lists, dicts)."""
    seen = set() if seen is None else seen
    if id(obj) in seen:
        return
    if isinstance(obj, Span):
        yield obj
    elif is_dataclass(obj) or isinstance(obj, BaseModel):
        seen.add(id(obj))
        names = type(obj).model_fields if isinstance(obj, BaseModel) else \
            [f.name for f in fields(obj)]
        for name in names:
            yield from spans_in(getattr(obj, name), seen)
    elif isinstance(obj, (list, tuple)):
        for item in obj:
            yield from spans_in(item, seen)
    elif isinstance(obj, dict):
        for item in obj.values():
            yield from spans_in(item, seen)


def assert_spans_valid(source: SourceText, spans: Iterator[Span], what: str) -> None:
    n = len(source.data)
    for span in spans:
        assert 0 <= span.start <= span.end <= n, f"{what}: span {span} outside [0, {n}]"
        assert (span.line, span.column) == source.position(span.start), \
            f"{what}: start line/column of {span} disagree with SourceText {source.position(span.start)}"
        assert (span.end_line, span.end_column) == source.position(span.end), \
            f"{what}: end line/column of {span} disagree with SourceText {source.position(span.end)}"


# ---- parser ---------------------------------------------------------------------------------

@given(hostile_scripts())
def test_parse_never_raises_and_spans_are_valid(data: bytes) -> None:
    source = _source(data)
    model = parse_script(source)
    assert_spans_valid(source, spans_in(model), "parse")
    if model.errors:
        assert all(e.message for e in model.errors)


@given(verl_scripts())
def test_parse_is_deterministic(data: bytes) -> None:
    assert parse_script(_source(data)) == parse_script(_source(data))


@given(hostile_scripts())
def test_next_statement_span_is_inside_the_document(data: bytes) -> None:
    source = _source(data)
    model = parse_script(source)
    for offset in (0, len(data) // 2, len(data)):
        span = model.next_statement_span(offset)
        if span is not None:
            assert offset <= span.start <= span.end <= len(data)


# ---- evaluator ------------------------------------------------------------------------------

@given(hostile_scripts())
def test_evaluate_never_raises_and_spans_are_valid(data: bytes) -> None:
    evaluate_script = _evaluate()
    source = _source(data)
    runs = evaluate_script(parse_script(source))
    for run in runs:
        assert_spans_valid(source, spans_in(run), f"evaluate[{run.scenario.label}]")


@given(verl_scripts())
def test_evaluate_with_pins_and_device_never_raises(data: bytes) -> None:
    evaluate_script = _evaluate()
    model = parse_script(_source(data))
    for device in ("gpu", "npu", "tpu"):
        evaluate_script(model, device=device, pins={"TP": "3", "NNODES": "x"},
                        known_env=frozenset({"TEST_FILE"}))


@given(verl_scripts())
def test_evaluate_is_deterministic(data: bytes) -> None:
    evaluate_script = _evaluate()
    a = evaluate_script(parse_script(_source(data)))
    b = evaluate_script(parse_script(_source(data)))
    assert a == b


# ---- the whole linter -----------------------------------------------------------------------

def _lint(data: bytes, **settings):
    lint_source, Settings = _engine()
    return lint_source(_source(data), Settings(**settings), path="generated.sh")


def _internal_errors(report) -> str | None:
    """A crash inside a stage or rule is reported by the engine as `internal error …`."""
    if report.error and "internal error" in report.error:
        return report.error
    return None


_QUOTING = str.maketrans("", "", "\"'{}")


def _finding(d) -> tuple:
    """What must not change with quoting/whitespace. Messages may quote the user's text
    (`case "$DEVICE"` vs `case "${DEVICE}"`), so quotes, braces and spacing are ignored there."""
    return (d.code, d.span.line, " ".join(d.message.translate(_QUOTING).split()), d.scenarios,
            d.severity)


@given(hostile_scripts())
def test_lint_never_crashes_and_spans_are_valid(data: bytes) -> None:
    report = _lint(data)
    assert _internal_errors(report) is None, report.error
    source = _source(data)
    for d in report.diagnostics:
        assert_spans_valid(source, spans_in(d), f"{d.code}")
        if d.fix is not None:
            for edit in d.fix.edits:
                assert 0 <= edit.start <= edit.end <= len(data), f"{d.code}: fix edit {edit}"


@given(verl_scripts())
def test_lint_under_every_device_and_version_never_crashes(data: bytes) -> None:
    for kwargs in ({"device": "npu"}, {"verl_version": "0.8.0"}, {"verl_version": "0.4.0"},
                   {"pins": {"TP": "3"}}):
        report = _lint(data, **kwargs)
        assert _internal_errors(report) is None, (kwargs, report.error)


@given(verl_scripts())
def test_lint_is_deterministic(data: bytes) -> None:
    a = [asdict(d) for d in _lint(data).diagnostics]
    b = [asdict(d) for d in _lint(data).diagnostics]
    assert a == b


@given(equivalent_pairs())
def test_quoting_and_whitespace_do_not_change_findings(pair: tuple[bytes, bytes]) -> None:
    a, b = (_lint(x) for x in pair)
    assert _internal_errors(a) is None and _internal_errors(b) is None
    assert sorted(map(_finding, a.diagnostics)) == sorted(map(_finding, b.diagnostics)), \
        "\n---- A ----\n" + pair[0].decode() + "\n---- B ----\n" + pair[1].decode()


# ---- size and time --------------------------------------------------------------------------

def test_ten_thousand_line_script_is_linted_quickly() -> None:
    data = big_script(10_000)
    source = _source(data)
    started = time.perf_counter()
    model = parse_script(source)
    parsed = time.perf_counter() - started
    assert_spans_valid(source, spans_in(model), "parse")
    assert parsed < 10, f"parsing 10 000 lines took {parsed:.1f} s"
    lint_source, Settings = _engine()
    started = time.perf_counter()
    report = lint_source(source, Settings(), path="big.sh")
    assert _internal_errors(report) is None, report.error
    assert time.perf_counter() - started < 30


def test_over_budget_file_is_reported_not_stuck(monkeypatch) -> None:
    """A file that takes longer than the per-file budget becomes an error report quickly."""
    _, Settings = _engine()
    try:
        from verl_lint.engine import lint_with_budget
    except ImportError:
        pytest.fail("the engine has no per-file time budget (verl_lint.engine.lint_with_budget)")

    def slow_parse(source):
        time.sleep(30)

    monkeypatch.setattr(shell, "parse_script", slow_parse)
    started = time.perf_counter()
    report = lint_with_budget(_source(b"python3 -m verl.trainer.main_ppo\n"), Settings(),
                              path="slow.sh", timeout=0.3)
    assert time.perf_counter() - started < 5
    assert report.error and "budget" in report.error


def test_parallel_jobs_give_the_same_reports_in_the_same_order() -> None:
    _, Settings = _engine()
    from pathlib import Path

    from verl_lint.engine import lint_paths

    paths = sorted((Path(__file__).resolve().parent.parent / "fixtures" / "corpus").rglob("*.sh"))
    settings = Settings()
    serial = lint_paths(paths, lambda _: settings, jobs=1)
    parallel = lint_paths(paths, lambda _: settings, jobs=2)
    assert [r.path for r in serial] == [r.path for r in parallel]
    assert [[asdict(d) for d in r.diagnostics] for r in serial] == \
        [[asdict(d) for d in r.diagnostics] for r in parallel]

"""The engine with tiny fake rules: scopes, merging across scenarios, sorting, severities,
selection, crashes, unreadable input, time budget, and the process pool's order."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

import verl_lint.evaluate
from verl_lint import engine
from verl_lint.diagnostics import Label, Severity
from verl_lint.engine import FileReport, lint_file, lint_paths, lint_source, lint_with_budget
from verl_lint.evaluate.model import Scenario, ScenarioRun
from verl_lint.rules import registry
from verl_lint.rules.base import Rule
from verl_lint.settings import Settings
from verl_lint.source import SourceText


def _commands(ctx, name):
    for cmd in ctx.model.commands:
        if cmd.name == name:
            yield cmd


class FakeScript(Rule):
    """Fake script-scope rule: every `bad` command, every `BADARG` argument or array element."""

    code = "VL901"
    name = "fake-bad-command"
    severity = Severity.ERROR
    summary = "fake"
    scope = "script"

    def check(self, ctx):
        for cmd in _commands(ctx, "bad"):
            yield self.diagnostic(cmd.words[0].span, "bad command",
                                  labels=[Label(span=cmd.span, message="whole command")],
                                  help="remove it")
        words = [w for cmd in ctx.model.commands for w in cmd.args]
        words += [w for a in ctx.model.arrays for w in a.array.elements]
        for word in words:
            if word.text == "BADARG":
                yield self.diagnostic(word.span, "bad argument")


class FakeScenario(Rule):
    """Fake scenario-scope rule: `everywhere` in every scenario, `only_<device>` in one."""

    code = "VL902"
    name = "fake-scenario"
    severity = Severity.WARNING
    summary = "fake"
    scope = "scenario"

    def check(self, ctx):
        for cmd in ctx.model.commands:
            if cmd.name == "everywhere" or cmd.name == f"only_{ctx.run.scenario.device}":
                yield self.diagnostic(cmd.words[0].span, f"{cmd.name} seen")


class FakeCrash(Rule):
    """Fake rule that crashes on `crash`."""

    code = "VL903"
    name = "fake-crash"
    severity = Severity.INFO
    summary = "fake"
    scope = "script"

    def check(self, ctx):
        for _ in _commands(ctx, "crash"):
            raise RuntimeError("boom")
        for cmd in _commands(ctx, "slow"):
            time.sleep(5)
            yield self.diagnostic(cmd.span, "slow")


FAKES = (FakeScript, FakeScenario, FakeCrash)


def fake_evaluate(model, *, device=None, pins=None, known_env=frozenset()):
    runs = [ScenarioRun(scenario=Scenario(label=f"DEVICE={d}", device=d, pins=(("DEVICE", d),)))
            for d in ("gpu", "npu")]
    return [r for r in runs if device is None or r.scenario.device == device]


@pytest.fixture
def fakes(monkeypatch):
    """Register the fake rules and a two-scenario evaluator for one test."""
    registry.all_rules()
    for cls in FAKES:
        monkeypatch.setitem(registry._RULES, cls.code, cls)
    monkeypatch.setattr(verl_lint.evaluate, "evaluate_script", fake_evaluate, raising=False)
    yield


def settings(**kw) -> Settings:
    kw.setdefault("select", ("VL9", "VL002"))
    return Settings(**kw)


def lint(text: str, **kw) -> FileReport:
    return lint_source(SourceText(text.encode()), settings(**kw), path="t.sh")


def brief(report: FileReport) -> list[tuple]:
    return [(d.code, d.span.line, d.message, d.scenarios) for d in report.diagnostics]


def test_merges_across_scenarios_and_sorts(fakes):
    report = lint("only_npu\neverywhere\nbad x\nonly_gpu\n")
    assert report.error is None
    assert brief(report) == [
        ("VL902", 1, "only_npu seen", ("DEVICE=npu",)),
        ("VL902", 2, "everywhere seen", ()),
        ("VL901", 3, "bad command", ()),
        ("VL902", 4, "only_gpu seen", ("DEVICE=gpu",)),
    ]
    d = report.diagnostics[2]
    assert (d.name, d.path, d.help) == ("fake-bad-command", "t.sh", "remove it")
    assert d.url.endswith("#vl901-fake-bad-command")


def test_pinned_device_is_the_only_scenario(fakes):
    report = lint("only_npu\nonly_gpu\n", device="npu")
    assert brief(report) == [("VL902", 1, "only_npu seen", ())]


def test_selection_and_severity_override(fakes):
    report = lint("bad\neverywhere\n", select=("fake-bad-command",))
    assert [d.code for d in report.diagnostics] == ["VL901"]
    report = lint("bad\neverywhere\n", ignore=("VL901",), severity={"VL90": Severity.INFO})
    assert [(d.code, d.severity) for d in report.diagnostics] == [("VL902", Severity.INFO)]


def test_per_file_ignores(fakes):
    s = settings(per_file_ignores={"t.sh": ("VL901",)})
    report = lint_source(SourceText(b"bad\n"), s, path="t.sh")
    assert report.diagnostics == []
    assert lint_source(SourceText(b"bad\n"), s, path="other.sh").diagnostics


def test_crashing_rule_is_an_error_not_a_traceback(fakes, monkeypatch):
    monkeypatch.delenv("VERL_LINT_DEBUG", raising=False)
    report = lint("bad\ncrash\n")
    assert [d.code for d in report.diagnostics] == ["VL901"]  # other rules still report
    assert "internal error in rule VL903 (fake-crash): RuntimeError: boom" in report.error


def test_debug_reraises(fakes, monkeypatch):
    monkeypatch.setenv("VERL_LINT_DEBUG", "1")
    with pytest.raises(RuntimeError):
        lint("crash\n")


def test_time_budget(fakes):
    report = lint_with_budget(SourceText(b"slow\n"), settings(), path="t.sh", timeout=0.2)
    assert report.diagnostics == []
    assert "time budget" in report.error


def test_fix_modes_lint_within_the_time_budget(fakes, tmp_path, monkeypatch):
    """`--fix`/`--diff`/`--add-suppressions` (and the server's fix-all) re-lint through the same
    per-file budget as `check`: a pathological file is an error, not a hang."""
    import functools

    from verl_lint.fixes import FixOptions, process_file

    monkeypatch.setattr(engine, "DEFAULT_TIMEOUT", 0.2)
    path = tmp_path / "slow.sh"
    path.write_text("slow\n")
    for options in (FixOptions(fix=True), FixOptions(add_suppressions=True)):
        started = time.monotonic()
        result = process_file(path, settings(), options)
        assert time.monotonic() - started < 4
        assert "time budget" in result.report.error and not result.changed


@pytest.mark.parametrize("data, message", [
    (b"echo \x00\x01\n", "binary file"),
    (b"echo caf\xe9\n", "not valid UTF-8 (byte 0xe9 at line 1, column 9)"),
])
def test_unlintable_files(tmp_path, data, message):
    path = tmp_path / "x.sh"
    path.write_bytes(data)
    report = lint_file(path, Settings())
    assert report.diagnostics == [] and message in report.error


def test_unreadable_file(tmp_path):
    report = lint_file(tmp_path / "missing.sh", Settings())
    assert report.error.startswith("cannot read")
    assert lint_file(tmp_path, Settings()).error == "is a directory"


def test_lint_paths_parallel_keeps_order(fakes, tmp_path):
    paths = []
    for i in range(6):
        p = tmp_path / f"s{i}.sh"
        p.write_text("bad\n" * (i % 3))
        paths.append(p)
    serial = lint_paths(paths, lambda p: settings(), jobs=1)
    parallel = lint_paths(paths, lambda p: settings(), jobs=3, display=lambda p: p.name)
    assert [r.path for r in parallel] == [p.name for p in paths]
    assert [len(r.diagnostics) for r in parallel] == [len(r.diagnostics) for r in serial]
    assert [len(r.diagnostics) for r in serial] == [0, 1, 2, 0, 1, 2]


def test_rule_instances_are_cached(fakes):
    codes = frozenset({"VL901"})
    assert engine._rules_by_scope(codes) is engine._rules_by_scope(codes)


def test_engine_does_not_import_heavy_packages():
    import subprocess
    import sys

    code = ("import sys; from verl_lint.engine import lint_source; "
            "from verl_lint.settings import Settings; from verl_lint.source import SourceText; "
            "lint_source(SourceText(b'echo hi\\n'), Settings(select=('VL001',)), path='x'); "
            "print(sorted(m for m in ('rich', 'pygls', 'hydra') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=Path(__file__).parent)
    assert out.stdout.strip() == "[]", out.stderr


def test_never_raises_on_arbitrary_text():
    from hypothesis import given, settings as hsettings, strategies as st

    alphabet = st.sampled_from(list("abc =$@{}()[]\"'\\\n\t#;|&-+~.:,0123456789") +
                               ["python3 -m verl.trainer.main_ppo ", "case $D in ", "esac",
                                "# verl-lint: disable=", "VL201", "${X:-", "ARR=(", "\"$@\""])

    @hsettings(max_examples=60, deadline=None)
    @given(st.lists(alphabet, max_size=40).map("".join))
    def run(text):
        report = lint_source(SourceText(text.encode()), Settings(), path="h.sh")
        assert isinstance(report, FileReport)

    run()


def test_linting_creates_no_reference_cycles():
    """`tune_gc_for_batch` raises the collector's threshold on the promise that a lint leaves no
    cycles behind: everything a file allocates must die by reference counting. A recursive
    closure or a back-reference to a parent breaks that and keeps whole models alive."""
    import gc

    root = Path(__file__).resolve().parent.parent / "fixtures"
    paths = sorted((root / "corpus").rglob("*.sh")) + sorted((root / "scripts").glob("*.sh"))
    settings = Settings()
    for p in paths:
        lint_file(p, settings)  # warm: release data and caches are loaded once, not garbage
    gc.collect()
    flags = gc.get_debug()
    was_enabled = gc.isenabled()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        for p in paths:
            lint_file(p, settings)
        gc.collect()
        leaked = [type(o).__name__ for o in gc.garbage]
    finally:
        gc.garbage.clear()
        gc.set_debug(flags)
        if was_enabled:
            gc.enable()
    assert leaked == [], f"reference cycles after linting: {sorted(set(leaked))}"


def test_lint_paths_restores_the_garbage_collector_settings(fakes, tmp_path):
    import gc

    (tmp_path / "a.sh").write_text("echo ok\n")
    before = gc.get_threshold(), gc.get_freeze_count()
    lint_paths([tmp_path / "a.sh"], lambda p: Settings())
    assert (gc.get_threshold(), gc.get_freeze_count()) == before


def test_a_swallowed_timeout_is_raised_again():
    """Python ignores an exception raised in a gc callback (Hypothesis installs one): the
    budget's alarm repeats, so the work still stops soon after the budget is spent."""
    import time

    from verl_lint import engine

    swallowed = []
    ran_out = []  # the loop ended by itself: no second alarm came (no bound on wall time: load)
    started = time.monotonic()
    with engine.file_budget(0.2) as budget:
        while time.monotonic() - started < 30:
            try:
                sum(range(1000))
            except engine.LintTimeout:
                if swallowed:
                    raise
                swallowed.append(1)  # the first one lost, as in a gc callback
        ran_out.append(1)
    assert budget.expired and swallowed and not ran_out


def test_an_alarm_in_a_gc_callback_is_raised_after_it_returns(monkeypatch):
    """A file's time running out while a gc callback runs (Hypothesis installs one): raising
    there would be "unraisable", printed and lost; the repeated alarm raises it afterwards."""
    import gc
    import sys
    import time

    from verl_lint.engine import file_budget

    unraisable = []
    monkeypatch.setattr(sys, "unraisablehook", unraisable.append)

    def slow(phase, info):
        if phase == "start":
            end = time.monotonic() + 0.15
            while time.monotonic() < end:
                pass

    gc.callbacks.append(slow)
    try:
        with file_budget(0.05) as budget:
            gc.collect()  # the alarm comes inside `slow`
            while True:  # and is raised here, ending the block
                time.sleep(0.01)
    finally:
        gc.callbacks.remove(slow)
    assert budget.expired and unraisable == []

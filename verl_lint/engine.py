"""The engine: one script in, sorted diagnostics out.

Per file: parse once, choose the verl version, interpret every scenario, analyse each launch
against verl (an identical launch in two scenarios is analysed once), run the enabled rules by
scope, merge the same finding across scenarios, then apply severity overrides and suppressions
and report unused suppressions (VL002).

A file that cannot be linted at all (unreadable, binary, not UTF-8, over the time budget) gets a
`FileReport.error` instead of diagnostics: the CLI prints it as an error line and exits 2,
because "no findings" would be a lie about a file verl-lint never read. A crashing rule or stage
is also an `error` (the other rules' findings are kept); set VERL_LINT_DEBUG=1 to re-raise.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
from dataclasses import replace
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterator, Sequence

from verl_lint.diagnostics import Diagnostic, FileReport
from verl_lint.fileio import read_script
from verl_lint.records import shared_dataclass
from verl_lint.result_cache import COLD_AFTER
from verl_lint.rules.base import LaunchContext, Rule, ScenarioContext, ScriptContext
from verl_lint.settings import Settings, load_extend_rules
from verl_lint.source import SourceText
from verl_lint.suppressions import UNUSED_CODE, parse_suppressions

if TYPE_CHECKING:
    from verl_lint.result_cache import EntryWriter, ResultCache

DEFAULT_TIMEOUT = 20.0  # seconds per file; a pathological file is reported, not stuck


class LintTimeout(BaseException):
    """Raised by the per-file alarm; a BaseException so rule guards do not swallow it."""


# ---- rules ---------------------------------------------------------------------------------

@lru_cache(maxsize=64)
def _rules_by_scope(codes: frozenset[str]) -> dict[str, tuple[Rule, ...]]:
    from verl_lint.rules.registry import all_rules

    out: dict[str, list[Rule]] = {"script": [], "scenario": [], "launch": []}
    for cls in all_rules():
        if cls.code in codes and cls.scope in out:
            out[cls.scope].append(cls())
    return {k: tuple(v) for k, v in out.items()}


def _debug() -> bool:
    return os.environ.get("VERL_LINT_DEBUG", "") not in ("", "0")


class _Run:
    """Collects diagnostics and internal errors while running rules over one file."""

    def __init__(self) -> None:
        self.errors: list[str] = []
        # (diagnostic, label of the scenario where it holds); script-scope findings hold
        # everywhere (None)
        self.found: list[tuple[Diagnostic, str | None]] = []

    def rule(self, rule: Rule, ctx, label: str | None = None) -> None:
        try:
            diagnostics = list(rule.check(ctx) or ())
        except Exception as exc:  # noqa: BLE001 - one broken rule must not hide the others
            self.errors.append(unexpected_error(exc, f"in rule {rule.code} ({rule.name})"))
            return
        if diagnostics:  # most rules find nothing: no generator per rule call
            self.found.extend((d, label) for d in diagnostics)

    def stage(self, what: str, fn: Callable, *args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except Exception as exc:  # noqa: BLE001
            self.errors.append(unexpected_error(exc, f"while {what}"))
            return None


def unexpected_error(exc: Exception, where: str) -> str:
    """The one-line error for an exception escaping a stage (re-raised under VERL_LINT_DEBUG).
    Recursion running out is the input's doing (nesting hundreds deep), not a bug."""
    if _debug():
        raise exc
    if isinstance(exc, RecursionError):
        return f"nested too deeply to analyse ({where}); not linted"
    return f"internal error {where}: {type(exc).__name__}: {exc}"


# ---- one file ------------------------------------------------------------------------------

def lint_source(source: SourceText, settings: Settings, *, path: str) -> FileReport:
    """Lint one script's text. Never raises for bad input (see module docstring)."""
    from verl_lint.shell import parse_script
    from verl_lint.verl.release import release_for

    from verl_lint.result_cache import dependencies, start_recording

    consulted = start_recording()  # workspace paths the rules look at, for the result cache
    load_extend_rules(settings.extend_rules)
    enabled = settings.enabled_codes(path)
    rules = _rules_by_scope(enabled)
    run = _Run()
    report = FileReport(path=path, source=source)

    model = run.stage("parsing", parse_script, source)
    if model is None or model.unread:
        report.error = "; ".join(run.errors) if model is None else f"{model.unread}; not linted"
        return report
    version = run.stage("choosing the verl source", settings.choose_verl_version, source.text, path)
    report.version = version

    ctx = ScriptContext(path=path, source=source, model=model, settings=settings, version=version)
    for rule in rules["script"]:
        run.rule(rule, ctx)

    labels: list[str] = []
    analyses: list[tuple] = []  # (launch, analysis): the same launch is analysed once
    per_launch: list[tuple] = []  # (launch, its findings run.found[first:end])
    if rules["scenario"] or rules["launch"]:
        from verl_lint.evaluate import evaluate_script

        runs = run.stage("interpreting the script", evaluate_script, model,
                         device=settings.device, pins=dict(settings.pins) or None,
                         known_env=frozenset(settings.known_env)) or []
        release = None
        workspace = settings.workspace(path)
        for srun in runs:
            label = srun.scenario.label
            labels.append(label)
            sctx = ScenarioContext(path=path, source=source, model=model, settings=settings,
                                   run=srun, version=version)
            for rule in rules["scenario"]:
                run.rule(rule, sctx, label)
            if not rules["launch"] or not srun.launches:
                continue
            if release is None and version is not None:
                release = run.stage("loading verl knowledge", release_for, version)
            if release is None:
                continue
            for launch in srun.launches:
                analysis = _analysis(run, analyses, release, launch, workspace)
                lctx = LaunchContext(path=path, source=source, model=model, settings=settings,
                                     run=srun, launch=launch, release=release, analysis=analysis,
                                     version=version)
                first = len(run.found)
                for rule in rules["launch"]:
                    run.rule(rule, lctx, label)
                per_launch.append((launch, first, len(run.found)))

    if len(per_launch) > 1:
        _drop_fixes_other_launches_refute(run.found, per_launch)
    diagnostics = _merge(run.found, labels)
    diagnostics = [_finish(d, settings, path) for d in diagnostics]

    suppressions = parse_suppressions(source, model)
    if suppressions:
        diagnostics = suppressions.filter(diagnostics)
        if UNUSED_CODE in enabled:
            unused = suppressions.unused(source, enabled)
            # a file-wide `disable=VL002` or `disable=all` opts the file out of VL002 too
            if unused and not {UNUSED_CODE, "ALL"} & suppressions.file_wide_codes():
                diagnostics.extend(_finish(d, settings, path) for d in unused)
    diagnostics.sort(key=Diagnostic.sort_key)
    report.diagnostics = diagnostics
    if run.errors:
        report.error = "; ".join(run.errors)
    report.depends_on = dependencies(analyses, version, consulted)
    return report


def _drop_fixes_other_launches_refute(found: list, per_launch: list[tuple]) -> None:
    """Keep a launch finding's fix only if every launch whose overrides hold the edited text
    reports the same finding: two launches may share one array (`"${COMMON[@]}"`), and a key
    unknown to the one selecting `model_engine=veomni` is right for the other — renaming it
    would break that launch, and the next `--fix` would rename it back."""
    reported = [{(d.code, d.span.start, d.span.end) for d, _ in found[a:b]}
                for _, a, b in per_launch]
    for index, (_, a, b) in enumerate(per_launch):
        for i in range(a, b):
            diag, label = found[i]
            if diag.fix is None or not diag.fix.edits:
                continue
            key = (diag.code, diag.span.start, diag.span.end)
            for other, (launch, _, _) in enumerate(per_launch):
                if other != index and key not in reported[other] and any(
                        o.span.start <= e.start and e.end <= o.span.end
                        for e in diag.fix.edits for o in launch.overrides):
                    found[i] = (replace(diag, fix=None), label)
                    break


def _analysis(run: _Run, cache: list[tuple], release, launch, workspace):
    for seen, analysis in cache:
        if seen == launch:
            return analysis
    from verl_lint.verl.analysis import analyze_launch

    analysis = run.stage("analysing the launch against verl", analyze_launch, release, launch,
                         workspace)
    cache.append((launch, analysis))
    return analysis


def _merge(found: list[tuple[Diagnostic, str | None]], labels: list[str]) -> list[Diagnostic]:
    """One diagnostic per (code, span, message); scenarios=() when it holds in all of them."""
    merged: dict[tuple, tuple[Diagnostic, list[str]]] = {}
    everywhere = set()
    for diag, label in found:
        key = (diag.code, diag.span.start, diag.span.end, diag.message)
        entry = merged.get(key)
        if entry is None:
            entry = merged[key] = (diag, [])
        if label is None:
            everywhere.add(key)
        elif label not in entry[1]:
            entry[1].append(label)
    all_labels = set(labels)
    out = []
    for key, (diag, where) in merged.items():
        if key in everywhere or set(where) >= all_labels:
            scenarios: tuple[str, ...] = ()
        else:
            order = {lab: i for i, lab in enumerate(labels)}
            scenarios = tuple(sorted((w for w in where if w), key=order.__getitem__))
        out.append(replace(diag, scenarios=scenarios) if scenarios != diag.scenarios
                   else diag)
    return out


def _finish(diag: Diagnostic, settings: Settings, path: str) -> Diagnostic:
    """Fill what the engine owns: path and configured severity (`Rule.diagnostic` gave the rule
    name and docs url)."""
    update: dict = {"path": path}
    severity = settings.severity_for(diag.code, diag.severity)
    if severity != diag.severity:
        update["severity"] = severity
    return replace(diag, **update)


# ---- files ---------------------------------------------------------------------------------

def lint_file(path: Path, settings: Settings, *, display: str | None = None,
              timeout: float | None = None, source: SourceText | None = None) -> FileReport:
    """Read and lint one file (`source`: its script, when the caller read it already);
    `display` is the path shown in reports (default: as given)."""
    name = display if display is not None else str(path)
    if source is None:
        source, problem = read_script(path)
        if source is None:
            return FileReport(path=name, error=problem)
    report = lint_with_budget(source, settings, path=name, timeout=timeout)
    source.trim()  # kept for the report's code frames: the bytes suffice
    return report


@shared_dataclass()
class Budget:
    """The time left for one file; `expired` once the alarm has fired."""

    started: float
    expired: bool = False


_RETRY = 0.05  # seconds between repeated alarms once the budget is spent
_budget: Budget | None = None  # the file budget in force (one file at a time per process)


def gave_up(budget: Budget) -> str:
    return (f"gave up after {time.monotonic() - budget.started:.0f} s "
            "(time budget per file exceeded); not linted")


@contextlib.contextmanager
def file_budget(timeout: float | None = None) -> Iterator[Budget]:
    """One time budget for all the work inside the block: a lint, every re-lint and parse of
    `--fix`, `show`'s interpretation. A block inside another shares the outer budget. When the
    time is up the block is left (LintTimeout stops it there) and `budget.expired` is set.

    `timeout` defaults to `DEFAULT_TIMEOUT` (read when called, so a test may shorten it); 0
    means no budget. The alarm is SIGALRM, so only the main thread is bounded; elsewhere the
    block runs as is."""
    global _budget
    if timeout is None:
        timeout = DEFAULT_TIMEOUT
    if _budget is not None:  # nested: the outer block's alarm already runs
        outer = _budget
        try:
            yield outer
        except LintTimeout:
            outer.expired = True
        return
    with _any_int_digits():
        yield from _alarm(timeout)


@contextlib.contextmanager
def _any_int_digits() -> Iterator[None]:
    """An override value of 5,000 digits is a value like any other: lift Python's limit on
    int/str conversion (a guard against quadratic conversion time, which the size limit on
    files and the time budget bound here) while a file is worked on."""
    global _digits_users, _digits_before
    if not hasattr(sys, "get_int_max_str_digits"):  # Python without the limit
        yield
        return
    # the limit is per process: threads (the language server) share one lift, the last restores
    with _digits_lock:
        if _digits_users == 0:
            _digits_before = sys.get_int_max_str_digits()
            sys.set_int_max_str_digits(0)
        _digits_users += 1
    try:
        yield
    finally:
        with _digits_lock:
            _digits_users -= 1
            if _digits_users == 0:
                sys.set_int_max_str_digits(_digits_before)


_digits_lock = threading.Lock()
_digits_users = 0
_digits_before = 0


def _alarm(timeout: float) -> Iterator[Budget]:
    global _budget
    now = time.monotonic()
    budget = Budget(started=now)
    usable = (timeout and hasattr(signal, "setitimer")
              and threading.current_thread() is threading.main_thread())
    if not usable:
        yield budget
        return

    inside = [True]

    def expired(signum, frame):
        budget.expired = True
        # not while a LintTimeout unwinds (a `finally`: its cleanup would be cut short), nor at
        # the start of the block's own __exit__ (before its generator can catch it, the timeout
        # escaped the block): the block ends as spent, or the alarm repeats 50 ms later
        if inside[0] and not isinstance(sys.exc_info()[1], LintTimeout) and \
                (frame is None or frame.f_code is not _LEAVING and not _in_gc_callback(frame)):
            raise LintTimeout

    previous = signal.signal(signal.SIGALRM, expired)
    # the alarm repeats until the block is left: one that comes in a gc callback (as Hypothesis
    # installs one) is not raised there, where Python would print it and go on
    outer_delay, outer_interval = signal.setitimer(signal.ITIMER_REAL, timeout, _RETRY)
    _budget = budget
    try:
        yield budget
    except LintTimeout:
        inside[0] = False
        budget.expired = True
    finally:
        inside[0] = False
        signal.setitimer(signal.ITIMER_REAL, 0)
        _budget = None
        signal.signal(signal.SIGALRM, previous)
        if outer_delay:  # someone else's alarm was pending: give it back what is left
            left = max(outer_delay - (time.monotonic() - now), 0.001)
            signal.setitimer(signal.ITIMER_REAL, left, outer_interval)


_LEAVING = type(file_budget(0)).__exit__.__code__  # contextlib's, which leaves the block


def _in_gc_callback(frame) -> bool:
    """Whether `frame` runs inside a `gc.callbacks` hook: an exception raised there is
    "unraisable" (printed, then lost; under pytest, whose hook the repeated alarm then
    interrupted in turn, a failed test)."""
    import gc

    hooks = {getattr(hook, "__code__", None) for hook in gc.callbacks} - {None}
    while hooks and frame is not None:
        if frame.f_code in hooks:
            return True
        frame = frame.f_back
    return False


def lint_with_budget(source: SourceText, settings: Settings, *, path: str,
                     timeout: float | None = None) -> FileReport:
    """`lint_source` that gives up when the file's time budget runs out (see `file_budget`)."""
    with file_budget(timeout) as budget:
        if not budget.expired:
            return lint_source(source, settings, path=path)
    return FileReport(path=path, source=source, error=gave_up(budget))


def _lint_task(args: tuple[Path, Settings, str, SourceText | None, "EntryWriter | None"]
               ) -> FileReport:
    path, settings, display, source, writer = args
    report = lint_file(path, settings, display=display, source=source)
    if writer is not None:  # stored by the process that linted it
        writer.store(report)
    return report


def tune_gc_for_batch(*, freeze: bool = True) -> tuple[int, int, int]:
    """Garbage-collector settings for linting many files in one process; returns the previous
    thresholds (`gc.set_threshold(*previous)` undoes it).

    Linting allocates thousands of short-lived objects per file and creates no reference cycles
    (a test keeps it so), so they die by reference counting; the collector's default gen-0
    threshold of 700 still walks them tens of times per file, and each full collection walks the
    bundled verl data too. A larger threshold plus `gc.freeze()` of what is loaded so far cuts
    that (≈8% of a warm run) without letting memory grow."""
    import gc

    previous = gc.get_threshold()
    if freeze:
        gc.freeze()
    gc.set_threshold(50_000, 20, 20)
    return previous


AUTO_JOBS_MIN_FILES = 8  # `jobs=None`: forking workers only pays for itself beyond this many


def lint_paths(paths: Sequence[Path], settings_for: Callable[[Path], Settings], *,
               jobs: int | None = 1, display: Callable[[Path], str] = str,
               cache: "ResultCache | None" = None, looked_up: bool = False
               ) -> list[FileReport]:
    """Lint files in the given order; `jobs > 1` in that many processes (same output order),
    `jobs=None` one per CPU when more than `AUTO_JOBS_MIN_FILES` files need linting. With a
    `cache`, unchanged files get their stored report (`looked_up`: the caller asked the cache
    already, these all missed) and new clean reports are stored."""
    import gc

    frozen_before = gc.get_freeze_count()
    previous = tune_gc_for_batch(freeze=not frozen_before)  # never thaw what the caller froze
    try:
        tasks = [(p, settings_for(p), display(p)) for p in paths]
        reports: list = [None] * len(tasks)
        if cache is not None and not looked_up:
            reports = cache.look_up(tasks, defer=jobs != 1 and _can_fork(len(tasks)))
            reports += [_ASK] * (len(tasks) - len(reports))
            for r in reports:
                if r is not None and r is not _ASK:
                    cache.answered(r, hit=True)
        # a file the cache missed is linted from the bytes it read, and stored where linted;
        # one it was not asked about is asked where it is linted
        todo = [(*t, *(cache.pending(t[0]) if cache is not None else (None, None)))
                if r is None else (*t, None, _Ask(cache))
                for t, r in zip(tasks, reports) if r is None or r is _ASK]
        if jobs is None:
            jobs = (os.cpu_count() or 1) if len(todo) > AUTO_JOBS_MIN_FILES else 1
        fresh: list[FileReport] = []

        def done(task: tuple, report: FileReport, hit: bool) -> None:
            fresh.append(report)
            if cache is not None:
                cache.answered(report, hit=hit)

        finished = _lint_parallel(todo, jobs, done, cache) if jobs > 1 and len(todo) > 1 else 0
        for t in todo[finished:]:  # all of them where processes cannot be forked
            done(t, *_answer(t))
        if cache is not None:
            cache.finish()
        linted = iter(fresh)
        return [next(linted) if r is None or r is _ASK else r for r in reports]
    finally:  # a library caller keeps its own collector settings
        gc.set_threshold(*previous)
        if not frozen_before:
            gc.unfreeze()


class _Ask:
    """In a task's writer place: the file was not looked up yet; the process linting it asks
    `cache` first."""

    __slots__ = ("cache",)

    def __init__(self, cache: "ResultCache") -> None:
        self.cache = cache


_ASK = object()  # `ResultCache.look_up` stopped before it: asked by the process linting it


def _can_fork(files: int) -> bool:
    from verl_lint import workers

    return workers.available() and files > AUTO_JOBS_MIN_FILES + COLD_AFTER


def _answer(task: tuple) -> tuple[FileReport, bool]:
    """(The task's report, whether the result cache answered it.)"""
    path, settings, display, _, ask = task
    if type(ask) is _Ask:
        found = ask.cache.load(path, settings, display)
        if found is not None:
            return found, True
        task = (path, settings, display, *ask.cache.pending(path))
    return _lint_task(task), False


def _lint_chunk(tasks: list) -> list[tuple[FileReport, bool]]:
    """`_answer` for each task of a chunk (`workers.lint_chunks`): a report leaves out the
    script the task brought (this process read it to look it up, and puts it back:
    `_lint_parallel`), which was nine tenths of the bytes a worker pickled and sent (≈ 7 KB a
    file)."""
    answered = [_answer(t) for t in tasks]
    for task, (report, _) in zip(tasks, answered):
        if task[3] is not None and report.source is task[3]:
            report.source = None
    return answered


def _lint_parallel(tasks: list, jobs: int, done: Callable[[tuple, FileReport, bool], None],
                   cache: "ResultCache | None") -> int:
    """Lint `tasks` in `jobs` processes (`verl_lint.workers`), calling `done(task, report,
    from the cache)` in order; returns how many tasks were reported: none where processes
    cannot be forked (the caller lints them). Each worker writes the `cache` entries it
    stored before it ends."""
    from verl_lint import workers

    if not workers.available():
        return 0
    # the first file is linted here, before the fork: what linting loads on first use (the
    # rules, the parser, the verl release's data, per-process memos: ≈ 50 ms) is inherited by
    # every worker instead of being loaded by each
    done(tasks[0], *_answer(tasks[0]))
    rest = tasks[1:]
    places = _chunked_by_size(rest, jobs)
    chunks = [[rest[i] for i in place] for place in places]
    answers: list = [None] * len(rest)

    def chunk_done(index: int, answered: list[tuple[FileReport, bool]]) -> None:
        for i, (report, hit) in zip(places[index], answered):
            if report.source is None:
                report.source = rest[i][3]
            answers[i] = report, hit

    workers.lint_chunks(chunks, jobs, _lint_chunk, chunk_done,
                        None if cache is None else cache.write)
    for task, answer in zip(rest, answers):  # in the files' order, as linted in one process
        done(task, *answer)
    return len(tasks)


def _chunked_by_size(tasks: list, jobs: int) -> list[list[int]]:
    """The tasks' indices cut into chunks for `workers.lint_chunks`, whose workers take chunks
    from the front and this process from the back: the largest files at both ends, the
    smallest where the two meet, alone in their chunks, so all finish close together (verl's
    scripts differ ten-fold in work; in file order one process sat idle for up to a chunk of
    large files, ≈ 7 ms on average). Elsewhere chunks of a few files: a chunk's round trip
    costs far less than a file."""
    size = max(1, min(4, len(tasks) // (jobs * 8)))
    largest_first = sorted(range(len(tasks)), key=lambda i: -_size_of(tasks[i]))
    # the workers' end gets jobs - 1 files of every jobs, as they take chunks that much faster
    front = [i for n, i in enumerate(largest_first) if n % jobs]
    back = [i for n, i in enumerate(largest_first) if not n % jobs]

    def cut(order: list[int]) -> list[list[int]]:
        grouped = len(order) * 3 // 4
        return [order[i:min(i + size, grouped)] for i in range(0, grouped, size)] + \
            [[i] for i in order[grouped:]]
    return cut(front) + cut(back)[::-1]


def _size_of(task: tuple) -> int:
    """A file's size, the measure of its work (its text as read, else on disk)."""
    source = task[3]
    if source is not None:
        return len(source.data)
    try:
        return os.stat(task[0]).st_size
    except OSError:
        return 0

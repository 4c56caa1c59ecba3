"""Applying fixes: `--fix`, `--unsafe-fixes`, `--diff`, `--show-fixes`, `--add-suppressions`.

Fixes are data (DESIGN principle 6): every Diagnostic may carry a `Fix` of byte edits. This module
turns them into new file contents: pick non-overlapping fixes (none where scenarios disagree on
the same words), drop any whose result bash could not parse or that adds an error on a line
that had none, re-lint and repeat until nothing changes, then write atomically. The LSP's quick fixes
reuse `suppression_edit` / `file_suppression_edit` from here.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterable, Protocol, Sequence

from verl_lint.diagnostics import Diagnostic, Edit, Fix
from verl_lint.records import shared_dataclass
from verl_lint.source import SourceText, Span

if TYPE_CHECKING:
    from verl_lint.settings import Settings

MAX_ROUNDS = 10
UNUSED_SUPPRESSION = "VL002"  # suppressing "this directive is unused" would be circular

Lint = Callable[[SourceText], Sequence[Diagnostic]]
ParseErrors = Callable[[SourceText], int]

_DIRECTIVE = re.compile(
    rb"^(?P<indent>[ \t]*)#[ \t]*verl-lint:[ \t]*(?:disable|disable-next-line)[ \t]*=[ \t]*"
    rb"(?P<codes>[A-Za-z0-9_,\- \t]*?)[ \t]*(?P<eol>\r?\n?)$"
)


class StatementIndex(Protocol):
    """What suppression placement needs from the shell model (`ScriptModel` provides it)."""

    def next_statement_span(self, offset: int) -> Span | None: ...


@shared_dataclass(frozen=True)
class AppliedFix:
    code: str
    title: str
    line: int  # 1-based line of the finding in the text the fix was applied to
    applicability: str = "safe"
    reason: str = ""  # why a dropped fix was not applied


@shared_dataclass()
class FixResult:
    """What fixing (or suppressing) one file did. `diagnostics` are those left in `fixed`."""

    path: str
    original: bytes
    fixed: bytes
    applied: list[AppliedFix] = field(default_factory=list)
    dropped: list[AppliedFix] = field(default_factory=list)  # would not parse, or add an error
    diagnostics: list[Diagnostic] = field(default_factory=list)
    rounds: int = 0
    converged: bool = True
    report: object | None = None  # the engine's FileReport for `fixed`, when the engine linted

    @property
    def changed(self) -> bool:
        return self.fixed != self.original


# --- edits -------------------------------------------------------------------------------------


def newline_of(data: bytes) -> bytes:
    """The file's dominant line ending, so fixes and inserted lines keep it."""
    crlf = data.count(b"\r\n")
    return b"\r\n" if crlf and crlf * 2 >= data.count(b"\n") else b"\n"


def _encode(text: str, newline: bytes) -> bytes:
    raw = text.encode("utf-8")
    if newline == b"\r\n":
        raw = raw.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")
    return raw


def _overlaps(a: Edit, b: Edit) -> bool:
    # two insertions (or an insertion and a replacement) at the same point have no defined order
    return a.start == b.start or max(a.start, b.start) < min(a.end, b.end)


def _valid(fix: Fix, size: int) -> bool:
    edits = sorted(fix.edits, key=lambda e: (e.start, e.end))
    if not edits or any(not 0 <= e.start <= e.end <= size for e in edits):
        return False
    return all(not _overlaps(a, b) for a, b in zip(edits, edits[1:]))


def apply_edits(data: bytes, edits: Iterable[Edit], newline: bytes | None = None) -> bytes:
    """Apply non-overlapping byte edits (in any order) to `data`."""
    newline = newline or newline_of(data)
    out: list[bytes] = []
    pos = 0
    for e in sorted(edits, key=lambda e: (e.start, e.end)):
        if e.start < pos:
            raise ValueError(f"overlapping edits at byte {e.start}")
        out.append(data[pos:e.start])
        out.append(_encode(e.replacement, newline))
        pos = e.end
    out.append(data[pos:])
    return b"".join(out)


def collect_fixes(diagnostics: Iterable[Diagnostic], *, unsafe: bool = False,
                  size: int | None = None) -> list[tuple[Diagnostic, Fix]]:
    """Fixes to try, in file order: safe ones (and unsafe with `unsafe`), well-formed, without
    duplicates (the same finding merged from several scenarios carries the same fix) and without
    overlaps (the first wins; the others get their turn in the next round)."""
    seen: set[tuple[Edit, ...]] = set()
    taken: list[Edit] = []
    chosen: list[tuple[Diagnostic, Fix]] = []
    disputed = _disputed(diagnostics)
    ordered = sorted((d for d in diagnostics if d.fix is not None and
                      (d.code, d.span.start, d.span.end) not in disputed),
                     key=lambda d: (min(e.start for e in d.fix.edits) if d.fix.edits else -1,
                                    d.sort_key()))
    for diag in ordered:
        fix = diag.fix
        if fix.applicability == "unsafe" and not unsafe:
            continue
        key = tuple(sorted(fix.edits, key=lambda e: (e.start, e.end)))
        if key in seen or (size is not None and not _valid(fix, size)) or not fix.edits:
            continue
        if any(_overlaps(e, t) for e in fix.edits for t in taken):
            continue
        seen.add(key)
        taken.extend(fix.edits)
        chosen.append((diag, fix))
    return chosen


def _disputed(diagnostics: Iterable[Diagnostic]) -> set[tuple[str, int, int]]:
    """(code, span) where scenarios disagree on how to change the finding's own text: one
    finding per device branch on the same words, holding in different scenarios, with fixes
    (or a fix and none) that differ and edit those shared words — whichever is applied would be
    wrong for the other scenario. Fixes that insert into each scenario's own branch do not
    dispute."""
    found: dict[tuple[str, int, int], list[tuple[frozenset[str], Fix | None]]] = {}
    for d in diagnostics:
        found.setdefault((d.code, d.span.start, d.span.end), []).append(
            (frozenset(d.scenarios), d.fix))

    def edits_span(fix: Fix | None, start: int, end: int) -> bool:
        return fix is not None and any(e.start < end and e.end > start for e in fix.edits)

    def differ(fa: Fix | None, fb: Fix | None) -> bool:
        return (fa.edits if fa else None) != (fb.edits if fb else None)

    return {key for key, items in found.items()
            if any(a and b and not a & b and differ(fa, fb)
                   and (edits_span(fa, *key[1:]) or edits_span(fb, *key[1:]))
                   for i, (a, fa) in enumerate(items) for b, fb in items[i + 1:])}


def count_parse_errors(source: SourceText) -> int:
    from verl_lint.shell import parse_script

    return len(parse_script(source).errors)


def _applied(diag: Diagnostic, fix: Fix, reason: str = "") -> AppliedFix:
    return AppliedFix(diag.code, fix.title, diag.span.line, fix.applicability, reason)


NOT_PARSED = "the result would not parse"
NEW_ERROR = "it would add an error"


def fix_source(source: SourceText, lint: Lint, *, unsafe: bool = False,
               max_rounds: int = MAX_ROUNDS, parse_errors: ParseErrors | None = None,
               path: str | None = None) -> FixResult:
    """Apply fixes until a re-lint offers none (at most `max_rounds` rounds), as ruff does:
    each round's fixes are computed on the text the previous round produced.

    A fix is dropped when the text it produces has more parse errors than before it, or an
    error finding on a line that had none: a fix must never turn a runnable script into one
    bash rejects, nor trade one defect for another (a device count that no longer divides).
    """
    parse_errors = parse_errors or count_parse_errors
    original = source.data
    newline = newline_of(original)
    result = FixResult(path=path or source.path or "", original=original, fixed=original)
    seen_texts = {original}
    dropped_keys: set[tuple] = set()
    current = source
    diagnostics = list(lint(current))
    base_errors = parse_errors(current)

    def drop(diag: Diagnostic, fix: Fix, reason: str) -> None:
        if (diag.code, fix.edits) not in dropped_keys:
            dropped_keys.add((diag.code, fix.edits))
            result.dropped.append(_applied(diag, fix, reason))

    while result.rounds < max_rounds:
        candidates = collect_fixes(diagnostics, unsafe=unsafe, size=len(current.data))
        if not candidates:
            break
        accepted, new_data, errors = _parse_safe(current.data, candidates, base_errors,
                                                 newline, parse_errors)
        for diag, fix in candidates:
            if (diag, fix) not in accepted:
                drop(diag, fix, NOT_PARSED)
        relinted = None
        if accepted and new_data not in seen_texts:
            worse = _adds_error(current, diagnostics, accepted, newline, lint)
            relinted = worse.relinted
            if worse.found:
                kept, new_data, relinted = _error_safe(current, diagnostics, accepted, newline,
                                                       lint)
                for diag, fix in accepted:
                    if (diag, fix) not in kept:
                        drop(diag, fix, NEW_ERROR)
                accepted = kept
                errors = parse_errors(SourceText(new_data)) if kept else base_errors
        if not accepted or new_data in seen_texts:
            result.converged = not accepted
            break
        result.rounds += 1
        result.applied.extend(_applied(d, f) for d, f in accepted)
        seen_texts.add(new_data)
        current = SourceText(new_data, source.path)
        base_errors = errors
        diagnostics = relinted if relinted is not None else list(lint(current))
    else:
        # out of rounds: converged only if nothing more would apply
        result.converged = not collect_fixes(diagnostics, unsafe=unsafe, size=len(current.data))
    result.fixed = current.data
    result.diagnostics = diagnostics
    return result


def _parse_safe(data: bytes, candidates: list[tuple[Diagnostic, Fix]], base_errors: int,
                newline: bytes, parse_errors: ParseErrors):
    """Apply all candidates if the result parses as well as before; else add them one by one,
    keeping each that does not add a parse error."""
    def attempt(chosen):
        new = apply_edits(data, [e for _, f in chosen for e in f.edits], newline)
        return new, parse_errors(SourceText(new))

    new, errors = attempt(candidates)
    if errors <= base_errors:
        return candidates, new, errors
    accepted: list[tuple[Diagnostic, Fix]] = []
    new, errors = data, base_errors
    for cand in candidates:
        trial, trial_errors = attempt([*accepted, cand])
        if trial_errors <= base_errors:
            accepted.append(cand)
            new, errors = trial, trial_errors
    return accepted, new, errors


def _is_error(d: Diagnostic) -> bool:
    return d.severity.value == "error"


def _old_offset(edits: Sequence[Edit], newline: bytes, offset: int) -> int:
    """Where a byte of the edited text was before `edits` (inside a replacement: its start)."""
    delta = 0
    for e in sorted(edits, key=lambda e: (e.start, e.end)):
        at = e.start + delta
        size = len(_encode(e.replacement, newline))
        if offset < at:
            break
        if offset < at + size:
            return e.start
        delta += size - (e.end - e.start)
    return offset - delta


@shared_dataclass()
class _Verdict:
    found: bool
    relinted: list[Diagnostic]


def _adds_error(before: SourceText, diagnostics: Sequence[Diagnostic],
                chosen: Sequence[tuple[Diagnostic, Fix]], newline: bytes,
                lint: Lint) -> _Verdict:
    """Lint the text `chosen` produce; does it have an error on a line that had none?"""
    edits = [e for _, f in chosen for e in f.edits]
    after = SourceText(apply_edits(before.data, edits, newline), before.path)
    relinted = list(lint(after))
    had = {before.line_of(d.span.start) for d in diagnostics if _is_error(d)}
    found = any(_is_error(d) and
                before.line_of(_old_offset(edits, newline, d.span.start)) not in had
                for d in relinted)
    return _Verdict(found, relinted)


def _error_safe(before: SourceText, diagnostics: Sequence[Diagnostic],
                candidates: Sequence[tuple[Diagnostic, Fix]], newline: bytes, lint: Lint):
    """Add the candidates one by one, keeping each that adds no error (the slow path, taken
    only when the round as a whole would)."""
    kept: list[tuple[Diagnostic, Fix]] = []
    data, relinted = before.data, None
    for cand in candidates:
        verdict = _adds_error(before, diagnostics, [*kept, cand], newline, lint)
        if not verdict.found:
            kept.append(cand)
            data = apply_edits(before.data, [e for _, f in kept for e in f.edits], newline)
            relinted = verdict.relinted
    return kept, data, relinted


# --- suppressions ------------------------------------------------------------------------------


def _first_code_offset(source: SourceText, line0: int) -> int:
    raw = source.line_bytes(line0)
    return source.line_starts[line0] + len(raw) - len(raw.lstrip(b" \t"))


def _continues(source: SourceText, line0: int) -> bool:
    """Whether the line before `line0` ends with `\\`, i.e. `line0` continues a command."""
    return line0 > 0 and source.line_bytes(line0 - 1).rstrip(b"\r\n").endswith(b"\\")


def _inside_command(model: StatementIndex, offset: int) -> bool:
    """Whether `offset` lies within a multi-line command or scalar assignment, where a comment
    line would change the command (array assignments and blocks are fine)."""
    from verl_lint.shell.model import Assignment, Command

    return any(s.span.start < offset < s.span.end for s in getattr(model, "statements", ())
               if isinstance(s, Command) or (isinstance(s, Assignment) and s.array is None))


def suppression_target(source: SourceText, model: StatementIndex, span: Span) -> int | None:
    """0-based line before which a `# verl-lint: disable=…` line suppresses a finding at `span`.

    That is the line of the innermost command or array element containing the finding when that
    statement is the first to start after the line's beginning (`gpu) ACTOR+=(` qualifies: a
    comment before the case pattern is legal). Inside a `\\`-continued command a comment would
    cut the command, so the directive goes before the whole command. None when nothing holds it.
    """
    for line0 in range(source.line_of(span.start), -1, -1):
        at = source.line_starts[line0]
        if _continues(source, line0) or _inside_command(model, at):
            continue
        stmt = model.next_statement_span(at)
        if stmt is not None and source.line_of(stmt.start) == line0 and stmt.contains(span):
            return line0
    return None


def _shebang_end(source: SourceText) -> int:
    return len(source.line_bytes(0)) if source.data.startswith(b"#!") else 0


def _merge_directive(source: SourceText, line0: int, codes: Iterable[str]) -> Edit | None:
    """An edit adding `codes` to the directive on `line0`, if that line is one."""
    if line0 < 0:
        return None
    raw = source.line_bytes(line0)
    m = _DIRECTIVE.match(raw)
    if m is None:
        return None
    present = [c.strip() for c in m.group("codes").decode().split(",") if c.strip()]
    merged = present + [c for c in codes if c not in present]
    start = source.line_starts[line0] + m.start("codes")
    return Edit(start=start, end=start + len(m.group("codes")), replacement=",".join(merged))


def _directive_line(source: SourceText, line0: int, codes: Sequence[str], newline: str) -> Edit:
    """Insert a directive before `line0` (merging into one already right above it)."""
    merged = _merge_directive(source, line0 - 1, codes)
    if merged is not None:
        return merged
    indent = source.line_bytes(line0)[: _first_code_offset(source, line0)
                                      - source.line_starts[line0]].decode()
    at = source.line_starts[line0]
    return Edit(start=at, end=at,
                replacement=f"{indent}# verl-lint: disable={','.join(codes)}{newline}")


def suppression_edit(source: SourceText, model: StatementIndex, span: Span,
                     codes: Sequence[str]) -> Edit | None:
    """The edit that disables `codes` for the command/element holding `span` (None: no place)."""
    line0 = suppression_target(source, model, span)
    if line0 is None:
        return None
    return _directive_line(source, line0, codes, newline_of(source.data).decode())


def file_suppression_edit(source: SourceText, codes: Sequence[str]) -> Edit:
    """The edit that disables `codes` for the whole file (a directive right after the shebang)."""
    newline = newline_of(source.data).decode()
    at = _shebang_end(source)
    if at:
        if not source.data[:at].endswith(b"\n"):  # a file that is only a shebang line
            return Edit(start=at, end=at,
                        replacement=f"{newline}# verl-lint: disable={','.join(codes)}{newline}")
        merged = _merge_directive(source, 1, codes)
        if merged is not None:
            return merged
    return Edit(start=at, end=at, replacement=f"# verl-lint: disable={','.join(codes)}{newline}")


def suppression_edits(source: SourceText, model: StatementIndex,
                      diagnostics: Iterable[Diagnostic]) -> list[Edit]:
    """One directive per suppression target for every finding (codes sorted, merged per line);
    findings no command holds get a file-wide directive."""
    return [edit for edit, _ in _suppression_plan(source, model, diagnostics)]


def _suppression_plan(source: SourceText, model: StatementIndex,
                      diagnostics: Iterable[Diagnostic]) -> list[tuple[Edit, list[Diagnostic]]]:
    """`suppression_edits`, each edit with the findings it suppresses."""
    per_line: dict[int, list[Diagnostic]] = {}
    file_wide: list[Diagnostic] = []
    for diag in diagnostics:
        if diag.code == UNUSED_SUPPRESSION:
            continue
        line0 = suppression_target(source, model, diag.span)
        if line0 is None or (line0 == 1 and _shebang_end(source)):
            # a directive right after the shebang is file-wide anyway
            file_wide.append(diag)
        else:
            per_line.setdefault(line0, []).append(diag)
    newline = newline_of(source.data).decode()
    plan = [(_directive_line(source, line0, _codes(diags), newline), diags)
            for line0, diags in sorted(per_line.items())]
    if file_wide:
        plan.append((file_suppression_edit(source, _codes(file_wide)), file_wide))
    return _coalesce(plan)


def _codes(diagnostics: list[Diagnostic]) -> list[str]:
    return sorted({d.code for d in diagnostics})


def _coalesce(plan: list[tuple[Edit, list[Diagnostic]]]) -> list[tuple[Edit, list[Diagnostic]]]:
    """Join insertions at the same offset (file-wide directive before a line-1 directive)."""
    out: dict[tuple[int, int], tuple[Edit, list[Diagnostic]]] = {}
    for e, diags in plan:
        key = (e.start, e.end)
        if key in out and e.start == e.end:
            first, covered = out[key]
            out[key] = (Edit(start=e.start, end=e.end,
                             replacement=e.replacement + first.replacement), diags + covered)
        else:
            out[key] = (e, diags)
    return sorted(out.values(), key=lambda item: item[0].start)


def suppress_source(source: SourceText, lint: Lint, model: StatementIndex | None = None,
                    path: str | None = None, parse_errors: ParseErrors | None = None) -> FixResult:
    """Add a directive for every current finding (`--add-suppressions`); like a fix, a
    directive whose insertion bash could not parse is left out."""
    if model is None:
        from verl_lint.shell import parse_script

        model = parse_script(source)
    parse_errors = parse_errors or count_parse_errors
    diagnostics = list(lint(source))
    result = FixResult(path=path or source.path or "", original=source.data, fixed=source.data,
                       diagnostics=diagnostics)
    plan = _suppression_plan(source, model, diagnostics)
    if not plan:
        return result
    directives = [(covered, Fix(title=e.replacement.strip() or "suppression", edits=(e,)))
                  for e, covered in plan]
    accepted, result.fixed, _ = _parse_safe(source.data, directives, parse_errors(source),
                                            newline_of(source.data), parse_errors)
    result.dropped = [AppliedFix("", f.title, source.line_of(f.edits[0].start) + 1)
                      for d, f in directives if (d, f) not in accepted]
    suppressed = {id(d) for covered, _ in accepted for d in covered}
    result.applied = [AppliedFix(d.code, f"disable {d.code}", d.span.line)
                      for d in diagnostics if id(d) in suppressed]
    result.rounds = 1
    result.diagnostics = list(lint(SourceText(result.fixed, source.path)))
    return result


# --- files -------------------------------------------------------------------------------------


@shared_dataclass(frozen=True)
class FixOptions:
    fix: bool = False
    unsafe_fixes: bool = False  # a modifier of --fix/--diff/--show-fixes, like ruff's
    diff: bool = False
    show_fixes: bool = False
    add_suppressions: bool = False

    @property
    def writes(self) -> bool:
        return (self.fix or self.add_suppressions) and not self.diff


def engine_lint(settings: "Settings", path: str, sink: list | None = None) -> Lint:
    """A Lint over the engine, within its per-file time budget (as `check`); every FileReport
    it produces is appended to `sink`."""
    from verl_lint.engine import lint_with_budget

    def lint(source: SourceText) -> Sequence[Diagnostic]:
        report = lint_with_budget(source, settings, path=path)
        if sink is not None:
            sink.append(report)
        return report.diagnostics

    return lint


def process_file(path: str | os.PathLike, settings: "Settings", options: FixOptions,
                 *, data: bytes | None = None, display: str | None = None) -> FixResult:
    """Fix (or suppress in) one file per `options`, writing it when `options.writes`.

    `result.report` is the engine's FileReport for the text now on disk: the fixed text when
    written, else the original (so `--show-fixes` alone reports the file as it is).
    """
    from verl_lint.diagnostics import FileReport
    from verl_lint.fileio import read_script

    from verl_lint.engine import file_budget, gave_up, unexpected_error
    from verl_lint.fileio import write_bytes

    name = display if display is not None else os.fspath(path)
    if data is None:
        source, problem = read_script(Path(path))
        if source is None:
            return FixResult(path=name, original=b"", fixed=b"",
                             report=FileReport(path=name, error=problem))
    else:
        source = SourceText(data, name)

    def failed(error: str) -> FixResult:  # the file stays as it was; the run goes on
        return FixResult(path=name, original=source.data, fixed=source.data,
                         report=FileReport(path=name, source=source, error=error))

    reports: list = []
    lint = engine_lint(settings, name, reports)
    try:
        with file_budget() as budget:  # one budget for the lint and every re-lint
            if options.add_suppressions:
                result = suppress_source(source, lint, path=name)
            else:
                result = fix_source(source, lint, unsafe=options.unsafe_fixes, path=name)
        if budget.expired:
            return failed(gave_up(budget))
        result.report = reports[0]
        if result.changed and options.writes:
            if data is None:  # stdin's fixed text is printed by run_fix_mode
                write_bytes(path, result.fixed)
            result.report = reports[-1]
    except OSError as exc:
        return failed(f"cannot write: {exc.strerror or exc}; left unchanged")
    except Exception as exc:  # noqa: BLE001 - one file must not stop the others
        return failed(unexpected_error(exc, "fixing"))
    return result


def run_fix_mode(targets: Sequence, settings_for: Callable, options: FixOptions, *,
                 quiet: bool = False) -> tuple[list, int | None]:
    """`check` with fix options. `targets` have `.path`, `.display` and `.data` (stdin bytes).

    Returns the FileReports check should render and, when check must not render them (`--diff`,
    fixed stdin), the exit status: `--diff` exits 1 when it would change something.
    """
    import click

    results = [process_file(t.path, settings_for(t.path), options, data=t.data,
                            display=t.display) for t in targets]
    reports = [r.report for r in results]
    stdin = [r for r, t in zip(results, targets) if t.data is not None]
    if options.diff:
        for r in results:
            if r.changed:
                click.echo(unified_diff(r.path, r.original, r.fixed), nl=False)
        if options.show_fixes or not quiet:
            click.echo(show_fixes(results, would=True) if options.show_fixes
                       else summary(results, options), err=True)
        return reports, int(any(r.changed for r in results))
    if stdin and options.writes:  # like ruff: the fixed script goes to stdout
        piped = stdin[0]
        click.echo(piped.fixed.decode("utf-8", "replace"), nl=False)
        if not quiet:
            click.echo(summary(results, options), err=True)
        threshold = settings_for(targets[0].path).fail_on.rank
        return reports, int(any(d.severity.rank >= threshold for d in piped.diagnostics))
    if options.show_fixes:
        click.echo(show_fixes(results, would=not options.writes))
    if options.writes and not quiet:
        click.echo(summary(results, options), err=True)
    return reports, None


# --- output ------------------------------------------------------------------------------------


def unified_diff(path: str, before: bytes, after: bytes) -> str:
    """`--diff` output for one file ("" when unchanged)."""
    if before == after:
        return ""
    import difflib  # only for --diff

    a = before.decode("utf-8", errors="replace").splitlines(keepends=True)
    b = after.decode("utf-8", errors="replace").splitlines(keepends=True)
    lines = []
    for line in difflib.unified_diff(a, b, fromfile=f"a/{path}", tofile=f"b/{path}"):
        lines.append(line)
        if not line.endswith("\n"):
            lines.append("\n\\ No newline at end of file\n")
    return "".join(lines)


def _rule_name(code: str) -> str:
    from verl_lint.rules.registry import get_rule

    rule = get_rule(code)
    return rule.name if rule is not None else ""


def show_fixes(results: Iterable[FixResult], *, would: bool = False) -> str:
    """`--show-fixes`: per file, how many findings each fix (or suppression) handled."""
    blocks = []
    total = 0
    for result in results:
        if not result.applied:
            continue
        counts = Counter((a.code, a.title) for a in result.applied)
        total += sum(counts.values())
        rows = [f"    {n} × {code} ({_rule_name(code) or 'fix'}): {title}"
                for (code, title), n in sorted(counts.items())]
        blocks.append(f"{result.path}:\n" + "\n".join(rows))
    verb = "Would fix" if would else "Fixed"
    head = f"{verb} {total} finding{'s' if total != 1 else ''}"
    return head + (":\n" + "\n".join(blocks) if blocks else ".")


def summary(results: Sequence[FixResult], options: FixOptions) -> str:
    """One line for the end of a `--fix`/`--add-suppressions` run (and dropped-fix notes)."""
    notes = []
    for r in results:
        for d in r.dropped:
            what = f"{d.code} fix" if d.code else "suppression"
            notes.append(f"{r.path}:{d.line}: {what} not applied: {d.reason or NOT_PARSED} "
                         f"({d.title})")
        if not r.converged:
            notes.append(f"{r.path}: fixes did not settle after {MAX_ROUNDS} rounds; "
                         "review the file")
    changed = sum(1 for r in results if r.changed)
    applied = sum(len(r.applied) for r in results)
    if options.add_suppressions:
        verb = "Would add" if options.diff else "Added"
        line = f"{verb} suppressions for {applied} finding{'s' if applied != 1 else ''} in " \
               f"{changed} file{'s' if changed != 1 else ''}."
    else:
        verb = "Would fix" if options.diff else "Fixed"
        line = f"{verb} {applied} finding{'s' if applied != 1 else ''} in {changed} " \
               f"file{'s' if changed != 1 else ''}."
    if not options.unsafe_fixes and not options.add_suppressions:
        unsafe = sum(1 for r in results for d in r.diagnostics
                     if d.fix is not None and d.fix.applicability == "unsafe")
        if unsafe:
            line += f" {unsafe} more fix{'es' if unsafe != 1 else ''} available with " \
                    "--unsafe-fixes."
    return "\n".join([*notes, line])

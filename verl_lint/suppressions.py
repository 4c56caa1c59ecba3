"""Inline suppressions: `# verl-lint: disable=VL201,unknown-override-key`.

Where a directive applies (DESIGN principle 5):
- in the file's header comment block (only comment lines above it, e.g. right after the
  shebang; a blank line ends the header) → the whole file;
- on its own line elsewhere → the next command, assignment or array element
  (`ScriptModel.next_statement_span`), whole, however many lines it spans; before a compound
  command (`case`, `if`, a loop, a function, a pipeline) → all of it, as in shellcheck;
- trailing after code on the same line (bash allows comments inside arrays) → findings starting
  on that line.
`disable-next-line=` is an alias of `disable=`; `disable=all` suppresses every rule. Codes are
rule codes or names. A directive code that suppressed nothing is reported as VL002 (only for
rules enabled for the file: a disabled rule cannot have been used).
"""

from __future__ import annotations

import heapq
import re
from dataclasses import field
from typing import Iterable, Literal, Protocol

from verl_lint.diagnostics import Diagnostic, Edit, Fix
from verl_lint.records import shared_dataclass
from verl_lint.source import SourceText, Span

UNUSED_CODE = "VL002"

_DIRECTIVE = re.compile(
    r"#\s*verl-lint:\s*(?:disable-next-line|disable)\s*=\s*"
    r"(?P<codes>[A-Za-z0-9_\-]+(?:\s*,\s*[A-Za-z0-9_\-]+)*)"
)
_TOKEN = re.compile(r"[A-Za-z0-9_\-]+")


class _Model(Protocol):
    comments: tuple  # of objects with `.span` and `.text`

    def next_statement_span(self, offset: int) -> Span | None: ...


@shared_dataclass()
class DirectiveCode:
    """One code of a directive (`VL101` in `disable=VL101,VL2`), and whether it silenced anything."""

    token: str  # as written
    code: str | None  # the rule code; "ALL" for `all`; None when it names no rule
    span: Span  # the token in the script
    used: bool = False


@shared_dataclass()
class Directive:
    """One `# verl-lint: disable…` comment: where it applies and which codes it names."""

    comment: Span
    scope: Literal["file", "next", "line"]
    codes: list[DirectiveCode]
    target: Span | None = None  # scope "next": the statement it applies to
    line_span: Span | None = None  # scope "next"/"file": the whole comment line (for removal)

    def covers(self, diag: Diagnostic) -> bool:
        if self.scope == "file":
            return True
        if self.scope == "line":
            return diag.span.line == self.comment.line
        t = self.target
        return t is not None and t.start <= diag.span.start and (
            diag.span.start < t.end or diag.span.start == t.start)


@shared_dataclass()
class Suppressions:
    """The directives of one script."""

    directives: list[Directive] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.directives)

    def filter(self, diagnostics: Iterable[Diagnostic]) -> list[Diagnostic]:
        """Drop suppressed diagnostics, marking the directive codes that were used.

        Linear in findings plus directives (a file may hold tens of thousands of both): file-wide
        directives apply to all, trailing ones are looked up by line, and next-statement ones
        are swept in order of their targets' starts, keeping those whose target is still open."""
        file_wide = [d for d in self.directives if d.scope == "file"]
        by_line: dict[int, list[Directive]] = {}
        for d in self.directives:
            if d.scope == "line":
                by_line.setdefault(d.comment.line, []).append(d)
        targeted = sorted((d for d in self.directives if d.scope == "next" and d.target),
                          key=lambda d: d.target.start)
        diagnostics = list(diagnostics)
        order = sorted(range(len(diagnostics)), key=lambda i: diagnostics[i].span.start)
        suppressed = [False] * len(diagnostics)
        open_: list[tuple[int, int, Directive]] = []  # heap of (target end, index, directive)
        pending = 0
        for i in order:
            diag = diagnostics[i]
            start = diag.span.start
            while pending < len(targeted) and targeted[pending].target.start <= start:
                d = targeted[pending]
                heapq.heappush(open_, (d.target.end, pending, d))
                pending += 1
            # a target still covers `start` when it ends after it (or is empty and starts there)
            while open_ and open_[0][0] <= start and open_[0][2].target.start != start:
                heapq.heappop(open_)
            covering = [d for _, _, d in open_ if d.covers(diag)] if open_ else []
            covering += file_wide
            covering += by_line.get(diag.span.line, ())
            for d in covering:
                for c in d.codes:
                    if c.code == diag.code or c.code == "ALL":
                        c.used = True
                        suppressed[i] = True
        return [d for d, hit in zip(diagnostics, suppressed) if not hit]

    def unused(self, source: SourceText, enabled: frozenset[str]) -> list[Diagnostic]:
        """VL002 findings for directive codes that suppressed nothing."""
        from verl_lint.rules.registry import get_rule

        out: list[Diagnostic] = []
        reporter = get_rule(UNUSED_CODE)()
        for d in self.directives:
            for c in d.codes:
                if c.used or c.code == UNUSED_CODE:
                    continue
                if c.code is None:
                    message = f"`{c.token}` in this suppression is not a verl-lint rule"
                elif c.code == "ALL":
                    message = "unused suppression: `disable=all` suppressed nothing here"
                elif c.code not in enabled:
                    continue
                else:
                    rule = get_rule(c.code)
                    name = f" ({rule.name})" if rule is not None and c.token != rule.name else ""
                    where = {"file": "in this file", "next": "on the next statement",
                             "line": "on this line"}[d.scope]
                    message = f"unused suppression: `{c.token}`{name} reports nothing {where}"
                out.append(reporter.diagnostic(c.span, message, fix=_removal_fix(source, d, c)))
        return out

    def file_wide_codes(self) -> set[str]:
        return {c.code for d in self.directives if d.scope == "file" for c in d.codes
                if c.code is not None}


def parse_suppressions(source: SourceText, model: _Model) -> Suppressions:
    """Find every directive in the script's comments."""
    from verl_lint.rules.registry import get_rule

    directives: list[Directive] = []
    header = header_lines(source)
    for comment in model.comments:
        text = comment.text
        if "verl-lint" not in text:
            continue
        m = _DIRECTIVE.match(text)
        if m is None:
            continue
        start = comment.span.start
        codes: list[DirectiveCode] = []
        for tok in _TOKEN.finditer(m.group("codes")):
            token = tok.group(0)
            if token.lower() == "all":
                code: str | None = "ALL"
            else:
                rule = get_rule(token)
                code = rule.code if rule is not None else None
            # byte offsets: the comment text is the script's bytes from `start`
            b0 = start + len(text[: m.start("codes") + tok.start()].encode())
            codes.append(DirectiveCode(token, code, source.span(b0, b0 + len(token.encode()))))
        line0 = comment.span.line - 1
        line_start = source.line_starts[line0]
        own_line = not source.data[line_start:start].strip()
        next_line = (source.line_starts[line0 + 1] if line0 + 1 < len(source.line_starts)
                     else len(source.data))
        line_span = source.span(line_start, next_line)
        if not own_line:
            directives.append(Directive(comment.span, "line", codes))
        elif line0 < header:
            directives.append(Directive(comment.span, "file", codes, line_span=line_span))
        else:
            target = model.next_statement_span(comment.span.end)
            directives.append(Directive(comment.span, "next", codes, target=target,
                                        line_span=line_span))
    return Suppressions(directives)


def header_lines(source: SourceText) -> int:
    """How many lines open the script with only comments (the shebang, a licence…): a directive
    on one of them is file-wide. Tools inserting a next-statement directive there must add a
    blank line before it."""
    for i in range(len(source.line_starts)):
        if not source.line_bytes(i).lstrip().startswith(b"#"):
            return i
    return len(source.line_starts)


def _removal_fix(source: SourceText, d: Directive, c: DirectiveCode) -> Fix:
    """Remove an unused code from its directive, or the whole directive if nothing is left."""
    remaining = [x for x in d.codes if x is not c and (x.used or x.code == UNUSED_CODE)]
    if not remaining:
        if d.line_span is not None:  # a directive on its own line
            edit = Edit(start=d.line_span.start, end=d.line_span.end, replacement="")
        else:
            # trailing directive: drop it with the blanks before it
            line_start = source.line_starts[d.comment.line - 1]
            before = source.data[line_start:d.comment.start]
            start = line_start + len(before.rstrip())
            edit = Edit(start=start, end=d.comment.end, replacement="")
        return Fix(title="Remove unused suppression", edits=(edit,))
    # drop the token and one adjacent comma
    data = source.data
    start, end = c.span.start, c.span.end
    j = end
    while j < len(data) and data[j:j + 1] in b" \t":
        j += 1
    if j < len(data) and data[j:j + 1] == b",":
        end = j + 1
        while end < len(data) and data[end:end + 1] in b" \t":
            end += 1
    else:
        i = start
        while i > 0 and data[i - 1:i] in b" \t":
            i -= 1
        if i > 0 and data[i - 1:i] == b",":
            start = i - 1
    return Fix(title=f"Remove `{c.token}` from the suppression",
               edits=(Edit(start=start, end=end, replacement=""),))

"""VL104 broken-continuation.

Works on the raw lines, with the model telling which bytes are code: a `\\` inside a quoted string,
a heredoc body or a comment is not a line continuation, and a chain only matters when it belongs
to a command (inside `( … )` arrays newlines and comments are legal).
"""

from __future__ import annotations

import re
from bisect import bisect_right
from typing import Iterable, Iterator

from verl_lint.diagnostics import Diagnostic, Edit, Fix, Label, Severity
from verl_lint.evaluate.launch import is_verl_module
from verl_lint.rules.base import Rule, ScriptContext
from verl_lint.rules.registry import register
from verl_lint.rules.shell._shell import all_words, clean_until, looks_like_override
from verl_lint.shell.model import Command, Pipeline, ScriptModel
from verl_lint.source import SourceText

_CONTINUED = re.compile(rb"(?<!\\)(?:\\\\)*\\$")  # an odd number of trailing backslashes
_TRAILING = re.compile(rb"(?<!\\)(?:\\\\)*\\([ \t]+)$")
_EXPANSION_ARG = re.compile(r'"?\$(?:@|\*|\{\w+\[[@*]\]\})')


def _looks_continued(text: str) -> bool:
    """A line that reads as more arguments of the command above it."""
    t = text.strip()
    return bool(t) and (looks_like_override(t.split()[0]) or bool(_EXPANSION_ARG.match(t))
                        or re.match(r"--?[A-Za-z]", t) is not None)


class _Code:
    """Which byte ranges are not code (quoted text, heredocs, comments, array literals)."""

    def __init__(self, model: ScriptModel, source: SourceText) -> None:
        ranges = [(c.span.start, c.span.end) for c in model.comments]
        ranges += [(h.span.start, h.span.end) for h in model.heredocs]
        for w in all_words(model):
            # from the first quoted piece to the last: a `\`-newline inside "…" leaves a gap
            quoted = [p.span for p in w.pieces if p.quoted != "none"]
            if quoted:
                ranges.append((quoted[0].start, quoted[-1].end))
        self.text = _Intervals(ranges)
        self.arrays = _Intervals([(a.array.span.start, a.array.span.end) for a in model.arrays])
        self.command_lines: set[int] = set()
        for c in model.commands:
            self.command_lines.update(range(source.line_of(c.span.start),
                                            source.line_of(max(c.span.end - 1, c.span.start)) + 1))
        self.source = source

    def is_code(self, offset: int) -> bool:
        return not self.text.holds(offset)

    def in_command(self, start: int) -> bool:
        """The line starting at `start` belongs to a command, not to an array literal."""
        return not self.arrays.holds(start) and self.source.line_of(start) in self.command_lines


class _LazyCode:
    """`_Code`, built on first use: most scripts have no line where a cut is possible."""

    def __init__(self, model: ScriptModel, source: SourceText) -> None:
        self._args = (model, source)
        self._code: _Code | None = None

    def _get(self) -> _Code:
        if self._code is None:
            self._code = _Code(*self._args)
        return self._code

    def is_code(self, offset: int) -> bool:
        return self._get().is_code(offset)

    def in_command(self, start: int) -> bool:
        return self._get().in_command(start)


class _Intervals:
    """Merged half-open byte ranges with a logarithmic membership test."""

    def __init__(self, ranges: list[tuple[int, int]]) -> None:
        merged: list[list[int]] = []
        for a, b in sorted(ranges):
            if merged and a <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], b)
            else:
                merged.append([a, b])
        self.starts = [a for a, _ in merged]
        self.ends = [b for _, b in merged]

    def holds(self, offset: int) -> bool:
        i = bisect_right(self.starts, offset) - 1
        return i >= 0 and offset < self.ends[i]


class _Lines:
    """`lines[i]` = (i, start offset, content without the newline), built on demand: the rule
    only looks at the few lines around a `\\` line ending."""

    def __init__(self, source: SourceText) -> None:
        self.source = source

    def __len__(self) -> int:
        return len(self.source.line_starts)

    def __getitem__(self, i: int) -> tuple[int, int, bytes]:
        return i, self.source.line_starts[i], self.source.line_bytes(i).rstrip(b"\r\n")


# the only lines a cut can start from: `\` then spaces or a CR at the end of the line, or `\`
# then a blank or comment line; a chain that goes on is never looked at
_CUT_CANDIDATE = re.compile(rb"\\(?:[ \t]+\r?|\r)$|\\\r?\n[ \t]*(?:#|\r?$)", re.MULTILINE)


@register
class BrokenContinuation(Rule):
    """A `\\`-continued command is cut, and the rest of its arguments run as other commands.

    ## What it does
    Reports a line-continuation chain (`python3 -m verl.trainer.main_ppo \\` …) that bash ends
    early:
    - a comment line inside the chain (`# actor_rollout_ref.actor.use_kl_loss=True \\`): the
      comment ends the command, its `\\` is part of the comment;
    - a blank line inside the chain;
    - a `\\` followed by trailing spaces: it escapes the space instead of the newline;
    - a `\\` followed by a carriage return (a file saved with Windows CRLF line endings): bash
      escapes the `\\r` instead of the newline (reported once per file, on the first such line);
    - an override-looking word (`a.b.c=…`, `+a.b=…`) — or a line that only passes overrides on,
      `"${ARR[@]}"`, `"$@"` — that starts its own command because the line before (the end of
      a `\\` chain, of a command with overrides, or a bare `python3 -m verl…`) lacks its `\\`;
    - overrides after a pipe (`… trainer.device=npu 2>&1 | tee log \\⏎ +a.b=1`): they are
      arguments of `tee`, not of the launch.
    A chain that ends and is followed by an unrelated command is not reported: only a cut that
    leaves override-looking lines (`a.b=…`, `"${ARR[@]}"`, `"$@"`, `--flag`) behind is.

    ## Why is this bad?
    The launch runs with only the overrides above the cut, so the job starts with defaults for
    everything below it (often `trainer.n_gpus_per_node`, `trainer.nnodes`, the rollout
    settings), and then bash runs `actor_rollout_ref.rollout.n=4` as a command: `command not
    found`, after the training job already started or failed. Under `set -e` the script stops
    there.

    ## Example
    ```bash
    #!/usr/bin/env bash
    set -xeuo pipefail
    python3 -m verl.trainer.main_ppo \\
        algorithm.adv_estimator=grpo \\
        # actor_rollout_ref.actor.use_kl_loss=True \\
        actor_rollout_ref.rollout.name=vllm \\
        trainer.n_gpus_per_node=8
    ```

    ## Use instead
    ```bash
    #!/usr/bin/env bash
    set -xeuo pipefail
    # actor_rollout_ref.actor.use_kl_loss=True
    python3 -m verl.trainer.main_ppo \\
        algorithm.adv_estimator=grpo \\
        actor_rollout_ref.rollout.name=vllm \\
        trainer.n_gpus_per_node=8
    ```
    Or keep the overrides in an array, where comment lines are allowed.

    ## Fix safety
    Removing the blanks after a trailing `\\` is safe: bash then joins the lines as the
    author wrote them. Removing a blank line inside the command and adding a missing `\\` are
    unsafe: the lines after the break run today as commands of their own, and joining them
    changes what runs.

    ## References
    - [Bash reference manual: Escape Character](https://www.gnu.org/software/bash/manual/bash.html#Escape-Character)
    - [Bash reference manual: Comments](https://www.gnu.org/software/bash/manual/bash.html#Comments)
    """

    code = "VL104"
    name = "broken-continuation"
    severity = Severity.ERROR
    summary = "a `\\`-continued command is cut by a comment, a blank line or a trailing space"
    scope = "script"
    fixable = True

    def check(self, ctx: ScriptContext) -> Iterable[Diagnostic]:
        source = ctx.source
        code = _LazyCode(ctx.model, source)
        lines = _Lines(source)
        cutoff = clean_until(ctx.model)
        crlf_seen = False
        candidates = sorted({source.line_of(m.start()) for m in _CUT_CANDIDATE.finditer(
            source.data, 0, min(cutoff, len(source.data)))})
        for i, start, text in map(lines.__getitem__, candidates):
            if not crlf_seen and source.data[start + len(text):start + len(text) + 1] == b"\r" \
                    and _CONTINUED.search(text):
                slash = start + len(text) - 1
                if code.is_code(slash) and code.in_command(start):
                    crlf_seen = True
                    yield self._crlf(ctx, slash)
            trailing = _TRAILING.search(text)
            if trailing is not None:
                yield from self._trailing(ctx, code, lines, i, start, trailing)
                continue
            if not _CONTINUED.search(text) or i + 1 >= len(lines):
                continue
            slash = start + len(text) - 1
            if not code.is_code(slash) or not code.in_command(start):
                continue
            yield from self._cut(ctx, lines, i, slash)
        yield from self._missing(ctx, code, cutoff)
        yield from self._after_pipe(ctx, cutoff)

    def _crlf(self, ctx, slash: int) -> Diagnostic:
        # no fix: converting the file also changes every other line's value (`X=1\r`)
        return self.diagnostic(
            ctx.source.span(slash, slash + 2),
            "CRLF line endings: bash does not continue this line; convert the file to LF",
            help="bash reads `\\` + carriage return as an escaped `\\r`: the command ends on "
                 "this line and gets a `$'\\r'` argument; run `dos2unix` or save with LF line "
                 "endings",
        )

    def _trailing(self, ctx, code: _LazyCode, lines, i: int, start: int, m) -> Iterator[Diagnostic]:
        slash = start + m.start(1) - 1
        if not code.is_code(slash) or not code.in_command(start):
            return
        after = self._next_code_line(lines, i + 1)
        if after is None or not _looks_continued(lines[after][2].decode("utf-8", "replace")):
            return
        spaces = m.end(1) - m.start(1)
        yield self.diagnostic(
            ctx.source.span(slash, start + m.end(1)),
            f"`\\` is followed by {spaces} trailing space{'s' if spaces > 1 else ''}: it escapes "
            f"the space instead of the newline, so the command ends here and line {after + 1} "
            "runs as a command of its own",
            fix=Fix(title="Remove the trailing whitespace after `\\`",
                    edits=(Edit(start=start + m.start(1), end=start + m.end(1), replacement=""),)),
        )

    def _cut(self, ctx, lines, i: int, slash: int) -> Iterator[Diagnostic]:
        _, nxt_start, nxt = lines[i + 1]
        stripped = nxt.strip()
        source = ctx.source
        if not stripped:
            after = self._next_code_line(lines, i + 1)
            if after is None or not _looks_continued(lines[after][2].decode("utf-8", "replace")):
                return
            blank = source.span(nxt_start, nxt_start + len(nxt))
            # the whole run of blank lines goes in one fix: one `--fix` run mends the chain
            last = i + 1
            while last + 1 < len(lines) and not lines[last + 1][2].strip():
                last += 1
            _, last_start, last_text = lines[last]
            yield self.diagnostic(
                blank,
                f"a blank line inside the `\\` chain of line {i + 1} ends the command: line "
                f"{after + 1} runs as a command of its own",
                labels=[Label(span=source.span(slash, slash + 1), message="continued here")],
                fix=Fix(title="Remove the blank line" + ("s" if last > i + 1 else ""),
                        applicability="unsafe",
                        edits=(Edit(start=lines[i][1] + len(lines[i][2]),
                                    end=last_start + len(last_text), replacement=""),)),
            )
        elif stripped.startswith(b"#"):
            after = self._next_code_line(lines, i + 1)
            if after is None:
                return
            if not (_CONTINUED.search(stripped) or _looks_continued(
                    lines[after][2].decode("utf-8", "replace"))):
                return
            indent = len(nxt) - len(nxt.lstrip())
            yield self.diagnostic(
                source.span(nxt_start + indent, nxt_start + len(nxt)),
                f"this comment inside the `\\` chain of line {i + 1} ends the command: line "
                f"{after + 1} runs as a command of its own",
                labels=[Label(span=source.span(slash, slash + 1), message="continued here")],
                help="move the comment above the command, or keep the overrides in an array "
                     "(comments are allowed inside `( … )`)",
            )

    def _missing(self, ctx, code: _LazyCode, cutoff: int) -> Iterator[Diagnostic]:
        """Override-looking words that start a command after a line without `\\`."""
        source = ctx.source
        for c in ctx.model.commands:
            if not c.words or c.prefix or c.span.end > cutoff:
                continue
            first = c.words[0]
            if not (looks_like_override(first.literal if first.literal is not None else first.text)
                    or _PASSED_ON.fullmatch(first.text)):
                continue
            line0 = source.line_of(first.span.start)
            if source.line_starts[line0] + len(source.line_bytes(line0)) - len(
                    source.line_bytes(line0).lstrip()) != first.span.start or line0 == 0:
                continue  # not at the start of its line (`a; x.y=1`): not a lost continuation
            prev = source.line_bytes(line0 - 1).rstrip(b"\r\n")
            if not prev.strip() or prev.strip().startswith(b"#") or prev.rstrip().endswith(b"\\"):
                continue  # blank, comment and trailing-space cuts are reported where they are
            prev_start = source.line_starts[line0 - 1]
            # `_ends_a_launch` first: it is false for most (`"${LAUNCH[@]}"` after an array's
            # `)`), and `in_command` builds the map of the script's quoted text
            if not _ends_a_launch(ctx.model, source, line0 - 1) or not code.in_command(prev_start):
                continue
            end = prev_start + len(prev)
            yield self.diagnostic(
                first.span,
                f"`{_short(first.text)}` starts a command of its own: line {line0} does not end "
                "with `\\`, so bash ends the launch there and runs this line as a command",
                fix=Fix(title="Add the missing `\\` at the end of the line above",
                        applicability="unsafe",
                        edits=(Edit(start=end, end=end, replacement=" \\"),)),
            )

    def _after_pipe(self, ctx, cutoff: int) -> Iterator[Diagnostic]:
        """`python3 -m verl… a=1 | tee log \\⏎ b=2`: the lines after the pipe continue `tee`."""
        for s in ctx.model.statements:
            if not isinstance(s, Pipeline) or len(s.parts) < 2 or s.span.end > cutoff:
                continue
            head = s.parts[0]
            if not isinstance(head, Command) or not any(
                    w.literal is not None and is_verl_module(w.literal) for w in head.words):
                continue
            for part in s.parts[1:]:
                lost = next((w for w in getattr(part, "words", ())[1:]
                             if _passed_override(w.literal if w.literal is not None else w.text)),
                            None)
                if lost is not None:
                    yield self.diagnostic(
                        lost.span,
                        f"`{_short(lost.text)}` goes to `{part.words[0].text}`, not to the launch: "
                        "the launch ends at the `|`; move the overrides before the pipe")
                    break

    @staticmethod
    def _next_code_line(lines, i: int) -> int | None:
        for j in range(i, len(lines)):
            t = lines[j][2].strip()
            if t and not t.startswith(b"#"):
                return j
        return None


def _ends_a_launch(model: ScriptModel, source: SourceText, line: int) -> bool:
    """A command ending on `line` (0-based) is a `\\` chain (it starts on an earlier line) or
    carries overrides: the next line reads as its lost continuation. After `echo hello` it
    does not."""
    for c in model.commands:
        if c.words and source.line_of(max(c.span.end - 1, c.span.start)) == line and (
                source.line_of(c.span.start) < line or any(
                    looks_like_override(w.literal if w.literal is not None else w.text)
                    or (w.literal is not None and is_verl_module(w.literal))
                    for w in c.words)):
            return True
    return False


def _passed_override(text: str) -> bool:
    """An override for sure (`k.x=1`, `+k.x=1`), not a file name such as `log.txt`."""
    return looks_like_override(text) and ("=" in text or text[:1] in "+~")


# a line that only passes overrides on: `"${ARGS[@]}"`, `"$@"`
_PASSED_ON = re.compile(r'"?(\$@|\$\{@\}|\$\{\w+\[@\]\})"?')


def _short(text: str, n: int = 60) -> str:
    return text if len(text) <= n else text[:n - 1] + "…"

"""VL001 shell-parse-error."""

from __future__ import annotations

from typing import Iterable

from verl_lint.diagnostics import Diagnostic, Label, Severity
from verl_lint.rules.base import Rule, ScriptContext
from verl_lint.rules.registry import register
from verl_lint.source import Span

# what each opener needs bash to see before it can close the construct
_CLOSER = {"if": "fi", "case": "esac", "for": "done", "while": "done", "until": "done",
           "select": "done", "{": "}", "(": ")", "[[": "]]", "((": "))"}
_BLOCKS = {"if_statement": "if", "case_statement": "case", "for_statement": "for",
           "c_style_for_statement": "for", "while_statement": "while",
           "compound_statement": "{", "subshell": "(", "do_group": None}


def _unclosed(ctx: ScriptContext) -> list[tuple[int, int, str]]:
    """(start, end, opener) of every construct tree-sitter left open: the parent of a missing
    `fi`/`esac`/`done`/`}`, or an opener token in an error region without its closer after it.
    Read from the syntax tree the parse kept (only files with errors have one)."""
    tree = ctx.model.syntax
    if tree is None:
        return []
    root = tree.root_node
    out: list[tuple[int, int, str]] = []
    stack = [root]
    while stack:
        n = stack.pop()
        if n.is_missing and n.parent is not None:
            block = n.parent
            if block.type == "do_group" and block.parent is not None:
                block = block.parent  # `for … do` without `done`: the loop is what is open
            first = block.children[0] if block.children else block
            if first.type in _CLOSER and _CLOSER[first.type] == n.type:
                out.append((first.start_byte, first.end_byte, first.type))
            continue
        if n.is_error:
            kids = [c.type for c in n.children]
            for i, c in enumerate(n.children):
                closer = _CLOSER.get(c.type)
                if closer and c.child_count == 0 and closer not in kids[i + 1:]:
                    out.append((c.start_byte, c.end_byte, c.type))
        stack.extend(c for c in reversed(n.children) if c.has_error or c.is_missing)
    return out


def _is_quote(message: str) -> bool:
    """Quote errors already point at the quote that opens the unterminated string."""
    return "missing `\"`" in message or "missing `'`" in message


@register
class ShellParseError(Rule):
    """Bash cannot parse part of the script.

    ## What it does
    Reports the places where bash itself would reject the script: an unterminated quote, an
    `if` without `fi`, a `case` without `esac`, a stray `)`. It points at the construct bash
    cannot close — the `if` without `fi`, the `case` without `esac`, the quote that opens the
    unterminated string — with the place bash gives up as a second label (bash itself reports
    the end of the file, or the first word it cannot read as a `case` pattern). The rest of the
    file is still linted, but what follows the error may be read differently from what you
    meant. It reads the shell only: every entry point and release.

    ## Why is this bad?
    `bash` refuses to run a script with a syntax error, or runs it up to the error and stops —
    usually after the environment has been set up and the job queued, so the launch never
    happens.

    ## Example
    ```bash
    #!/usr/bin/env bash
    set -xeuo pipefail
    if [ "${DEVICE:-gpu}" = npu ]; then
        export ASCEND_RT_VISIBLE_DEVICES=0,1,2,3,4,5,6,7

    python3 -m verl.trainer.main_ppo trainer.n_gpus_per_node=8
    ```

    ## Use instead
    ```bash
    #!/usr/bin/env bash
    set -xeuo pipefail
    if [ "${DEVICE:-gpu}" = npu ]; then
        export ASCEND_RT_VISIBLE_DEVICES=0,1,2,3,4,5,6,7
    fi

    python3 -m verl.trainer.main_ppo trainer.n_gpus_per_node=8
    ```

    ## References
    - `bash -n script.sh` checks the syntax without running anything
    - [Bash reference manual: Shell Syntax](https://www.gnu.org/software/bash/manual/bash.html#Shell-Syntax)
    """

    code = "VL001"
    name = "shell-parse-error"
    severity = Severity.ERROR
    summary = "bash cannot parse the script here"
    scope = "script"

    def check(self, ctx: ScriptContext) -> Iterable[Diagnostic]:
        errors = ctx.model.errors
        open_ = _unclosed(ctx) if any(not _is_quote(e.message) for e in errors) else []
        for error in errors:
            opener = None if _is_quote(error.message) else self._opener(open_, error.span)
            if opener is None:
                yield self.diagnostic(error.span, f"bash cannot parse this: {error.message}")
                continue
            start, end, word = opener
            yield self.diagnostic(
                ctx.source.span(start, end),
                f"bash cannot parse this: this `{word}` has no `{_CLOSER[word]}` "
                # the line bash names: at the end of the file that is one past the last line
                f"({error.message} at line {ctx.source.line_of(error.span.start) + 1})",
                labels=[Label(span=error.span, message="bash stops here")])

    @staticmethod
    def _opener(open_: list[tuple[int, int, str]], at: Span) -> tuple[int, int, str] | None:
        """The innermost construct still open where bash stops: the last opener before it."""
        before = [o for o in open_ if o[0] <= at.start]
        return before[-1] if before else None

"""VL106 unquoted-override-expansion."""

from __future__ import annotations

from itertools import repeat
from typing import Iterable, Iterator

from verl_lint.diagnostics import Diagnostic, Edit, Fix, Severity
from verl_lint.evaluate.model import Launch
from verl_lint.rules.base import Rule, ScenarioContext
from verl_lint.rules.registry import register
from verl_lint.rules.shell._shell import clean_until
from verl_lint.shell import braces
from verl_lint.shell.model import Piece, ScriptModel, Word


def _launch_words(model: ScriptModel, launches: list[Launch]) -> Iterator[tuple[Word, Launch]]:
    """The words of each launch command, then the elements of the arrays feeding a launch."""
    commands = {c.span.start: c for c in model.commands}
    fed: dict[str, Launch] = {}
    for launch in launches:
        c = commands.get(launch.span.start)
        if c is not None:
            yield from zip(c.words, repeat(launch))
        for ov in launch.overrides:
            if ov.array:
                fed.setdefault(ov.array, launch)
    for a in model.arrays:
        if a.name in fed:
            yield from zip(a.array.elements, repeat(fed[a.name]))


def _brace_words(word: Word) -> list[str] | None:
    """The words bash brace-expands an unquoted plain word into, when more than one."""
    if len(word.pieces) != 1 or word.pieces[0].kind != "literal" or \
            word.pieces[0].quoted != "none":
        return None
    words = braces.expand(word.pieces[0].text)
    return words if words is not None and len(words) > 1 else None


def _split_words(launch: Launch) -> tuple[set[str], list]:
    """Where bash splits a known value into several words in this launch: the evaluator reads
    the unquoted expansion as bash does, so one span then holds consecutive overrides
    (`trainer.logger=['console',` and `'wandb']`). (array names, spans): an element of `ARR`
    carries the element's span, `${ARR[*]}` the expansion's."""
    arrays: set[str] = set()
    spans = []
    for a, b in zip(launch.overrides, launch.overrides[1:]):
        if a.span == b.span and a.text != b.text and isinstance(a.text, str):
            if a.array:
                arrays.add(a.array)
            spans.append(a.span)
    return arrays, spans


def _splitting(word: Word) -> Iterator[Piece]:
    for p in word.pieces:
        if p.kind == "variable" and p.quoted == "none" and p.operator in (None, "substring") \
                and (p.name in ("@", "*") or p.index in ("@", "*")):
            yield p


@register
class UnquotedOverrideExpansion(Rule):
    """`${ARR[@]}`, `$@` or `$*` expanded without double quotes into a launch.

    ## What it does
    Reports an unquoted `${ARR[@]}`, `${ARR[*]}`, `$@` or `$*` — or a slice of one, `${@:3}` —
    in a launch command, or in an array that feeds one. The fix quotes it (`"${ARR[@]}"`,
    `"$@"`, `"${@:3}"`); `*` forms become `@`, since `"$*"` would glue every override into one
    word. It also reports an unquoted override bash brace-expands into several words
    (`trainer.logger={console,wandb}`, a Hydra dict with a comma); that fix quotes the word and
    is unsafe: a Hydra list is `[a,b]`.

    ## Why is this bad?
    Unquoted, bash splits every element again on spaces and expands glob characters:
    `trainer.logger=['console', 'wandb']` reaches Hydra as two broken overrides, a value with
    `*` or `?` may be replaced by file names, and an empty element disappears. Hydra then
    rejects the override or, worse, parses a shorter value.

    Severity: `info` by default, because the run changes only when a value holds a space or a
    glob character — with `$@` that depends on what the caller passes. It is a `warning` where
    the script's own known values are split: an array element with a space
    (`trainer.logger="['console', 'wandb']"`) or a brace word. It reads the shell only, so it
    applies to every entry point and verl release.

    ## Example
    ```bash
    #!/usr/bin/env bash
    set -xeuo pipefail
    TRAINER=(
        trainer.logger="['console', 'wandb']"
        trainer.n_gpus_per_node=8
    )
    python3 -m verl.trainer.main_ppo ${TRAINER[@]} $@
    ```

    ## Use instead
    ```bash
    #!/usr/bin/env bash
    set -xeuo pipefail
    TRAINER=(
        trainer.logger="['console', 'wandb']"
        trainer.n_gpus_per_node=8
    )
    python3 -m verl.trainer.main_ppo "${TRAINER[@]}" "$@"
    ```

    ## Fix safety
    Quoting `${ARR[@]}` or `$@` is safe: each element reaches the launch as the one word it
    is. Quoting a brace-expanded word is unsafe: the launch gets one override instead of
    several, and a Hydra list is written `[a,b]`.

    ## References
    - [Bash reference manual: Special Parameters (`$@`, `$*`)](https://www.gnu.org/software/bash/manual/bash.html#Special-Parameters)
    - [ShellCheck SC2068: double quote array expansions](https://www.shellcheck.net/wiki/SC2068)
    """

    code = "VL106"
    name = "unquoted-override-expansion"
    severity = Severity.INFO
    summary = "an array, `$@` or a `{a,b}` word is unquoted in a launch, so bash splits it"
    scope = "scenario"
    fixable = True

    def check(self, ctx: ScenarioContext) -> Iterable[Diagnostic]:
        seen: set[int] = set()
        cutoff = clean_until(ctx.model)
        split: dict[int, tuple[set[str], list]] = {}  # per launch, when a finding asks
        for word, launch in _launch_words(ctx.model, ctx.run.launches):
            if word.span.end > cutoff:
                continue
            if "{" in word.text and word.span.start not in seen:
                words = _brace_words(word)
                if words is not None:
                    seen.add(word.span.start)
                    yield self._brace_finding(word, words, launch)
            if "@" not in word.text and "*" not in word.text:
                continue
            for p in _splitting(word):
                if p.span.start not in seen:
                    seen.add(p.span.start)
                    arrays, spans = split.get(id(launch)) or split.setdefault(
                        id(launch), _split_words(launch))
                    known = p.name not in ("@", "*") and (p.name in arrays or any(
                        p.span.start <= sp.start and sp.end <= p.span.end for sp in spans))
                    yield self._finding(p, launch, known)

    def _brace_finding(self, word: Word, words: list[str], launch: Launch) -> Diagnostic:
        shown = ", ".join(f"`{w}`" for w in words[:3]) + (", …" if len(words) > 3 else "")
        quoted = f"'{word.text}'"
        return self.diagnostic(
            word.span,
            f"`{word.text}` is unquoted: bash brace-expands it into {len(words)} words ({shown}) "
            f"before the launch at line {launch.span.line} gets them; write {quoted}",
            help="a Hydra list is written [a,b]; quoted, the value reaches Hydra in one word",
            severity=Severity.WARNING,  # the script's own word becomes several
            fix=Fix(title=f"Quote it: {quoted}", applicability="unsafe",
                    edits=(Edit(start=word.span.start, end=word.span.end, replacement=quoted),)),
        )

    def _finding(self, p: Piece, launch: Launch, known: bool) -> Diagnostic:
        if p.operator == "substring":  # `${@:3}`, `${ARR[@]:1:2}`: keep the slice
            quoted = '"' + p.text.replace("${*", "${@").replace("[*]", "[@]") + '"'
        else:
            quoted = '"$@"' if p.name in ("@", "*") else f'"${{{p.name}[@]}}"'
        what = "the arguments" if p.name in ("@", "*") else f"the elements of `{p.name}`"
        also = f" (an element of `{p.name}` holds a space: it reaches Hydra as several words)" \
            if known else ""
        return self.diagnostic(
            p.span,
            f"`{p.text}` is unquoted: bash splits {what} on spaces and expands globs before the "
            f"launch at line {launch.span.line} gets them{also}; write {quoted}",
            severity=Severity.WARNING if known else Severity.INFO,
            fix=Fix(title=f"Quote it: {quoted}",
                    edits=(Edit(start=p.span.start, end=p.span.end, replacement=quoted),)),
        )

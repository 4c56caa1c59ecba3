"""VL111 unquoted-glob-override."""

from __future__ import annotations

from typing import Iterable, Iterator

from verl_lint.diagnostics import Diagnostic, Edit, Fix, Severity
from verl_lint.rules.base import Rule, ScenarioContext
from verl_lint.rules.registry import register
from verl_lint.rules.shell._shell import clean_until
from verl_lint.shell.model import Command, ScriptModel, SetOptions, Word


def _characters(word: Word) -> Iterator[tuple[str, bool]]:
    """(character, quoted) for the word's literal text as bash sees it before pathname
    expansion; an expansion's characters are not known here and are left out."""
    for p in word.pieces:
        if p.kind != "literal":
            continue
        if p.quoted != "none":
            yield from ((c, True) for c in p.value)
            continue
        text, i = p.text, 0
        while i < len(text):
            if text[i] == "\\" and i + 1 < len(text):  # `\[`: an escaped, quoted character
                yield text[i + 1], True
                i += 2
                continue
            yield text[i], False
            i += 1


def glob_pattern(word: Word) -> str | None:
    """The unquoted character that makes the word a pathname-expansion pattern, as bash's
    `unquoted_glob_pattern_p` (subst.c) decides: `*` or `?`, or a `[` followed later by a `]`
    with no `/` between them (all unquoted); None when it is no pattern."""
    if not any(p.kind == "literal" and p.quoted == "none" and
               ("*" in p.text or "?" in p.text or "[" in p.text) for p in word.pieces):
        return None  # most override words: no character by character walk
    bracket = False
    for c, quoted in _characters(word):
        if quoted:
            continue
        if c in "*?":
            return c
        if c == "[":
            bracket = True
        elif c == "]" and bracket:
            return "[…]"
        elif c == "/":
            bracket = False  # a bracket expression never spans a `/` (bash resets it)
    return None


def _glob_mode(model: ScriptModel, before: int) -> str:
    """"off" after `set -f`, "nullglob"/"failglob" after `shopt -s …`, else "default": the last
    setting written before offset `before` (in source order: a conservative reading)."""
    mode = "default"
    for s in model.statements:
        if s.span.start >= before:
            break
        if isinstance(s, SetOptions):
            if "noglob" in s.enable:
                mode = "off"
            elif "noglob" in s.disable and mode == "off":
                mode = "default"
        elif isinstance(s, Command) and s.name == "shopt":
            args = [w.literal for w in s.args]
            on = "-s" in args
            for name in ("nullglob", "failglob"):
                if name in args and mode != "off":
                    mode = name if on else ("default" if mode == name else mode)
    return mode


def _quote_fix(word: Word) -> Fix | None:
    """Single-quote the value as bash passes it (same argument, no pattern): only for a fully
    literal word whose value has no `'`."""
    value = word.literal
    if value is None or "'" in value or "=" not in value:
        return None
    key, rest = value.split("=", 1)
    replacement = f"{key}='{rest}'"
    return Fix(title=f"Quote the value: {replacement}",
               edits=(Edit(start=word.span.start, end=word.span.end, replacement=replacement),))


@register
class UnquotedGlobOverride(Rule):
    """An override word with unquoted glob characters: bash expands it as a file pattern.

    ## What it does
    Reports a Hydra override of a verl launch (inline or an element of an array passed to it)
    whose unquoted characters make it a pathname-expansion pattern under bash's own rule: an
    unquoted `*` or `?`, or an unquoted `[` with an unquoted `]` after it —
    `trainer.logger=['console','wandb']`, `checkpoint.save_contents=[model,optimizer]` (but not
    `hydra.searchpath=[pkg://my.config]`: a bracket never spans a `/`).
    Quoted characters do not count (`trainer.logger='["console","wandb"]'`, `a=x\\[1]`), nor do
    the values of variables, nor does anything after `set -f`. The finding is `info` with bash's
    default options (the word only changes when a file matches) and `warning` after `shopt -s
    nullglob` or `failglob`.

    ## Why is this bad?
    Bash replaces a pattern with the names of the files it matches in the directory the job is
    started from: `trainer.logger=['console','wandb']` matches a file named
    `trainer.logger=c` (the brackets are a one-character class), and Hydra then receives that
    name. Under `nullglob` a pattern that matches nothing is removed — the override silently
    disappears and verl's default is used; under `failglob` the script stops with `no match`;
    zsh, which many users run scripts with, fails with `no matches found`.

    ## Example
    ```bash
    #!/usr/bin/env bash
    set -xeuo pipefail
    shopt -s nullglob
    python3 -m verl.trainer.main_ppo \\
        actor_rollout_ref.model.path=Qwen/Qwen2.5-7B-Instruct \\
        trainer.logger=['console','wandb']
    ```

    ## Use instead
    ```bash
    #!/usr/bin/env bash
    set -xeuo pipefail
    shopt -s nullglob
    python3 -m verl.trainer.main_ppo \\
        actor_rollout_ref.model.path=Qwen/Qwen2.5-7B-Instruct \\
        trainer.logger='["console","wandb"]'
    ```

    ## Fix safety
    The fix single-quotes the value exactly as bash passed it (`trainer.logger='[console,wandb]'`),
    so Hydra receives the same argument when no file matches; it is safe. It is offered only for
    a word without expansions whose value has no `'`.

    ## References
    - [Bash reference manual: Filename Expansion](https://www.gnu.org/software/bash/manual/bash.html#Filename-Expansion)
      and [Pattern Matching](https://www.gnu.org/software/bash/manual/bash.html#Pattern-Matching)
    - bash `subst.c` (`unquoted_glob_pattern_p`): `*`, `?`, and `[` closed by `]` before any `/`
      make a pattern
    """

    code = "VL111"
    name = "unquoted-glob-override"
    severity = Severity.WARNING
    summary = "an unquoted override word is a glob pattern (`[…]`, `*`, `?`) that bash may expand"
    scope = "scenario"
    fixable = True

    def check(self, ctx: ScenarioContext) -> Iterable[Diagnostic]:
        model = ctx.model
        cutoff = clean_until(model)
        # only a word with a glob character can be a pattern (`glob_pattern`): most scripts
        # have none among their launch words, and the others a handful
        words = {w.span.start: w for w in model.words
                 if "*" in w.text or "?" in w.text or "[" in w.text}
        if not words:
            return
        seen: set[int] = set()
        for launch in ctx.run.launches:
            mode = None
            # under nullglob the evaluator reads such a word as a passthrough (it may vanish)
            for span in [o.span for o in launch.overrides] + [p.span for p in launch.passthrough]:
                word = words.get(span.start)
                if word is None or word.span.end > cutoff or word.span.start in seen:
                    continue
                seen.add(word.span.start)
                what = glob_pattern(word)
                if what is None:
                    continue
                mode = mode or _glob_mode(model, launch.span.start)
                if mode == "off":
                    break
                yield self._finding(word, what, mode)

    def _finding(self, word: Word, what: str, mode: str) -> Diagnostic:
        consequence = {
            "nullglob": "under `shopt -s nullglob` it is removed when no file matches, so the "
                        "override silently disappears",
            "failglob": "under `shopt -s failglob` the script stops with `no match`",
        }.get(mode, "a file whose name matches replaces it; under nullglob, failglob or zsh "
                    "it disappears or fails")
        return self.diagnostic(
            word.span,
            f"`{word.text}` has an unquoted {what}: bash reads the word as a file pattern; "
            f"{consequence}",
            help="quote the value: trainer.logger='[\"console\",\"wandb\"]'",
            fix=_quote_fix(word),
            severity=Severity.WARNING if mode in ("nullglob", "failglob") else Severity.INFO,
        )

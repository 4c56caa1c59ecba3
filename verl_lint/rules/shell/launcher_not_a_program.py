"""VL112 launcher-not-a-program."""

from __future__ import annotations

import re
from typing import Iterable

from verl_lint.diagnostics import Diagnostic, Severity
from verl_lint.evaluate.launch import is_verl_module, is_verl_script
from verl_lint.rules.base import Rule, ScriptContext
from verl_lint.rules.registry import register
from verl_lint.rules.shell._shell import clean_until, looks_like_override
from verl_lint.shell.model import Assignment, Command, ScriptModel, Word

# A placeholder as people write them (`TORCHRUN`, `PYTHON_BIN`): programs on PATH are not spelled
# in capitals, so a capitalised command word that no function or alias defines is not one.
_PLACEHOLDER = re.compile(r"[A-Z][A-Z0-9_]*[A-Z0-9]\Z")
_WRAPPERS = frozenset({"nohup", "exec", "time", "command", "setsid"})
# whatever a sourced file or `eval` defines (functions, aliases) the script cannot show
_OPAQUE = frozenset({"source", ".", "eval"})


def _command_word(cmd: Command) -> tuple[Word, int] | None:
    """The word bash runs (after `nohup`, `env VAR=…` and their options), and its index."""
    i = 0
    words = cmd.words
    while i < len(words):
        text = words[i].literal
        if text is None:
            return None
        base = text.rsplit("/", 1)[-1]
        if base in _WRAPPERS or base == "env":
            i += 1
            while i < len(words) and (words[i].text.startswith("-") or (
                    base == "env" and re.match(r"[A-Za-z_]\w*=", words[i].text))):
                i += 1
            continue
        return words[i], i
    return None


def _launches_verl(args: tuple[Word, ...]) -> bool:
    """The arguments are a verl launch's: `-m verl.…` (or `recipe.…`, `*.main_*`), a `main_*.py`
    script, or at least two Hydra overrides."""
    texts = [w.literal or "" for w in args]
    for i, t in enumerate(texts):
        if t in ("-m", "--module") and i + 1 < len(texts) and is_verl_module(texts[i + 1]):
            return True
        if is_verl_script(t):
            return True
    return sum(looks_like_override(w.text) for w in args) >= 2


def _defined_names(model: ScriptModel) -> set[str]:
    """Functions the script defines and aliases it sets (`alias TORCHRUN='torchrun …'`)."""
    names = set(model.functions)
    for c in model.commands:
        if c.name == "alias":
            names.update(w.text.split("=", 1)[0] for w in c.args if "=" in w.text)
    return names


@register
class LauncherNotAProgram(Rule):
    """A verl launch whose command word is nothing bash can run.

    ## What it does
    Reports a command that launches verl (`-m verl.…`, a `main_*.py` script, or Hydra overrides)
    whose command word is a capitalised placeholder — `TORCHRUN -m verl.trainer.sft_trainer …`,
    `PYTHON -m verl.trainer.main_ppo …` — that the script defines neither as a function nor as an
    alias. When the script assigns a variable of that name, the message says so: the `$` is
    missing. Lower-case words (`torchrun`, `python3`, a typo of them) are left alone, since
    they may be programs on the cluster's PATH; so is any script that `source`s a file or runs
    `eval`, which may define the name.

    ## Why is this bad?
    Bash looks the word up as a function, builtin or program, finds none, prints `TORCHRUN:
    command not found` and exits with status 127: the training never starts. Under `set -e` the
    script stops there; without it, it carries on and later steps (evaluation, upload) run
    against a checkpoint that was never written.

    ## Example
    ```bash
    #!/usr/bin/env bash
    set -xeuo pipefail
    TORCHRUN="torchrun --standalone --nnodes=1 --nproc_per_node=8"
    TORCHRUN -m verl.trainer.sft_trainer \\
        data.train_files=/data/gsm8k/train.parquet \\
        data.val_files=/data/gsm8k/test.parquet \\
        model.path=Qwen/Qwen2.5-0.5B-Instruct
    ```

    ## Use instead
    ```bash
    #!/usr/bin/env bash
    set -xeuo pipefail
    torchrun --standalone --nnodes=1 --nproc_per_node=8 -m verl.trainer.sft_trainer \\
        data.train_files=/data/gsm8k/train.parquet \\
        data.val_files=/data/gsm8k/test.parquet \\
        model.path=Qwen/Qwen2.5-0.5B-Instruct
    ```

    ## Fix safety
    No fix: `$TORCHRUN` unquoted would split the variable's value into words (what a launcher
    string needs) but also glob it; the author should choose between the program and an array.

    ## References
    - [Bash reference manual: Command Search and Execution](https://www.gnu.org/software/bash/manual/bash.html#Command-Search-and-Execution) (status 127)
    """

    code = "VL112"
    name = "launcher-not-a-program"
    severity = Severity.ERROR
    summary = "the launch's command word is no function, alias or program (a placeholder)"
    scope = "script"

    def check(self, ctx: ScriptContext) -> Iterable[Diagnostic]:
        model = ctx.model
        cutoff = clean_until(model)
        commands = [c for c in model.commands if c.span.end <= cutoff]
        if any(c.name in _OPAQUE for c in commands):
            return
        # the names defined and assigned, worked out for the first capitalised command word
        defined: set[str] | None = None
        assigned: dict[str, Assignment] = {}
        for cmd in commands:
            found = _command_word(cmd)
            if found is None:
                continue
            word, i = found
            name = word.literal
            if not _PLACEHOLDER.match(name):
                continue
            if defined is None:
                defined = _defined_names(model)
                assigned = {a.name: a for a in model.assignments}
            if name in defined:
                continue
            if not _launches_verl(cmd.words[i + 1:]):
                continue
            message = (f"`{name}` is no function, alias or program: bash fails with "
                       f"`{name}: command not found` (status 127) and the launch never runs")
            help = None
            if name in assigned:
                line = assigned[name].span.line
                message += f"; `{name}` is a variable (line {line}): the `$` is missing"
                help = f"write the program itself, or expand the variable: ${name}"
            yield self.diagnostic(word.span, message, help=help)

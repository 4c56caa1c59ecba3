"""VL107 shell-expanded-interpolation."""

from __future__ import annotations

import re
from typing import Iterable

from verl_lint.diagnostics import Diagnostic, Edit, Fix, Severity
from verl_lint.rules.base import Rule, ScriptContext
from verl_lint.rules.registry import register
from verl_lint.rules.shell._shell import HYDRA_RESOLVERS, all_words, clean_until
from verl_lint.shell.model import Piece, SetOptions

# `${oc.env:HOME}`, `${actor_rollout_ref.actor.optim.lr}`, `${.sibling}`, `${now:%H}`
_HYDRA = re.compile(r"\$\{\.*[A-Za-z_][\w-]*(?:\[\w+\])?(?:[.:][^}]*)\}")


def is_interpolation(p: Piece) -> bool:
    if p.kind == "variable":
        return p.operator == "substring" and p.name in HYDRA_RESOLVERS and p.braced
    return p.kind == "bad_substitution" and _HYDRA.fullmatch(p.text) is not None


@register
class ShellExpandedInterpolation(Rule):
    """A Hydra interpolation is left where bash expands it.

    ## What it does
    Reports a Hydra/OmegaConf interpolation — `${oc.env:HOME}`, `${oc.select:…}`,
    `${actor_rollout_ref.actor.ppo_mini_batch_size}`, `${now:%Y-%m-%d}` — that is unquoted or
    inside double quotes (or in an unquoted heredoc), where bash treats `${…}` as its own
    parameter expansion. The fix single-quotes an unquoted one and escapes the `$` of a
    double-quoted one (`"\\${oc.env:HOME}"`).

    ## Why is this bad?
    `${oc.env:HOME}` is not a valid bash parameter: bash stops with `bad substitution` at the
    launch line (with `set -e`, the whole script ends there), or, for a form bash accepts, it
    silently substitutes an empty string and Hydra never sees the interpolation.

    ## Example
    ```bash
    #!/usr/bin/env bash
    set -xeuo pipefail
    python3 -m verl.trainer.main_ppo \\
        trainer.default_local_dir=${oc.env:HOME}/checkpoints \\
        trainer.n_gpus_per_node=8
    ```

    ## Use instead
    ```bash
    #!/usr/bin/env bash
    set -xeuo pipefail
    python3 -m verl.trainer.main_ppo \\
        trainer.default_local_dir='${oc.env:HOME}/checkpoints' \\
        trainer.n_gpus_per_node=8
    ```

    ## Fix safety
    Safe: escaping the `$` (or single-quoting the word) only stops bash from expanding the
    interpolation, which Hydra then resolves as the author meant.

    ## References
    - [Hydra: override grammar, quoting interpolations](https://hydra.cc/docs/advanced/override_grammar/basic/)
    - [OmegaConf: variable interpolation](https://omegaconf.readthedocs.io/en/latest/usage.html#variable-interpolation)
    - [Bash reference manual: Shell Parameter Expansion](https://www.gnu.org/software/bash/manual/bash.html#Shell-Parameter-Expansion)
    """

    code = "VL107"
    name = "shell-expanded-interpolation"
    severity = Severity.ERROR
    summary = "a Hydra interpolation `${…}` is unquoted or double-quoted, so bash expands it"
    scope = "script"
    fixable = True

    def check(self, ctx: ScriptContext) -> Iterable[Diagnostic]:
        heredocs = [h.span for h in ctx.model.heredocs]
        cutoff = clean_until(ctx.model)
        nounset = None  # a walk of every statement: only for a script with a finding
        for word in all_words(ctx.model):
            if "${" not in word.text or word.span.end > cutoff:
                continue  # an interpolation is a `${…}` piece of the word's own text
            for p in word.pieces:
                if not is_interpolation(p):
                    continue
                if nounset is None:
                    nounset = _nounset_switches(ctx.model)
                in_heredoc = any(h.contains(p.span) for h in heredocs)
                yield self._finding(p, in_heredoc, _in_force(nounset, p.span.start))

    def _finding(self, p: Piece, in_heredoc: bool, unset_aborts: bool) -> Diagnostic:
        where = ("in an unquoted heredoc" if in_heredoc else
                 "inside double quotes" if p.quoted == "double" else "unquoted")
        if p.kind != "variable":
            outcome = "fails with `bad substitution`"
        elif unset_aborts:
            outcome = f"stops with `{p.name}: unbound variable` (`set -u`)"
        else:
            outcome = "replaces it with an empty string"
        message = (f"bash expands the Hydra interpolation `{p.text}` ({where}) and {outcome}; "
                   "it must reach Hydra literally")
        if in_heredoc:
            return self.diagnostic(p.span, message,
                                   help="quote the heredoc delimiter (`<<'EOF'`) so bash leaves "
                                        "`${…}` alone")
        if p.quoted == "double":
            fix = Fix(title="Escape the `$` so bash leaves the interpolation to Hydra",
                      edits=(Edit(start=p.span.start, end=p.span.start, replacement="\\"),))
        else:
            fix = Fix(title="Single-quote the interpolation",
                      edits=(Edit(start=p.span.start, end=p.span.start, replacement="'"),
                             Edit(start=p.span.end, end=p.span.end, replacement="'")))
        return self.diagnostic(p.span, message, fix=fix)


def _nounset_switches(model) -> list[tuple[int, bool]]:
    """(offset, nounset on?) of every unconditional top-level `set -u` / `set +u`."""
    return [(st.span.start, "nounset" in st.enable)
            for st in model.statements
            if isinstance(st, SetOptions) and not st.path and st.function is None
            and not st.conditional and "nounset" in (*st.enable, *st.disable)]


def _in_force(switches: list[tuple[int, bool]], offset: int) -> bool:
    state = False
    for at, on in switches:
        if at >= offset:
            break
        state = on
    return state

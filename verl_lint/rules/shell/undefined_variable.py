"""VL101 undefined-variable."""

from __future__ import annotations

import re
from bisect import bisect_right
from fnmatch import fnmatchcase
from typing import Callable, Iterable

from verl_lint.diagnostics import Diagnostic, Label, Severity
from verl_lint.evaluate.interp import guard_test
from verl_lint.rules.base import Rule, ScenarioContext
from verl_lint.rules.registry import register
from verl_lint.rules.shell._shell import HYDRA_RESOLVERS, clean_until
from verl_lint.shell.model import Assignment, Case, Command, If, ScriptModel, children
from verl_lint.source import Span

# Set by launchers, schedulers, containers and toolkits rather than by the script; the evaluator
# already knows the shell's own variables (HOME, PATH, RANDOM…) and SLURM_*/PBS_*/LSB_*.
LAUNCHER_ENV = frozenset({
    "MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK", "LOCAL_RANK", "NODE_RANK",
    "LOCAL_WORLD_SIZE", "CUDA_HOME", "CUDA_PATH", "LD_LIBRARY_PATH", "PYTHONPATH",
    "LIBRARY_PATH", "CONDA_PREFIX", "CONDA_DEFAULT_ENV", "VIRTUAL_ENV", "ASCEND_HOME_PATH",
    "ASCEND_TOOLKIT_HOME", "ASCEND_OPP_PATH", "ASCEND_AICPU_PATH", "ASCEND_CUSTOM_OPP_PATH",
    "TOOLCHAIN_HOME",
    "RAY_ADDRESS", "HF_HOME", "HF_ENDPOINT", "HF_TOKEN", "WANDB_API_KEY", "TERM", "DISPLAY",
    "JOB_ID", "POD_NAME", "POD_IP", "HOST_IP",
})
LAUNCHER_PREFIXES = ("KUBERNETES_", "PET_", "MLP_", "VC_", "OMPI_", "PMI_", "NVIDIA_",
                     "ARNOLD_", "AWS_", "GITHUB_", "CI_", "RUNNER_")
_RESOLVER = re.compile(r"\$\{(?:" + "|".join(HYDRA_RESOLVERS) + "):")  # VL107 reports it
_MAX_LABELS = 20  # the other uses shown with a finding
_WHOLE_ARRAY = re.compile(r"\$\{[#!]?\w+\[[@*]\]")  # "${ARR[@]}": bash ≥4.4 allows it under -u


def is_known_env(name: str, known_env: Iterable[str]) -> bool:
    """Launcher-provided names, plus `known-env` entries (which may be globs: `MY_CLUSTER_*`)."""
    if name in LAUNCHER_ENV or name.startswith(LAUNCHER_PREFIXES):
        return True
    return any(fnmatchcase(name, pattern) for pattern in known_env)


def _fold(name: str) -> str:
    return name.lower().replace("_", "")


def _one_edit(a: str, b: str) -> bool:
    """One insertion, deletion, substitution or swap of neighbours turns `a` into `b`."""
    if abs(len(a) - len(b)) > 1 or a == b:
        return False
    i = 0
    while i < min(len(a), len(b)) and a[i] == b[i]:
        i += 1
    if len(a) == len(b):
        return a[i + 1:] == b[i + 1:] or (a[i:i + 2] == b[i:i + 2][::-1] and a[i + 2:] == b[i + 2:])
    return a[i + 1:] == b[i:] if len(a) > len(b) else a[i:] == b[i + 1:]


def _other_word(a: str, b: str) -> bool:
    """`GEN_TP` / `GEN_PP`: the names differ in one short word, so they name different things."""
    wa, wb = a.lower().split("_"), b.lower().split("_")
    diff = [(x, y) for x, y in zip(wa, wb) if x != y]
    return len(wa) == len(wb) and len(diff) == 1 and max(len(diff[0][0]), len(diff[0][1])) <= 3


class Names:
    """The assigned names, and the one a user probably meant (`close`). The first question is
    one pass over the names; from the second on they are indexed, so that each costs
    O(len(name)): a script may assign thousands, and a scenario mostly asks once, if at all
    (an index costs several passes to build)."""

    def __init__(self, candidates: Iterable[str]) -> None:
        self.names = set(candidates)
        self._index: tuple[dict[str, list[str]], dict[str, set[str]]] | None = None
        self._asked = 0

    def close(self, name: str) -> str | None:
        """The assigned name the user probably meant: the same name in another case or without
        an underscore (`last_layer` → `LAST_LAYER`), else a one-letter typo of a long name.
        Names that differ in a whole word (`ROLLOUT_TP` / `ROLLOUT_N`) are different variables,
        not typos."""
        self._asked += 1
        if self._asked == 1:
            fold = _fold(name)
            same = min((c for c in self.names if c != name and _fold(c) == fold), default=None)
            if same is not None or len(name) < 6:
                return same
            pool = self.names
        else:
            folded, deletions = self._indexed()
            same = [c for c in folded.get(_fold(name), ()) if c != name]
            if same:
                return same[0]
            if len(name) < 6:
                return None
            # every name one edit away is here (and some two away, which `_one_edit` drops)
            pool = set(deletions.get(name, ()))  # one letter more
            for k in _deletions(name):
                pool |= deletions.get(k, set())  # one letter changed
                if k in self.names:
                    pool.add(k)  # one letter less
            pool |= {w for w in _swaps(name) if w in self.names}
        near = [c for c in pool if c != name and _one_edit(name, c) and not _other_word(name, c)]
        return near[0] if len(near) == 1 else None

    def _indexed(self) -> tuple[dict[str, list[str]], dict[str, set[str]]]:
        """(folded name → names in order, name with one character removed → names)."""
        if self._index is None:
            folded: dict[str, list[str]] = {}
            deletions: dict[str, set[str]] = {}
            for c in sorted(self.names):
                folded.setdefault(_fold(c), []).append(c)
                if len(c) >= 5:
                    for k in _deletions(c):
                        deletions.setdefault(k, set()).add(c)
            self._index = (folded, deletions)
        return self._index


def _deletions(name: str) -> set[str]:
    return {name[:i] + name[i + 1:] for i in range(len(name))}


def _swaps(name: str) -> set[str]:
    return {name[:i] + name[i + 1] + name[i] + name[i + 2:] for i in range(len(name) - 1)}


def close_name(name: str, candidates: Iterable[str]) -> str | None:
    """`Names(candidates).close(name)`, for one question."""
    return Names(candidates).close(name)


class _Statements:
    """Which statement holds an offset, and what is around it, in O(log n + depth) per
    question: VL101 asks for every unset use, and a 10,000-line script must stay linear."""

    def __init__(self, model: ScriptModel) -> None:
        self.model = model
        self.stmts = model.statements  # pre-order: sorted by start, parents first
        self.starts = [s.span.start for s in self.stmts]
        self.parent: list[int] = []
        stack: list[int] = []
        for i, s in enumerate(self.stmts):
            while stack and self.stmts[stack[-1]].span.end <= s.span.start:
                stack.pop()
            self.parent.append(stack[-1] if stack else -1)
            stack.append(i)

    def holder(self, span: Span) -> int:
        """Index of the innermost statement holding `span` (-1: none)."""
        i = bisect_right(self.starts, span.start) - 1
        while i >= 0 and self.stmts[i].span.end < span.end:
            i = self.parent[i]
        return i

    def previous(self, i: int) -> int:
        """The statement before statement i in the same list (-1: none)."""
        j, up = i - 1, self.parent[i]
        while j > up and self.parent[j] != up:  # from inside the previous one to it
            j = self.parent[j]
        return j if j > up else -1

    def following(self, i: int) -> int:
        """The next statement of the same list (-1: none)."""
        j = i + 1
        end = self.stmts[i].span.end
        while j < len(self.stmts) and self.starts[j] < end:
            j += 1  # statements nested in statement i
        return j if j < len(self.stmts) and self.parent[j] == self.parent[i] else -1


def _mention(name: str) -> Callable[[str], bool]:
    """A test: the text expands `name` or tests it with `-v`. The pattern is compiled only for
    a text that holds the name at all: most texts asked about do not, and a new pattern costs
    tens of µs to compile."""
    pattern: re.Pattern[str] | None = None

    def mentions(text: str) -> bool:
        nonlocal pattern
        if name not in text:
            return False
        if pattern is None:
            pattern = re.compile(r"\$\{?[#!]?" + re.escape(name) + r"\b|-v\s+['\"]?"
                                 + re.escape(name) + r"\b")
        return pattern.search(text) is not None

    return mentions


def _guarded(idx: _Statements, i: int, use, mentions: Callable[[str], bool]) -> bool:
    """The use sits in a branch whose test looks at the variable (`if [ -n "${X:-}" ]`,
    `case "${X:-}" in`, `[ -n "${X:-}" ] && …`): the evaluator cannot tell it is set there."""
    model = idx.model
    for ref in idx.stmts[i].path:
        block = model.block(ref.block)
        if isinstance(block, Case):
            if mentions(block.subject.text):
                return True
        elif any(b.condition is not None and b.condition.span.end <= use.span.start
                 and mentions(b.condition.text)
                 for b in block.branches[:ref.branch + 1]):
            return True
    if model.source is None:
        return False
    k = i
    while k >= 0 and not idx.stmts[k].after:  # the right-hand side of `&&`/`||` holding it
        k = idx.parent[k]
    while k >= 0 and idx.stmts[k].after:  # back to the first command of that list
        k = idx.previous(k)
    return k >= 0 and mentions(model.source.slice(idx.stmts[k].span))


def _idiom(idx: _Statements, i: int, use) -> str | None:
    """How a script says it needs X from its caller: "stops" (`${X:?msg}`,
    `[ -z "$X" ] && exit 1`), "required" (`X=${X}`); "optional" for a variable that may be
    empty (`[ -n "$X" ] && …`, `${CONDA_BIN_PATH}python3`); else None."""
    if use.required:
        return "stops"
    s = idx.stmts[i]
    if isinstance(s, Assignment) and s.name == use.name and s.value is not None and \
            s.value.text.strip('"') in (f"${use.name}", f"${{{use.name}}}"):
        return "required"
    if not isinstance(s, Command):
        return None
    if s.words and s.words[0].span.start == use.span.start and len(s.words[0].pieces) > 1:
        return "optional"  # `${PREFIX}ray start`: a prefix that may be empty
    guard = guard_test(s)
    if guard is None or guard[0] != use.name:
        return None
    # a test that stops the run when X is empty asks for it; any other test allows it empty
    then = idx.following(i)  # `[ -z "$X" ] && { echo …; exit 1; }`
    if then >= 0 and idx.stmts[then].after and _exits([idx.stmts[then]]):
        return "stops"
    up = idx.parent[i]  # `if [ -z "$X" ]; then echo …; exit 1; fi`
    if up >= 0 and isinstance(idx.stmts[up], If) and any(
            b.condition is not None and b.condition.span.start <= use.span.start
            < b.condition.span.end and _exits(b.body) for b in idx.stmts[up].branches):
        return "stops"
    return "optional"


def _exits(body) -> bool:
    stack = list(body)
    while stack:
        s = stack.pop()
        if isinstance(s, Command) and s.name in ("exit", "return"):
            return True
        for group in children(s):
            stack.extend(group)
    return False


def _extensions(model: ScriptModel) -> set[tuple[int, int]]:
    """The spans of `$X` in `X="new:${X}"`: X comes from the environment and is extended."""
    out: set[tuple[int, int]] = set()
    for a in model.assignments:
        if a.value is not None and a.name in a.value.text and a.value.text.strip('"') not in (
                f"${a.name}", f"${{{a.name}}}"):
            out.update((p.span.start, p.span.end) for p in a.value.variables() if p.name == a.name)
    return out


def _name_span(ctx: ScenarioContext, use):
    """Inside `$((A + B))` the evaluator reports the whole expansion: point at the name."""
    text = ctx.source.slice(use.span)
    if text.startswith(("$((", "$[")):
        m = re.search(r"(?<![\w$])" + re.escape(use.name) + r"\b", text)
        if m is not None:
            start = use.span.start + len(text[:m.start()].encode())
            return ctx.source.span(start, start + len(use.name.encode()))
    return use.span


@register
class UndefinedVariable(Rule):
    """A variable is expanded but nothing in the script sets it on the way there.

    ## What it does
    Reports `$X` / `${X}` expansions without a default where no path of the script assigns `X`
    before that point, in each scenario: a variable assigned only in the `gpu)` branch of
    `case "$DEVICE"` is reported as unset when DEVICE=npu, naming the branch that assigns it. A
    close assigned name is suggested (`$last_layer` vs `LAST_LAYER`). It is an error under
    `set -u` (bash aborts the run there) and a warning otherwise (bash expands it to an empty
    string, so `data.val_files=` reaches Hydra). Each variable is reported once per scenario, at
    the use where bash stops (else its first use), with the other uses as labels.

    Variables the environment provides are not reported: the shell's own (`HOME`, `PATH`, `USER`,
    `PWD`, `RANDOM`…), scheduler and launcher ones (`SLURM_*`, `MASTER_ADDR`, `KUBERNETES_*`…),
    and those listed in the `known-env` setting (globs allowed). An expansion with a default
    (`${X:-d}`, `${X-d}`, `${X:+…}`) never fires, nor does `"${ARR[@]}"`, nor does a variable
    extended in its own assignment (`export P="/opt/x:${P}"`: whatever the environment gives, on
    purpose). Without `set -u`, a variable the script treats as optional is not reported either:
    a test of it (`[ -n "${WANDB_RUN_ID}" ] && …`) or a prefix of a command name
    (`${CONDA_BIN_PATH}ray`); under `set -u` bash stops there, so they are errors.

    The ways a script asks its caller for an input — `X=${X}`, `: "${X:?message}"`,
    `[ -z "$X" ] && { echo …; exit 1; }` or the same `if` — are `info`: the run needs X from
    the environment, on purpose. Under `set -u`, a device variable the branches test
    (`case "${DEVICE}" in`) that nothing in the script assigns is an error: the scenarios assume
    the caller exports it, and bash stops there when it does not.

    ## Why is this bad?
    verl scripts run with `set -xeuo pipefail`, so an unset variable aborts the script at the
    launch, often minutes after environment setup on a queued node. Without `set -u` it is worse:
    the override gets an empty value and the job fails later, or runs with the wrong setting.

    ## Example
    ```bash
    #!/usr/bin/env bash
    set -xeuo pipefail
    TRAIN_FILE=${TRAIN_FILE:-$HOME/data/dapo-math-17k.parquet}
    python3 -m verl.trainer.main_ppo \\
        data.train_files="${TRAIN_FILE}" \\
        data.val_files="${TEST_FILE}"
    ```

    ## Use instead
    ```bash
    #!/usr/bin/env bash
    set -xeuo pipefail
    TRAIN_FILE=${TRAIN_FILE:-$HOME/data/dapo-math-17k.parquet}
    TEST_FILE=${TEST_FILE:-$HOME/data/aime-2024.parquet}
    python3 -m verl.trainer.main_ppo \\
        data.train_files="${TRAIN_FILE}" \\
        data.val_files="${TEST_FILE}"
    ```

    ## References
    - [Bash reference manual: The Set Builtin (`-u`)](https://www.gnu.org/software/bash/manual/bash.html#The-Set-Builtin)
    - [ShellCheck SC2154: var is referenced but not assigned](https://www.shellcheck.net/wiki/SC2154)
    - Configure variables your cluster provides with `known-env = ["MY_CLUSTER_*"]`
    """

    code = "VL101"
    name = "undefined-variable"
    severity = Severity.WARNING
    summary = "a variable is expanded without a default and the script never sets it before"
    scope = "scenario"

    def check(self, ctx: ScenarioContext) -> Iterable[Diagnostic]:
        label = ctx.run.scenario.label
        cutoff = clean_until(ctx.model)
        idx: _Statements | None = None
        extends: set[tuple[int, int]] | None = None  # built for the first use that asks
        by_name: dict[str, list[tuple[object, str | None]]] = {}
        for use in ctx.run.var_uses:
            if use.state != "unset" or (use.has_default and not use.required) \
                    or use.span.start >= cutoff:
                continue
            if is_known_env(use.name, ctx.settings.known_env):
                continue
            if not use.required:
                if extends is None:
                    extends = _extensions(ctx.model)
                if (use.span.start, use.span.end) in extends:
                    continue
            text = ctx.source.slice(use.span)
            if _WHOLE_ARRAY.match(text) or _RESOLVER.match(text):
                continue
            if idx is None:
                idx = _Statements(ctx.model)
            i = idx.holder(use.span)
            if i < 0:
                kind = "required" if use.required else None
            else:
                if _guarded(idx, i, use, _mention(use.name)):
                    continue
                kind = _idiom(idx, i, use)
            if kind == "optional" and not use.nounset:
                continue  # an empty value is what the script expects
            by_name.setdefault(use.name, []).append((use, kind if kind != "optional" else None))
        if not by_name:
            return  # most scenarios: the names assigned are not needed
        assigned: dict[str, list[Span]] = {}
        for a in ctx.model.assignments:
            assigned.setdefault(a.name, []).append(a.span)
        names = Names(assigned)
        for name, uses in by_name.items():
            yield self._report(ctx, label, name, uses, assigned, names)

    def _report(self, ctx: ScenarioContext, label: str, name: str, uses: list,
                assigned: dict[str, list[Span]], names: Names) -> Diagnostic:
        """One finding per variable and scenario: at the use where bash stops (the first
        under `set -u`), else the first; the other uses are labels."""
        plain = [u for u, kind in uses if kind is None]
        pool = plain or [u for u, _ in uses]
        use = next((u for u in pool if u.nounset), pool[0])
        labels = [Label(span=_name_span(ctx, u), message=f"`${name}` is also used here")
                  for u, _ in uses if u is not use][:_MAX_LABELS]
        if not plain:  # the script asks for X from its caller, on purpose
            stops = use.nounset or dict((id(u), k) for u, k in uses)[id(use)] == "stops"
            return self.diagnostic(
                _name_span(ctx, use),
                f"`${name}` must come from the environment: "
                + ("the run stops here when it is unset" if stops else
                   f"the script reads it from its caller (`{name}=${{{name}}}`) and gives it "
                   "no value of its own"),
                severity=Severity.INFO, labels=labels,
                help=f"export {name}=… before running the script, or give it a default "
                     f"(`${{{name}:-…}}`)")
        # `X=${X}` reads the environment: its own assignment does not count
        why = self._why(use, label, [sp.line for sp in assigned.get(name, ())
                                     if not sp.contains(use.span)])
        if name in ctx.run.scenario.assumed:  # the same words in every device scenario
            why = ("never assigned by the script: the device scenarios assume the caller "
                   "exports it")
        message = f"`${name}` is {why}"
        guess = names.close(name)
        if guess is not None:
            message += f"; did you mean `${guess}`?"
        return self.diagnostic(
            _name_span(ctx, use), message,
            severity=Severity.ERROR if use.nounset else Severity.WARNING, labels=labels,
            help=("`set -u` aborts the run here" if use.nounset else
                  "bash expands it to an empty string")
            + f"; assign it earlier, give it a default (`${{{name}:-…}}`), or add it to "
            "`known-env` if the environment provides it")

    @staticmethod
    def _why(use, label: str, lines: list[int]) -> str:
        if use.note:
            return f"unset when {label}: {use.note}" if label else f"unset here: {use.note}"
        if not lines:
            return "never assigned by the script and not a known environment variable"
        later = [n for n in lines if n > use.span.line]
        if later and len(later) == len(lines):
            return f"used before it is assigned (line {later[0]})"
        return f"unset here: the assignment at line {lines[0]} does not reach this point"

"""VL102 branch-confined-setup."""

from __future__ import annotations

import re
from typing import Iterable, Iterator

from verl_lint.diagnostics import Diagnostic, Severity
from verl_lint.rules.base import Rule, ScenarioContext
from verl_lint.rules.registry import register
from verl_lint.rules.shell._shell import branch_label, device_blocks, exits, fixed_before
from verl_lint.shell.model import Assignment, Case, Command, If, Unset

PROXY_VARS = frozenset({"http_proxy", "https_proxy", "no_proxy", "all_proxy", "ftp_proxy"})
_DOWNLOADERS = {"hf": "download", "huggingface-cli": "download", "modelscope": "download"}
_OUTPUT_FLAGS = re.compile(r"-[oOP]|--output(?:-document|-dir)?(?:=.*)?|--directory-prefix(?:=.*)?"
                           r"|-[A-Za-z]*[oOP]")
# a package that only one device needs is legitimately installed in its own branch
_DEVICE_PACKAGE = re.compile(
    r"npu|ascend|cann|mindspeed|mindie|torch|cuda|cu\d{2,3}|nvidia|flash|apex|triton|"
    r"transformer[-_]engine|xformers|liger|vllm|sglang|deepspeed|megatron|bitsandbytes|deep[-_]?ep",
    re.I)


def _literals(c: Command) -> list[str]:
    return [w.literal if w.literal is not None else w.text for w in c.words]


def setup_steps(s) -> Iterator[tuple[str, str]]:
    """(category, what) for each setup step this statement performs."""
    if isinstance(s, Unset) and not s.functions:
        for name in s.names:
            if name.lower() in PROXY_VARS:
                yield f"proxy:{name.lower()}", f"unset {name}"
        return
    if isinstance(s, Assignment) and s.name.lower() in PROXY_VARS:
        yield f"proxy:{s.name.lower()}", f"{s.name}=…"
        return
    if not isinstance(s, Command) or not s.words:
        return
    if not _may_set_up(s):
        return
    argv = _literals(s)
    while argv and argv[0] in ("sudo", "env", "command", "time"):
        argv = argv[1:]
    tool = argv[0].rsplit("/", 1)[-1] if argv else ""  # `/opt/bin/huggingface-cli`
    if len(argv) >= 2 and _DOWNLOADERS.get(tool) == argv[1]:
        yield "download", f"{tool} {argv[1]}"
    elif tool in ("wget", "curl") and (
            any(_OUTPUT_FLAGS.fullmatch(a) for a in argv[1:] if a.startswith("-"))
            or any(r.operator in (">", ">>") for r in s.redirects)):
        yield "download", tool
    else:
        pip = _pip_install(argv)
        if pip is not None and not any(_DEVICE_PACKAGE.search(a) for a in pip):
            yield "pip", "pip install"


# commands a setup step can start with (`sudo …`, `wget`, `hf download`); pip may come later
_SETUP_COMMAND = re.compile(r"sudo|env|command|time|wget|curl|" +
                            "|".join(re.escape(d) for d in _DOWNLOADERS))
_PIP = re.compile(r"pip3?(?:\.\d+)?")


def _may_set_up(c: Command) -> bool:
    """A cheap filter before `setup_steps` looks closer: most commands are launches and echos."""
    first = c.words[0].literal
    if first is None or _SETUP_COMMAND.fullmatch(first.rsplit("/", 1)[-1]):
        return True
    return any(w.literal is not None and _PIP.fullmatch(w.literal.rsplit("/", 1)[-1])
               for w in c.words[:4])


def _pip_install(argv: list[str]) -> list[str] | None:
    """The arguments after `install` of `pip install`, `python -m pip install`, `uv pip install`."""
    for i, a in enumerate(argv[:4]):
        if _PIP.fullmatch(a.rsplit("/", 1)[-1]) and argv[i + 1:i + 2] == ["install"]:
            return argv[i + 2:]
    return None


def _arms(block: Case | If) -> list[tuple[str, tuple]]:
    """(label, body) of every way through the block that goes on to what follows it."""
    if isinstance(block, Case):
        arms = [(branch_label(block, k), item.body) for k, item in enumerate(block.items)]
    else:
        arms = [("the else branch" if b.kind == "else" else f"the `{b.condition.text}` branch",
                 b.body) for b in block.branches]
        if not block.has_else:
            arms.append(("the path that skips the `if`", ()))
    return arms


def _subject(block: Case | If) -> str:
    if isinstance(block, Case):
        return f"`case ${block.subject_variable}` (line {block.span.line})"
    return f"the device `if` (line {block.span.line})"


Steps = list[tuple[object, list[tuple[str, str]]]]  # (statement, its setup steps), in order


def _steps_by_branch(stepped: Steps, blocks: set[int]) -> dict[tuple[int, int], list]:
    """(block id, branch) → [(statement, category, what)] for the setup steps nested in it."""
    out: dict[tuple[int, int], list] = {}
    for s, steps in stepped:
        found = [(s, category, what) for category, what in steps]
        for ref in s.path:
            if ref.block in blocks:
                out.setdefault((ref.block, ref.branch), []).extend(found)
    return out


def _done_before(stepped: Steps, block: Case | If) -> set[str]:
    """Setup categories every path runs before the block (`unset http_proxy` at the top)."""
    enclosing = set(block.path)
    out: set[str] = set()
    for s, steps in stepped:
        if s.span.start >= block.span.start:
            break
        if s.span.end <= block.span.start and set(s.path) <= enclosing and not s.conditional \
                and s.function == block.function:
            out.update(category for category, _ in steps)
    return out


def _joined(whats: list[str]) -> str:
    """`unset http_proxy` + `unset https_proxy` → `unset http_proxy https_proxy`."""
    if len(whats) > 1 and all(w.startswith("unset ") for w in whats):
        return "unset " + " ".join(w[len("unset "):] for w in whats)
    return "; ".join(whats)


@register
class BranchConfinedSetup(Rule):
    """A setup step every device needs runs in only one branch of a device `case`/`if`.

    ## What it does
    Reports a step that prepares the run for every device — `unset http_proxy` /
    `https_proxy` / `no_proxy`, a dataset or model download (`hf download`,
    `huggingface-cli download`, `modelscope download`, `wget`/`curl` writing a file), a
    `pip install` — that sits inside one branch of a device `case "$DEVICE"` or
    `if [ "$DEVICE" = … ]` while another branch that goes on to the same launch does not do it.
    Branches that `exit` are not counted, a branch that does the same kind of step its own way
    (another mirror, its own proxy) counts as doing it, and installing a device-specific package
    (`torch_npu`, `vllm-ascend`, `flash-attn`…) in its own branch is fine. A script that fixes
    the device itself before the block (`DEVICE=npu`) runs one branch only and is not reported.

    ## Why is this bad?
    The launch after the block runs for every device, but only one device got the setup: on the
    other one the job starts behind the proxy (Ray and vLLM cannot reach each other), without
    its dataset (`FileNotFoundError` after the workers start), or without the package. Scripts
    are usually written and tested on one device and this is found on the other, mid-job.

    ## Example
    ```bash
    #!/usr/bin/env bash
    set -xeuo pipefail
    DEVICE=${DEVICE:-gpu}
    case "${DEVICE}" in
      gpu)
        unset http_proxy https_proxy
        export CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7
        ;;
      npu)
        export ASCEND_RT_VISIBLE_DEVICES=0,1,2,3,4,5,6,7
        ;;
      *)
        exit 1
        ;;
    esac
    python3 -m verl.trainer.main_ppo trainer.n_gpus_per_node=8
    ```

    ## Use instead
    ```bash
    #!/usr/bin/env bash
    set -xeuo pipefail
    DEVICE=${DEVICE:-gpu}
    unset http_proxy https_proxy
    case "${DEVICE}" in
      gpu)
        export CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7
        ;;
      npu)
        export ASCEND_RT_VISIBLE_DEVICES=0,1,2,3,4,5,6,7
        ;;
      *)
        exit 1
        ;;
    esac
    python3 -m verl.trainer.main_ppo trainer.n_gpus_per_node=8
    ```

    ## References
    - verl-lint seed report 003 (Qwen3.5 GPU/NPU script: proxy unset and `hf download` only in
      the gpu branch)
    - [Hugging Face CLI: `hf download`](https://huggingface.co/docs/huggingface_hub/guides/cli)
    """

    code = "VL102"
    name = "branch-confined-setup"
    severity = Severity.WARNING
    summary = "a setup step every device needs runs in only one device branch"
    scope = "scenario"

    def check(self, ctx: ScenarioContext) -> Iterable[Diagnostic]:
        model = ctx.model
        # a device the script fixes itself (`DEVICE=npu`) runs one branch only
        blocks = [b for b in device_blocks(model) if not fixed_before(model, b)]
        if not blocks or not ctx.run.launches:
            return
        stepped = [(s, steps) for s in model.statements if (steps := list(setup_steps(s)))]
        if not stepped:
            return
        by_branch = _steps_by_branch(stepped, {b.id for b in blocks})
        for block in blocks:
            launch = next((ln for ln in ctx.run.launches if ln.span.start >= block.span.end), None)
            if launch is None:
                continue
            arms = _arms(block)
            done = _done_before(stepped, block)
            steps = [[st for st in by_branch.get((block.id, k), []) if st[1] not in done]
                     for k in range(len(arms))]
            live = [k for k, (_, body) in enumerate(arms) if not exits(body)]
            for k in live:
                missing: dict[int, tuple] = {}  # statement → (statement, whats, branches)
                for stmt, category, what in steps[k]:
                    lacking = [arms[j][0] for j in live
                               if j != k and all(c != category for _, c, _ in steps[j])]
                    if lacking:
                        entry = missing.setdefault(stmt.span.start, (stmt, [], []))
                        entry[1].append(what)
                        entry[2].extend(b for b in lacking if b not in entry[2])
                for stmt, whats, lacking in missing.values():
                    yield self.diagnostic(
                        stmt.span,
                        f"`{_joined(whats)}` runs only in {arms[k][0]} of {_subject(block)}, "
                        f"but the launch at line {launch.span.line} runs for every device: "
                        f"{' and '.join(lacking)} {'does' if len(lacking) == 1 else 'do'} not "
                        "do it",
                        help=f"move it above the {'case' if isinstance(block, Case) else 'if'} "
                             "so every device runs it")

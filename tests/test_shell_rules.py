"""Shell rules VL101–VL110: severities, settings, fixes and the cases the fixtures do not show."""

from __future__ import annotations

import subprocess
import textwrap

import pytest

from verl_lint.diagnostics import Severity
from verl_lint.engine import lint_source
from verl_lint.rules.shell.parallel_variable_mismatch import variable_dimension
from verl_lint.rules.shell.undefined_variable import close_name
from verl_lint.settings import Settings
from verl_lint.source import SourceText

HEAD = "#!/usr/bin/env bash\nset -xeuo pipefail\n"
CASE = """DEVICE=${DEVICE:-gpu}
case "${DEVICE}" in
  gpu)
%s
    ;;
  npu)
%s
    ;;
  *)
    exit 1
    ;;
esac
"""


def lint(text: str, code: str, **settings):
    report = lint_source(SourceText(text.encode()), Settings(select=(code,), **settings),
                         path="t.sh")
    assert report.error is None, report.error
    return [d for d in report.diagnostics if d.code == code]


def device_case(gpu: str, npu: str) -> str:
    indent = lambda s: textwrap.indent(textwrap.dedent(s).strip("\n"), "    ")  # noqa: E731
    return CASE % (indent(gpu), indent(npu))


def apply(text: str, diagnostics, *, unsafe: bool = False) -> str:
    data = text.encode()
    edits = [e for d in diagnostics if d.fix is not None
             and (unsafe or d.fix.applicability == "safe") for e in d.fix.edits]
    for e in sorted(edits, key=lambda e: (e.start, e.end), reverse=True):
        data = data[:e.start] + e.replacement.encode() + data[e.end:]
    return data.decode()


def bash_ok(text: str) -> bool:
    return subprocess.run(["bash", "-n"], input=text.encode(), capture_output=True).returncode == 0


LAUNCH = "python3 -m verl.trainer.main_ppo trainer.n_gpus_per_node=8 \"$@\"\n"


# ---- VL101 undefined-variable ---------------------------------------------------------------

def test_vl101_error_under_set_u_warning_without():
    body = 'python3 -m verl.trainer.main_ppo data.val_files="${TEST_FILE}"\n'
    [d] = lint(HEAD + body, "VL101")
    assert d.severity == Severity.ERROR and "`set -u`" in d.help
    [d] = lint("#!/bin/bash\n" + body, "VL101")
    assert d.severity == Severity.WARNING and "empty string" in d.help


@pytest.mark.parametrize("use", [
    "${TEST_FILE:-x}", "${TEST_FILE-x}", "${TEST_FILE:+x}", "${TEST_FILE:=x}", "$HOME", "$PWD",
    "$RANDOM", "$SLURM_JOB_ID", "$MASTER_ADDR", "${EXTRA[@]}", "$1",
])
def test_vl101_defaults_and_environment_never_fire(use):
    assert not lint(HEAD + f'echo "{use}"\n', "VL101")


def test_vl101_leaves_hydra_resolvers_to_vl107():
    text = HEAD + ('python3 -m verl.trainer.main_ppo trainer.experiment_name="run_${now:%H}" '
                   'hydra.run.dir="${hydra:runtime.cwd}/out"\n')
    assert not lint(text, "VL101")
    assert len(lint(text, "VL107")) == 2


def test_vl101_known_env_setting_with_globs():
    text = HEAD + 'echo "$CLUSTER_ROOT" "$MYORG_QUEUE"\n'
    assert len(lint(text, "VL101")) == 2
    assert not lint(text, "VL101", known_env=("CLUSTER_ROOT", "MYORG_*"))


def test_vl101_guarded_uses_are_skipped():
    text = HEAD + textwrap.dedent("""\
        if [[ -n "${RESUME:-}" ]]; then
            echo "$RESUME"
        fi
        [ -n "${TOKEN:-}" ] && echo "$TOKEN"
        case "${MODE:-}" in
          fast) echo "$MODE" ;;
        esac
        """)
    assert not lint(text, "VL101")


def test_vl101_names_the_scenario_and_branch():
    text = HEAD + device_case("GEN_TP=2", "export HCCL_CONNECT_TIMEOUT=1800") + \
        "python3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.tensor_model_parallel_size=$GEN_TP\n"
    [d] = lint(text, "VL101")
    assert d.scenarios == ("DEVICE=npu",)
    assert "unset when DEVICE=npu: only the `gpu` branch" in d.message


def test_vl101_points_at_the_name_inside_arithmetic():
    text = HEAD + "echo $((NUM_NODES * 8))\n"
    [d] = lint(text, "VL101")
    assert SourceText(text.encode()).slice(d.span) == "NUM_NODES"


@pytest.mark.parametrize("name,pool,expected", [
    ("last_layer", ["LAST_LAYER"], "LAST_LAYER"),
    ("LASTLAYER", ["LAST_LAYER"], "LAST_LAYER"),
    ("ROLOUT_N", ["ROLLOUT_N"], "ROLLOUT_N"),
    ("ROLLOUT_TP", ["ROLLOUT_N"], None),
    ("GEN_TP", ["GEN_PP"], None),  # short names: a one-letter change is another variable
])
def test_vl101_close_name(name, pool, expected):
    assert close_name(name, pool) == expected


# ---- VL102 branch-confined-setup ------------------------------------------------------------

def test_vl102_exit_branch_and_mirrors_are_not_missing():
    text = HEAD + device_case("unset http_proxy", "export http_proxy=http://proxy:3128") + LAUNCH
    assert not lint(text, "VL102")


def test_vl102_curl_without_output_is_not_a_download():
    text = HEAD + device_case("curl -s http://localhost:8265/api/version", ":") + LAUNCH
    assert not lint(text, "VL102")
    text = HEAD + device_case("wget -P \"$HOME/data\" https://x/gsm8k.parquet", ":") + LAUNCH
    [d] = lint(text, "VL102")
    assert "`wget`" in d.message and d.severity == Severity.WARNING


@pytest.mark.parametrize("install", [
    "pip install math-verify", "pip3.10 install math-verify", "/usr/bin/pip install math-verify",
    "python3 -m pip install math-verify", '"$PYTHON" -m pip install math-verify',
    "uv pip install math-verify", "conda run pip install math-verify",
    "sudo -E pip install math-verify", "env PIP_INDEX_URL=x pip install math-verify",
    "hf download Qwen/Qwen3-8B", "/opt/bin/huggingface-cli download Qwen/Qwen3-8B",
])
def test_vl102_recognises_each_way_to_install_or_download(install):
    """The cheap first-word filter in front of `setup_steps` must not hide any of these."""
    [d] = lint(HEAD + device_case(install, ":") + LAUNCH, "VL102")
    assert "runs only in" in d.message


def test_vl102_needs_a_launch_after_the_block():
    text = HEAD + LAUNCH + device_case("pip install math-verify", ":")
    assert not lint(text, "VL102")


# ---- VL103 array-not-passed -----------------------------------------------------------------

def test_vl103_eval_may_expand_any_array():
    text = HEAD + "REF=(actor_rollout_ref.ref.x=1)\neval \"python3 -m verl.trainer.main_ppo $ARGS\"\n"
    assert not lint(text, "VL103")


@pytest.mark.parametrize("indirect", [
    'NAME=REF\necho "${!NAME}"\n', 'echo "${!RE*}"\n', 'declare -n ARGS=REF\necho "${ARGS[@]}"\n',
    "source ./more_args.sh\n",
])
def test_vl103_indirect_expansion_may_expand_any_array(indirect):
    text = HEAD + "REF=(actor_rollout_ref.ref.x=1)\n" + LAUNCH
    assert lint(text, "VL103")
    assert not lint(text + indirect, "VL103")


def test_vl103_plain_lists_are_not_overrides():
    assert not lint(HEAD + "NODES=(node-0 node-1)\n" + LAUNCH, "VL103")


# ---- VL104 broken-continuation --------------------------------------------------------------

def test_vl104_trailing_space_fix_is_safe_and_complete():
    text = HEAD + "python3 -m verl.trainer.main_ppo \\ \n    trainer.n_gpus_per_node=8\n"
    [d] = lint(text, "VL104")
    fixed = apply(text, [d])
    assert fixed == text.replace("\\ \n", "\\\n") and not lint(fixed, "VL104")


def test_vl104_missing_backslash_fix_is_unsafe():
    text = HEAD + "python3 -m verl.trainer.main_ppo \\\n    a.b=1\n    trainer.n_gpus_per_node=8\n"
    [d] = lint(text, "VL104")
    assert d.fix.applicability == "unsafe"
    fixed = apply(text, [d], unsafe=True)
    assert "a.b=1 \\\n" in fixed and not lint(fixed, "VL104")


def test_vl104_override_line_after_an_unrelated_command_is_no_lost_continuation():
    """`echo hello` then `a.b=1`: no launch was cut, so neither the message ("bash ends the
    launch there") nor the fix (a `\\` after `echo hello`) would be true."""
    stray = "    trainer.n_gpus_per_node=8\n"
    assert not lint(HEAD + "echo hello\n" + stray, "VL104")
    assert not lint(HEAD + "mkdir -p out\nactor_rollout_ref.actor.x=1\n", "VL104")
    assert lint(HEAD + "python3 -m verl.trainer.main_ppo data.x=1\n" + stray, "VL104")
    assert lint(HEAD + "python3 -m verl.trainer.main_ppo \\\n    --config-name=t\n" + stray,
                "VL104")


def test_vl104_quoted_text_and_trailing_comment_are_fine():
    text = HEAD + textwrap.dedent("""\
        echo "first \\
        # still in the string
        a.b=1"
        python3 -m verl.trainer.main_ppo \\
            trainer.n_gpus_per_node=8
        # done
        echo ok
        """)
    assert not lint(text, "VL104")


def test_vl104_crlf_continuation_once_per_file_without_fix():
    lf = HEAD + ("python3 -m verl.trainer.main_ppo \\\n    data.train_batch_size=8 \\\n"
                 "    trainer.n_gpus_per_node=8\n" * 1) + "echo 'a \\\nb'\n"
    assert not lint(lf, "VL104")
    crlf = lf.replace("\n", "\r\n")
    [d] = lint(crlf, "VL104")
    line = HEAD.count("\n") + 1
    assert (d.span.line, d.span.column) == (line, len("python3 -m verl.trainer.main_ppo ") + 1)
    assert d.message == ("CRLF line endings: bash does not continue this line; convert the "
                         "file to LF")
    assert d.fix is None


def test_vl104_crlf_backslash_inside_quotes_is_not_a_continuation():
    text = HEAD.replace("\n", "\r\n") + "echo 'a \\\r\nb'\r\necho ok\r\n"
    assert not lint(text, "VL104")


# ---- VL105 duplicate-override ---------------------------------------------------------------

def test_vl105_severity_and_label():
    text = HEAD + "python3 -m verl.trainer.main_ppo a.b=1 c.d=2 a.b=3 c.d=2\n"
    first, second = lint(text, "VL105")
    assert first.severity == Severity.WARNING and second.severity == Severity.INFO
    assert first.labels[0].message == "first set here"
    assert SourceText(text.encode()).slice(first.labels[0].span) == "a.b"


def test_vl105_array_expanded_twice_is_not_two_settings():
    text = HEAD + 'A=(a.b=1)\npython3 -m verl.trainer.main_ppo "${A[@]}" "${A[@]}"\n'
    assert not lint(text, "VL105")


# ---- VL106 / VL107 fixes --------------------------------------------------------------------

def test_vl106_fix_quotes_every_form():
    text = HEAD + "A=(a.b=1)\npython3 -m verl.trainer.main_ppo ${A[@]} ${A[*]} $@ $*\n"
    found = lint(text, "VL106")
    assert len(found) == 4
    fixed = apply(text, found)
    assert fixed.endswith('"${A[@]}" "${A[@]}" "$@" "$@"\n') and not lint(fixed, "VL106")


def test_vl107_fixes_keep_the_interpolation_literal():
    text = HEAD + ('python3 -m verl.trainer.main_ppo a.b=${oc.env:HOME}/x '
                   'c.d="${actor_rollout_ref.actor.optim.lr}"\n')
    found = lint(text, "VL107")
    assert len(found) == 2 and all(d.severity == Severity.ERROR for d in found)
    fixed = apply(text, found)
    assert bash_ok(fixed) and not lint(fixed, "VL107")
    out = subprocess.run(["bash", "-c", "printf '%s\\n' " + fixed.splitlines()[-1].split(" ", 3)[3]],
                         capture_output=True, text=True).stdout
    assert out == "a.b=${oc.env:HOME}/x\nc.d=${actor_rollout_ref.actor.optim.lr}\n"


# ---- VL108 / VL109 --------------------------------------------------------------------------

def test_vl108_fix_adds_a_rejecting_branch():
    text = HEAD + 'case "$DEVICE" in\n  gpu)\n    X=1\n    ;;\n  npu)\n    X=2\n    ;;\nesac\n'
    [d] = lint(text, "VL108")
    fixed = apply(text, [d], unsafe=True)
    assert bash_ok(fixed) and "  *)\n    echo \"Unsupported DEVICE=${DEVICE}\" >&2\n" in fixed
    assert not lint(fixed, "VL108")


def test_vl108_earlier_if_guard_counts():
    text = HEAD + ('if [ "$DEVICE" != gpu ] && [ "$DEVICE" != npu ]; then exit 1; fi\n'
                   'case "$DEVICE" in\n  gpu) X=1 ;;\n  npu) X=2 ;;\nesac\n')
    assert not lint(text, "VL108")


def test_vl109_hoist_fix():
    text = HEAD + device_case("BS=256\nGEN_TP=2", "BS=256\nGEN_TP=4") + LAUNCH
    [d] = lint(text, "VL109")
    assert d.fix.applicability == "unsafe" and d.labels[0].message == "also set in the `npu` branch"
    fixed = apply(text, [d], unsafe=True)
    assert bash_ok(fixed) and fixed.count("BS=256") == 1
    assert fixed.index("BS=256") < fixed.index("case ") and not lint(fixed, "VL109")


def test_vl109_export_and_plain_assignment_differ():
    text = HEAD + device_case("export VLLM_USE_V1=1", "VLLM_USE_V1=1") + LAUNCH
    assert not lint(text, "VL109")


# ---- VL110 ------------------------------------------------------------------------------------

@pytest.mark.parametrize("name,dim", [
    ("RM_TP", "tensor"), ("GEN_TP", "tensor"), ("pp", "pipeline"), ("EXPERT_TP", "expert tensor"),
    ("ETP", "expert tensor"), ("ROLLOUT_EP_SIZE", "expert"), ("SP_SIZE", "sequence"),
    ("NGPUS", None), ("TP_PP", None), ("STEP", None),
])
def test_vl110_variable_dimension(name, dim):
    assert variable_dimension(name) == dim


def test_vl110_only_single_variable_values():
    text = HEAD + ("TP=2\nPP=2\npython3 -m verl.trainer.main_ppo "
                   "a.megatron.pipeline_model_parallel_size=$((TP*PP))"
                   " b.megatron.expert_model_parallel_size=${TP}\n")
    [d] = lint(text, "VL110")
    assert "`$TP`" in d.message and d.severity == Severity.INFO


def test_vl108_a_fixed_device_needs_no_fallback():
    body = 'case "$DEVICE" in\n  gpu) X=1 ;;\n  npu) X=2 ;;\nesac\n'
    assert not lint(HEAD + "DEVICE=npu\n" + body, "VL108")
    assert lint(HEAD + "DEVICE=${DEVICE:-npu}\n" + body, "VL108")


def test_findings_stop_at_the_first_parse_error():
    # the open quote flips bash's quoting for the rest of the file: "$@" is not unquoted
    text = HEAD + ('python3 -m verl.trainer.main_ppo \\\n    data.train_files="$HOME/x \\\n'
                   '    trainer.n_gpus_per_node=8 "$@"\n')
    assert not lint(text, "VL106")
    assert not lint(HEAD + 'A=(a.b=1)\ncase "$DEVICE" in\n  gpu) X=1 ;;\n', "VL103")


def test_vl109_device_stack_variables_are_left_to_vl406():
    text = HEAD + device_case("export NCCL_DEBUG=WARN", "export NCCL_DEBUG=WARN") + LAUNCH
    assert not lint(text, "VL109")


def test_vl102_a_step_already_done_before_the_case_is_not_confined():
    text = HEAD + "unset http_proxy\n" + device_case("unset http_proxy", ":") + LAUNCH
    assert not lint(text, "VL102")


def test_vl107_says_what_bash_does_with_a_resolver_under_set_u_and_without():
    launch = 'python3 -m verl.trainer.main_ppo trainer.experiment_name="run_${now:%H}"\n'
    [plain] = lint("#!/usr/bin/env bash\n" + launch, "VL107")
    [strict] = lint("#!/usr/bin/env bash\nset -euo pipefail\n" + launch, "VL107")
    [reset] = lint("#!/usr/bin/env bash\nset -u\nset +u\n" + launch, "VL107")
    assert "replaces it with an empty string" in plain.message
    assert "stops with `now: unbound variable` (`set -u`)" in strict.message
    assert "replaces it with an empty string" in reset.message


def test_vl102_a_device_the_script_fixes_runs_one_branch_only():
    case = device_case(":", "pip install math-verify")
    assert lint(HEAD + case + LAUNCH, "VL102")
    assert not lint(HEAD + case.replace("DEVICE=${DEVICE:-gpu}", "DEVICE=npu") + LAUNCH, "VL102")
    block = 'if [ "$DEVICE" = npu ]; then\n    pip install math-verify\nfi\n'
    assert lint(HEAD + "DEVICE=${DEVICE:-gpu}\n" + block + LAUNCH, "VL102")
    assert not lint(HEAD + "DEVICE=gpu\n" + block + LAUNCH, "VL102")

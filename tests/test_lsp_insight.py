"""Hover and completion content without a server process."""

from __future__ import annotations

from verl_lint.lsp.insight import Insight
from verl_lint.lsp.yaml_docs import _comment_lines, key_comment
from verl_lint.settings import Settings
from verl_lint.source import SourceText

SCRIPT = """#!/usr/bin/env bash
set -xeuo pipefail
# verl-lint: disable=VL002,no-such-rule
python3 -m verl.trainer.main_ppo \\
    actor_rollout_ref.rollout.tensor_model_parallel_size=4 \\
    actor_rollout_ref.ro
"""


def insight(text: str = SCRIPT) -> Insight:
    return Insight(SourceText(text.encode()), Settings(), "0.9.1")


def test_comment_blocks_and_trailing_comments_attach_to_their_key():
    docs = _comment_lines("defaults:\n  - x\n\n# the rollout\nrollout:\n\n  # TP size\n"
                          "  tp: 2\n  dp: 1  # data parallel\n  other: 3\n")
    assert docs == {"rollout": "the rollout", "rollout.tp": "TP size",
                    "rollout.dp": "data parallel"}


def test_key_comment_from_the_group_file():
    assert key_comment("0.9.1", "actor_rollout_ref.rollout.tensor_model_parallel_size") \
        .startswith("TP size for rollout")
    assert key_comment("0.9.1", "trainer.nnodes") == "Number of nodes used in the training"
    assert key_comment("0.9.1", "no.such.key") is None


def test_hover_on_suppression_codes():
    ins = insight()
    text, (start, end) = ins.hover(SCRIPT.index("VL002") + 2)
    assert "unused-suppression" in text and SCRIPT[start:end] == "VL002"
    text, _ = ins.hover(SCRIPT.index("no-such-rule") + 1)
    assert "no verl-lint rule" in text
    assert ins.hover(SCRIPT.index("set -x")) is None


def test_hover_on_suppression_codes_agrees_with_the_engine():
    text = "echo\n# verl-lint: disable=all\necho\n# not a directive: verl-lint: disable=VL201\n"
    ins = insight(text)
    found, (start, end) = ins.hover(text.index("all") + 1)
    assert text[start:end] == "all" and "every verl-lint rule" in found
    assert ins.hover(text.index("VL201") + 1) is None  # the engine ignores this comment too


def test_hover_on_key_shows_value_origin_default_and_comment():
    ins = insight()
    found = ins.hover(SCRIPT.index("tensor_model_parallel_size"))
    assert found is not None
    text, (start, end) = found
    assert SCRIPT[start:end] == "actor_rollout_ref.rollout.tensor_model_parallel_size"
    assert "`4`" in text and "line 5" in text
    assert "> TP size for rollout" in text


def test_key_prefix_only_inside_a_key():
    ins = insight()
    end = SCRIPT.index("actor_rollout_ref.ro\n") + len("actor_rollout_ref.ro")
    assert ins.key_prefix(end) == ("actor_rollout_ref.ro", end - len("actor_rollout_ref.ro"))
    value = SCRIPT.index("=4") + 2
    assert ins.key_prefix(value) is None


def test_completion_offers_children_and_plus_only_dataclass_fields():
    text = "python3 -m verl.trainer.main_ppo \\\n    actor_rollout_ref.actor.optim.l"
    ins = insight(text)
    items, seg_start = ins.completions(len(text.encode()))
    assert text.encode()[seg_start:] == b"l"
    assert ("lr", True, 1e-06) in [(c.label, c.leaf, c.default) for c in items]
    assert all(c.label.startswith("l") for c in items)
    text = "python3 -m verl.trainer.main_ppo \\\n    actor_rollout_ref.actor."
    items, _ = insight(text).completions(len(text.encode()))
    plus = [c for c in items if c.needs_plus]
    groups = [c.label for c in items if not c.leaf]
    assert "optim" in groups and "checkpoint" in groups
    # fields of the actor's dataclass that verl's YAML leaves out need `+` to be set
    assert plus and all(c.leaf for c in plus)
    assert not {c.label for c in plus} & {c.label for c in items if not c.needs_plus}


def test_completion_marks_dict_fields_whose_keys_need_plus():
    text = "python3 -m verl.trainer.main_ppo \\\n    actor_rollout_ref.rollout.engine_kwargs."
    items, _ = insight(text).completions(len(text.encode()))
    vllm = next(c for c in items if c.label == "vllm")
    assert vllm.open_dict and vllm.needs_plus
    typed = "python3 -m verl.trainer.main_ppo \\\n    +actor_rollout_ref.rollout.engine_kwargs."
    items, _ = insight(typed).completions(len(typed.encode()))
    assert not next(c for c in items if c.label == "vllm").needs_plus


def test_hover_shows_each_scenario_and_where_its_variable_was_set():
    text = """#!/usr/bin/env bash
case "${DEVICE:-gpu}" in
  gpu) PP=2 ;;
  npu) PP=4 ;;
  *) exit 1 ;;
esac
python3 -m verl.trainer.main_ppo \\
    actor_rollout_ref.rollout.pipeline_model_parallel_size=${PP}
"""
    text_md, _ = insight(text).hover(text.index("pipeline_model"))
    assert "| DEVICE=gpu | `2` | set at line 8, $PP from line 3 |" in text_md
    assert "| DEVICE=npu | `4` | set at line 8, $PP from line 4 |" in text_md


ARRAYS = """#!/bin/bash
ACTOR=(
    actor_rollout_ref.actor.optim.lr=1e-6
    actor_rollout_ref.ro
    actor_rollout_ref.actor.use_dynamic_bsz=
    actor_rollout_ref.actor.strategy=fsdp
)
UNUSED=(
    actor_rollout_ref.ro
)
echo actor_rollout_ref.ro
python3 -m verl.trainer.main_ppo "${ACTOR[@]}" model_engine=megatron
"""


def test_completion_in_an_override_array_of_the_launch_only():
    ins = insight(ARRAYS)
    in_array = ARRAYS.index("actor_rollout_ref.ro\n") + len("actor_rollout_ref.ro")
    assert [c.label for c in ins.completions(in_array)[0]] == ["rollout"]
    value = ARRAYS.index("use_dynamic_bsz=") + len("use_dynamic_bsz=")
    assert [c.label for c in ins.value_completions(value)[0]] == ["true", "false"]
    unused = ARRAYS.index("actor_rollout_ref.ro\n)\necho") + len("actor_rollout_ref.ro")
    echo = ARRAYS.index("echo actor_rollout_ref.ro") + len("echo actor_rollout_ref.ro")
    assert ins.completions(unused) is None and ins.completions(echo) is None


def test_value_completion_offers_group_options():
    text = "python3 -m verl.trainer.main_ppo \\\n    model_engine=me"
    items, start = insight(text).value_completions(len(text.encode()))
    assert [c.label for c in items] == ["megatron"]
    assert text.encode()[start:] == b"me"


def test_hover_on_a_group_option_names_its_line():
    text, _ = insight(ARRAYS).hover(ARRAYS.index("model_engine=meg") + 2)
    assert "Effective value: `megatron` (config group option, set at line 12)" in text
    assert "verl default: `dp`" in text

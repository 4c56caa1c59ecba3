"""The miners' bundled data is what the miners make of verl's releases (skipped without them)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from verl_lint.verl.data import DATA_DIR
from verl_lint.verl.mine.constraints import mine_constraints

SRC = Path("/tmp/verl-src")


@pytest.mark.skipif(not SRC.is_dir(), reason="verl's unpacked releases are not here")
def test_bundled_mined_data_is_regenerated_from_verl():
    """What `scripts/build_verl_data.py` writes is what the miners make of each release."""
    from verl_lint.verl.mine import knowledge_miners, render_knowledge
    from verl_lint.verl.sources import TreeFiles

    for name, miner in knowledge_miners().items():
        bundled = json.loads((DATA_DIR / name).read_text(encoding="utf-8"))
        for version in ("0.4.0", "0.7.1", "0.9.1"):  # mining takes seconds: a sample
            if version in bundled and (SRC / version / "verl").is_dir():
                got = miner(TreeFiles.scan(SRC / version))
                assert render_knowledge(got) == render_knowledge(bundled[version]), \
                    f"{name} {version}: run scripts/build_verl_data.py"


def _tree(source: str, path: str = "verl/workers/rollout/sglang_rollout/sglang_rollout.py"):
    # the trainer calls the public methods
    caller = "def step(rollout, batch):\n    rollout.generate_sequences(batch)\n    rollout.a()\n"
    return {path: source.encode(), "verl/trainer/step.py": caller.encode()}


def test_requirement_under_the_callers_condition():
    mined = mine_constraints(_tree('''
class SGLangRollout:
    def generate_sequences(self, prompts):
        if self.config.multi_turn.enable:
            return self._req_level(prompts)
        return self._batch_level(prompts)

    def deprecated_alias(self, prompts):
        return self._req_level(prompts)

    def _req_level(self, prompts):
        if self._tp_rank == 0:
            assert "raw_prompt" in prompts, f"need data.return_raw_chat=True, got {prompts}"
'''))
    (site,) = mined["sites"]
    assert site["require"] == {"key": "data.return_raw_chat", "value": True}
    assert site["when"] == [{"key": "multi_turn.enable", "op": "truthy"}]
    assert site["engine"] == "sglang"
    assert site["at"].endswith(":13")


def test_callers_that_disagree_or_unreadable_conditions_give_no_condition():
    mined = mine_constraints(_tree('''
class R:
    def a(self):
        if self.config.x.enable:
            self._check()

    def b(self):
        if self.config.y == "z":
            self._check()

    def _check(self):
        raise ValueError("set data.return_raw_chat=True")

    def c(self, n):
        if n > len(self.config.y):
            raise ValueError(f"rollout.n={n} is too large, set rollout.mode=async")
'''))
    # `b` is dead code, so `_check` runs under `a`'s condition only
    assert [s["when"] for s in mined["sites"]] == [[{"key": "x.enable", "op": "truthy"}], None]
    assert [s["require"]["key"] for s in mined["sites"]] == ["data.return_raw_chat",
                                                             "rollout.mode"]


def test_post_init_fields_are_the_configs_own():
    mined = mine_constraints(_tree('''
class ActorConfig:
    def __post_init__(self):
        if self.router_replay.mode != "disabled" and not self.use_remove_padding:
            raise RuntimeError("router_replay requires actor.use_remove_padding=True.")
''', "verl/workers/config/actor.py"))
    (site,) = mined["sites"]
    assert site["when"] == [
        {"key": "self.router_replay.mode", "op": "!=", "value": "disabled"},
        {"key": "self.use_remove_padding", "op": "falsy"}]
    assert site["engine"] is None
    assert json.dumps(mined)


def test_model_support_lists():
    from verl_lint.verl.mine.model_support import mine_model_support

    mined = mine_model_support({
        "verl/models/mcore/registry.py": b'''
from enum import Enum
class SupportedModel(Enum):
    LLAMA = "LlamaForCausalLM"
    QWEN2 = "Qwen2ForCausalLM"

def get_supported_model(model_type):
    return SupportedModel(model_type)
''',
        "verl/models/transformers/monkey_patch.py": b'''
def patch(model):
    if model.config.model_type in ["qwen2_5_vl", "qwen2_vl"]:
        pass
    elif model.config.model_type == "glm4v":
        pass
'''})
    assert mined["mcore_architectures"] == {"values": ["LlamaForCausalLM", "Qwen2ForCausalLM"],
                                            "at": "verl/models/mcore/registry.py:3"}
    assert mined["mcore_lookup"] == "verl/models/mcore/registry.py:7"
    assert mined["model_types"] == {
        "glm4v": "verl/models/transformers/monkey_patch.py:5",
        "qwen2_5_vl": "verl/models/transformers/monkey_patch.py:3",
        "qwen2_vl": "verl/models/transformers/monkey_patch.py:3"}

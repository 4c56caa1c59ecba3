"""Miners: knowledge read from a verl source tree, never by importing it.

Every miner is a pure function of `files` — a mapping from paths relative to a tree's root
(`verl/trainer/ppo/core_algos.py`, `verl/trainer/config/ppo_trainer.yaml`) to bytes — and returns
JSON-able data with its evidence (`file:line`). The same miners serve the releases bundled with
verl-lint (`scripts/build_verl_data.py` runs them over verl's wheels) and a verl tree on disk (a
vendored or modified `verl/` in the user's workspace, or the installed distribution's files):
one code path, so a fork is judged exactly as a release is.
"""


def knowledge_miners():
    """{bundled file: miner} for the knowledge the VL4xx rules read per release (startup asserts,
    model-support lists). Their data stays per bundled release: mining them takes seconds, so a
    verl tree on disk uses the nearest bundled release's (its config and code facts are its own)."""
    from verl_lint.verl.mine.constraints import mine_constraints
    from verl_lint.verl.mine.model_support import mine_model_support

    return {"mined_constraints.json": mine_constraints, "model_support.json": mine_model_support}


def render_knowledge(data: dict) -> str:
    """How the build script writes a knowledge file ({version: mined}), stable for review."""
    import json

    return json.dumps(data, indent=1, sort_keys=True, ensure_ascii=False) + "\n"

"""Miners: knowledge read from a verl source tree, never by importing it.

Every miner is a pure function of `files` — a mapping from paths relative to a tree's root
(`verl/trainer/ppo/core_algos.py`, `verl/trainer/config/ppo_trainer.yaml`) to bytes — and returns
JSON-able data with its evidence (`file:line`). The same miners serve the releases bundled with
verl-lint (`scripts/build_verl_data.py` runs them over verl's wheels) and a verl tree on disk (a
vendored or modified `verl/` in the user's workspace, or the installed distribution's files):
one code path, so a fork is judged exactly as a release is.
"""

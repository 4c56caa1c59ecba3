"""The warm path: a run answered from the result cache imports no heavy module, and the pieces
it is made of (the JSON writer, the installed-verl pre-check) give what the slow ones give."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from verl_lint.report.encode import dumps

SCRIPT = """#!/bin/bash
python3 -m verl.trainer.main_ppo \\
    data.train_batch_size=1024 \\
    actor_rollout_ref.actor.ppo_mini_batch_size=256 \\
    trainer.unknown_key=1 \\
    trainer.total_epochs=2
"""

HEAVY = ("pydantic", "rich", "tree_sitter", "tree_sitter_bash", "omegaconf", "hydra",
         "verl_lint.engine", "verl_lint.verl.release", "verl_lint.rules.base",
         "importlib.metadata")


@pytest.mark.parametrize("args", [["--format", "json"], ["--format", "concise"],
                                  ["--format", "json", "--verl-version", "0.9.1"]])
def test_a_run_answered_from_the_cache_imports_nothing_heavy(tmp_path, args):
    for name in ("a.sh", "sub/b.sh"):
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text(SCRIPT)
    env = dict(os.environ, VERL_LINT_CACHE_DIR=str(tmp_path / "cache"))
    env.pop("VERL_LINT_NO_CACHE", None)
    probe = ("import sys; from verl_lint.cli import main\n"
             "try:\n    main()\nexcept SystemExit:\n    pass\n"
             f"print('LOADED', sorted(m for m in {HEAVY!r} if m in sys.modules), file=sys.stderr)")
    cmd = [sys.executable, "-c", probe, "check", *args, "--exit-zero", "a.sh", "sub"]
    cold = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True)
    assert "LOADED ['" in cold.stderr  # linting loads them: the probe sees imports
    warm = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True)
    assert warm.stdout == cold.stdout
    assert "LOADED []" in warm.stderr, warm.stderr


SHAPES = [
    {}, [], "", 0, -1, 10**30, 1.5, -0.0, 1e300, math.inf, -math.inf, math.nan, True, None,
    {"a": [], "b": {}, "c": [[]], "d": [{}], "e": [1, "x", None, False, 2.5]},
    {"unicode": "é ü 中文 \u2028 \U0001f600", "escapes": "\"\\\n\r\t\b\f\x00\x1f\x7f"},
    {1: "int key", 2.5: "float key", True: "bool key", None: "none key", "s": ("tuple",)},
    [[[[["deep"]]]]], {"k": {"k": {"k": {"k": [1, [2, [3, {}]]]}}}},
]


@pytest.mark.parametrize("obj", SHAPES, ids=range(len(SHAPES)))
def test_dumps_is_json_dumps_with_indent(obj):
    assert dumps(obj) == json.dumps(obj, indent=2, ensure_ascii=False)


def test_dumps_refuses_what_json_refuses():
    for bad in ({"x": {1, 2}}, {(1, 2): "tuple key"}, [object()]):
        with pytest.raises(TypeError):
            json.dumps(bad, indent=2)
        with pytest.raises(TypeError):
            dumps(bad)


@pytest.mark.parametrize("names, expected", [
    ([], False),
    (["verl_lint-0.1.0.dist-info", "verlx-1.0.dist-info", "verl.py", "verl"], False),
    (["verl-0.5.0.dist-info"], True),
    (["Verl-0.9.1.dist-info"], True),
    (["verl-0.4.0-py3.11.egg-info"], True),
    (["verl.dist-info"], True),
])
def test_the_installed_verl_precheck_agrees_with_importlib_metadata(tmp_path, monkeypatch, names,
                                                                    expected):
    from importlib import metadata

    from verl_lint.verl import sources

    for name in names:
        (tmp_path / name).mkdir()
        if name.endswith("-info"):
            (tmp_path / name / "METADATA").write_text("Name: verl\nVersion: 0.5.0\n")
    monkeypatch.setattr(sys, "path", [str(tmp_path)])
    sources.may_be_installed.cache_clear()
    try:
        found = sources.may_be_installed()
    finally:
        sources.may_be_installed.cache_clear()
    try:
        metadata.distribution("verl")
        real = True
    except metadata.PackageNotFoundError:
        real = False
    assert real == expected
    assert found or not real  # never says "not installed" where importlib.metadata finds it
    assert found == expected

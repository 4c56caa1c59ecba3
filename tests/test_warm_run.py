"""The warm run (every file answered from the result cache) does little per file: what each of
its shortcuts replaced still gives the same answer."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from test_result_cache import cache_dir  # noqa: F401 - a private cache, the verl configs warm
from verl_lint import fileio
from verl_lint.cli import main
from verl_lint.verl.choice import header_pin, header_text

ROOT = Path(__file__).parent.parent

# pieces that make header lines, pins and every line end or space `str.splitlines`/`strip` know
_PIECES = ["#", "#!/bin/bash", " ", "\t", "\n", "\r", "\r\n", "\v", "\f", "\x1c", "\x1d", "\x1e",
           "\x1f", "\x85", "\xa0", "\u2028", "\u2029", "\u3000", "verl", "==", " == ", "v",
           "0.8.0", "1.", "verl==0.9.1", "pip install verl==0.6.1.", "set -x", "x", "é", "中"]


@settings(max_examples=3000, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), max_size=80), st.integers(0, 45))
def test_the_header_pin_of_the_header_text_is_the_scripts(pieces, comment_lines):
    # the result cache reads the pin from `header_text` (most scripts are not decoded)
    text = "# c\n" * comment_lines + "".join(pieces)
    assert header_pin(header_text(text.encode())) == header_pin(text)


def test_header_text_is_empty_without_a_pin_in_reach():
    for before, pin in ((37, "0.8.0"), (38, "0.8.0"), (39, None)):  # the pin on line 39, 40, 41
        data = b"#!/bin/bash\n" + b"# c\n" * before + b"# verl==0.8.0\n"
        assert header_pin(header_text(data)) == header_pin(data.decode()) == pin
    assert header_text(b"#!/bin/bash\nset -x\n[ \"$a\" == b ]\n") == ""  # past the header
    assert header_text(b"#!/bin/bash\n  # torch==2.8\nset -x\n") != ""  # in it: read
    assert header_text(b"#!/bin/bash\n" + b"echo\n" * 39 + b"# verl==0.8.0\n") == ""
    assert header_text(b"#!/bin/bash\n# verl==0.8.0\n" + b"x\n" * 100).count("\n") == 40


# ---- the `json` format's text kept with the findings ------------------------------------------

@pytest.fixture
def fixable(tmp_path):
    """Scripts with findings that carry fixes (their edits' lines and columns are in the JSON)."""
    folder = tmp_path / "scripts"
    folder.mkdir()
    for sub in ("VL102", "VL111", "VL201"):
        for p in sorted((ROOT / "fixtures" / "rules" / sub).glob("*.sh")):
            shutil.copyfile(p, folder / f"{sub}_{p.name}")
    return folder


def _cli(*args: str) -> str:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return result.output


def test_a_cached_json_run_neither_positions_nor_encodes_the_findings(cache_dir, fixable,
                                                                      monkeypatch):
    from verl_lint.report import json as json_format
    from verl_lint.source import SourceText

    args = ("check", "--format", "json", "--exit-zero", str(fixable))
    uncached = _cli(*args[:-1], "--no-cache", str(fixable))
    assert '"edits": [' in uncached and '"end_column"' in uncached
    assert _cli(*args) == uncached  # fills the cache

    def refuse(*_args, **_kwargs):
        raise AssertionError("a cached finding was rendered again")

    monkeypatch.setattr(json_format, "diagnostic_dict", refuse)
    monkeypatch.setattr(json_format, "file_dict", refuse)
    monkeypatch.setattr(SourceText, "position", refuse)
    # bytes an entry was made from were a script when linted: not decoded to check again
    monkeypatch.setattr(fileio, "script_problem", refuse)
    assert _cli(*args) == uncached


def test_a_run_wide_finding_is_dropped_with_its_json_text(cache_dir, fixable):
    # VL003 (no bundled data for this verl) is reported on the first file only: a cached file
    # keeps its own copy, which must go with its text
    args = ("check", "--format", "json", "--exit-zero", "--verl-version", "0.3.0", str(fixable))
    uncached = _cli(*args[:-1], "--no-cache", str(fixable))
    assert uncached.count('"code": "VL003"') == 1
    assert _cli(*args) == uncached
    assert _cli(*args) == uncached


def test_a_file_the_cache_misses_is_read_once(cache_dir, fixable, monkeypatch):
    reads: list[str] = []
    real = fileio.read_bounded

    def counting(path, *args, **kwargs):
        reads.append(str(path))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(fileio, "read_bounded", counting)
    first = _cli("check", "-j", "1", "--format", "json", "--exit-zero", str(fixable))
    scripts = sorted(str(p) for p in fixable.glob("*.sh"))
    # looked up, missed, linted and stored from the one read
    assert sorted(r for r in reads if r.endswith(".sh")) == scripts
    reads.clear()
    assert _cli("check", "-j", "1", "--format", "json", "--exit-zero", str(fixable)) == first
    assert sorted(r for r in reads if r.endswith(".sh")) == scripts


# ---- `--device`: told per file, after the cache ---------------------------------------------

DEVICE_CASE = """#!/usr/bin/env bash
set -xeuo pipefail
DEVICE=${DEVICE:-gpu}
case "${DEVICE}" in
    gpu) export CUDA_VISIBLE_DEVICES=0,1,2,3 ;;
    npu) export ASCEND_RT_VISIBLE_DEVICES=0,1,2,3 ;;
esac
python3 -m verl.trainer.main_ppo \\
    actor_rollout_ref.rollout.name=vllm \\
    trainer.n_gpus_per_node=4
"""


@pytest.fixture
def device_scripts(tmp_path):
    folder = tmp_path / "device"
    folder.mkdir()
    for name in ("a.sh", "b.sh"):
        (folder / name).write_text(DEVICE_CASE)
    (folder / "plain.sh").write_text("#!/bin/bash\npython3 -m verl.trainer.main_ppo "
                                     "trainer.n_gpus_per_node=4\n")
    return folder


def _run(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def test_a_cached_device_run_does_not_parse_the_scripts(cache_dir, device_scripts, monkeypatch):
    from verl_lint.cli import check

    args = ("check", "--format", "json", "--device", "npu", str(device_scripts))
    uncached = _run(*args[:-1], "--no-cache", str(device_scripts))
    first = _run(*args)
    assert (first.output, first.exit_code) == (uncached.output, uncached.exit_code)

    def refuse(*_args, **_kwargs):
        raise AssertionError("a cached script was parsed for its device")

    monkeypatch.setattr(check, "device_mismatch", refuse)
    again = _run(*args)
    assert (again.output, again.exit_code) == (uncached.output, uncached.exit_code)


def test_a_device_run_reads_each_script_once(cache_dir, device_scripts, monkeypatch):
    reads: list[str] = []
    real = fileio.read_bounded

    def counting(path, *args, **kwargs):
        reads.append(os.path.basename(path))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(fileio, "read_bounded", counting)
    result = _run("check", "--format", "json", "--device", "npu", str(device_scripts))
    assert result.exit_code == 1, result.output
    assert sorted(reads) == ["a.sh", "b.sh", "plain.sh"]  # looked up, device checked, linted


def test_a_cache_miss_is_looked_up_once(cache_dir, device_scripts, monkeypatch):
    from verl_lint.result_cache import ResultCache

    looks: list[str] = []
    real = ResultCache.load

    def counting(self, path, *args):
        looks.append(os.path.basename(path))
        return real(self, path, *args)

    monkeypatch.setattr(ResultCache, "load", counting)
    result = _run("check", "--format", "json", str(device_scripts))
    assert result.exit_code == 1, result.output
    assert sorted(looks) == ["a.sh", "b.sh", "plain.sh"]  # by check, not again by the engine


@pytest.mark.parametrize("cache", [True, False])
def test_a_device_a_script_never_tests_is_still_an_error_line(cache_dir, device_scripts, cache):
    args = ["check", "--format", "concise", "--device", "tpu", str(device_scripts)]
    if not cache:
        args.insert(1, "--no-cache")
    for _ in range(2):  # filling the cache, then from it
        result = _run(*args)
        assert result.exit_code == 2
        errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
        assert errors == [f"error: {device_scripts / n}: device 'tpu' is not one this script "
                          f"tests ($DEVICE: gpu, npu); nothing to lint for it"
                          for n in ("a.sh", "b.sh")]
        assert "plain.sh" not in result.stderr


def test_a_cached_json_run_imports_no_json_encoder(cache_dir, fixable):
    # what is left to encode (the document's few keys and values) is plain ASCII
    probe = ("import sys; from verl_lint.cli import main\n"
             "try:\n    main()\nexcept SystemExit:\n    pass\n"
             "print('JSON' if 'json' in sys.modules else 'NO JSON', file=sys.stderr)")
    cmd = [sys.executable, "-c", probe, "check", "--format", "json", "--exit-zero",
           str(fixable)]
    env = dict(os.environ)
    cold = subprocess.run(cmd, env=env, capture_output=True, text=True)
    warm = subprocess.run(cmd, env=env, capture_output=True, text=True)
    assert warm.stdout == cold.stdout and '"diagnostics": [' in warm.stdout
    assert "NO JSON" in warm.stderr, warm.stderr


def test_a_command_rarely_collects_garbage(cache_dir, fixable):
    # the interpreter starts with gen-0 threshold 700: importing click and verl-lint alone
    # made ≈ 40 collections
    probe = ("import gc, sys\n"
             "def count():\n    return sum(s['collections'] for s in gc.get_stats())\n"
             "before = count()  # the interpreter's own start\n"
             "from verl_lint.console import entry  # as the console script does\n"
             "from verl_lint.cli import main\n"
             "try:\n    main()\nexcept SystemExit:\n    pass\n"
             "print('COLLECTIONS', count() - before, file=sys.stderr)")
    cmd = [sys.executable, "-c", probe, "check", "--format", "json", "--exit-zero",
           str(fixable)]
    subprocess.run(cmd, capture_output=True, text=True)  # fills the cache
    warm = subprocess.run(cmd, capture_output=True, text=True)
    count = int(warm.stderr.split("COLLECTIONS")[1].split()[0])
    assert count <= 2, warm.stderr


def test_importing_the_cli_keeps_the_callers_collector_settings():
    # only the console script's own process raises the threshold (verl_lint.console)
    probe = ("import gc\nbefore = gc.get_threshold()\nimport verl_lint.cli\n"
             "print(gc.get_threshold() == before)")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert out.stdout.strip() == "True", out.stderr


def test_real_folder_is_realpath_built_on_the_parents(tmp_path):
    base = tmp_path
    (base / "a" / "b" / "c").mkdir(parents=True)
    (base / "x" / "y").mkdir(parents=True)
    (base / "a" / "lx").symlink_to(base / "x")
    (base / "a" / "ly").symlink_to("../x/y")
    (base / "a" / "rel").symlink_to("b")
    (base / "loop").symlink_to(base / "loop")
    folders = ["a/b/c", "a/lx/y", "a/ly", "a/ly/..", "a/rel/c", "a/b/../lx", "a//b/", "a/./b",
               "loop/z", "missing/deep"]
    for folder in folders:
        fileio.real_folder.cache_clear()
        path = f"{base}/{folder}"
        assert fileio.real_folder(path) == os.path.realpath(path), folder
    fileio.real_folder.cache_clear()


def test_real_path_of_a_file_is_realpath_relative_and_after_a_link(tmp_path, monkeypatch):
    # `link/..` is the link target's parent, not the link's folder: text alone cannot say
    (tmp_path / "here").mkdir()
    (tmp_path / "elsewhere" / "sub").mkdir(parents=True)
    (tmp_path / "here" / "link").symlink_to("../elsewhere/sub")
    monkeypatch.chdir(tmp_path)
    for path in ["here/link/../x.sh", "here/link/x.sh", "here/x.sh", "./here/../here/x.sh",
                 "x.sh", f"{tmp_path}/here/link/../x.sh"]:
        fileio.real_folder.cache_clear()
        assert fileio.real_path(path) == os.path.realpath(path), path
    fileio.real_folder.cache_clear()


@pytest.mark.parametrize("extend", [False, True])
def test_a_cached_sarif_run_lists_the_rules_without_loading_them(cache_dir, fixable, extend):
    import test_knowledge

    folder = fixable
    if extend:  # a team's rule added at run time is listed too
        (fixable.parent / "team").mkdir()
        folder = test_knowledge._project(fixable.parent / "team", test_knowledge.TEAM_RULE).parent
    probe = ("import sys; from verl_lint.cli import main\n"
             "try:\n    main()\nexcept SystemExit:\n    pass\n"
             "print('RULES LOADED' if 'verl_lint.rules.base' in sys.modules else 'NO RULES',"
             " file=sys.stderr)")
    cmd = [sys.executable, "-c", probe, "check", "--format", "sarif", "--exit-zero", "."]
    uncached = subprocess.run([*cmd[:-1], "--no-cache", "."], cwd=folder, capture_output=True,
                              text=True)
    assert ('"id": "TEAM101"' in uncached.stdout) == extend and '"id": "VL101"' in uncached.stdout
    for _ in range(2):  # fills the caches, then answers from them
        warm = subprocess.run(cmd, cwd=folder, capture_output=True, text=True)
        assert warm.stdout == uncached.stdout
    # (a team's rules are built from their YAML on every start: the rules' base loads then)
    assert extend or "NO RULES" in warm.stderr, warm.stderr

"""`Workspace.for_script` is worked out once per folder: the same folder as `(cwd / path).parent`
for any spelling of the script's path."""

from __future__ import annotations

from pathlib import Path

import pytest

from verl_lint.verl.sources import Workspace


@pytest.mark.parametrize("path", ["run.sh", "a/run.sh", "a/b/run.sh", "./run.sh", "a/./b.sh",
                                  "a//b.sh", "../x.sh", "a/../b.sh", "..", "a/b/", "/abs/x.sh",
                                  "/", "a/", "x/.."])
def test_the_scripts_folder_is_its_parent(path, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    ws = Workspace.for_script(path)
    assert ws.script_dir == (Path.cwd() / path).parent
    assert ws.cwd == Path.cwd()


def test_a_new_working_folder_is_seen(tmp_path, monkeypatch):
    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    monkeypatch.chdir(tmp_path / "one")
    assert Workspace.for_script("run.sh").script_dir == tmp_path / "one"
    monkeypatch.chdir(tmp_path / "two")
    assert Workspace.for_script("run.sh").script_dir == tmp_path / "two"


def test_clear_caches_sees_a_new_git_root(tmp_path):
    # an editor session or `--watch` outlives `git init`: the workspace must follow it
    from verl_lint.settings import clear_caches
    from verl_lint.verl.sources import git_root

    (tmp_path / "a" / "b").mkdir(parents=True)
    before = git_root(tmp_path / "a" / "b")
    (tmp_path / "a" / ".git").mkdir()
    assert git_root(tmp_path / "a" / "b") == before  # remembered until cleared
    clear_caches()
    assert git_root(tmp_path / "a" / "b") == (tmp_path / "a").resolve()


def test_scripts_of_one_folder_share_one_workspace(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert Workspace.for_script("a/x.sh") is Workspace.for_script("a/y.sh")
    assert Workspace.for_script("a/x.sh") is not Workspace.for_script("b/x.sh")

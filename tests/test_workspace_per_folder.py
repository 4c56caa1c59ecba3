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

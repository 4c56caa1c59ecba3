"""`verl_lint.verl.cache.store`: an entry is written whole to a temporary file of this process
and moved into place, its folder made when missing (the first entry, or after `verl-lint clean`),
no temporary left behind; a folder that cannot be written only costs speed."""

from __future__ import annotations

import os
import shutil

import pytest

from verl_lint.verl import cache


@pytest.fixture
def root(tmp_path, monkeypatch):
    monkeypatch.setenv("VERL_LINT_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("VERL_LINT_NO_CACHE", raising=False)
    cache.cache_root.cache_clear()
    yield cache.cache_root()
    cache.cache_root.cache_clear()


def _files(folder):
    return sorted(os.listdir(folder)) if os.path.isdir(folder) else []


def test_an_entry_is_stored_whole_and_its_folder_made_again_after_a_clean(root):
    cache.store("ns", "key", {"value": list(range(1000))})
    assert cache.load("ns", "key") == {"value": list(range(1000))}
    shutil.rmtree(root / "ns")  # `verl-lint clean` while a `--watch` runs
    cache.store("ns", "key", "again")
    assert cache.load("ns", "key") == "again"
    assert [n for n in _files(root / "ns") if n.startswith(".tmp-")] == []


def test_a_temporary_left_by_a_killed_process_of_this_pid_is_not_reused(root):
    cache.store("ns", "first", 1)
    stale = root / "ns" / f".tmp-{os.getpid()}-{cache._temporaries + 1}.pickle"
    stale.write_bytes(b"someone else's")
    cache.store("ns", "second", 2)
    assert cache.load("ns", "second") == 2
    assert stale.read_bytes() == b"someone else's"


def test_a_folder_that_cannot_be_written_only_costs_speed(root):
    root.mkdir(parents=True, exist_ok=True)
    (root / "ns").write_text("a file where the folder should be")  # as root, no mode stops us
    cache.store("ns", "key", 1)  # no exception
    assert cache.load("ns", "key") is cache.MISS

"""The result cache: a cached run prints exactly what an uncached one does, in every format and
with fixes; edits, settings and code changes miss; `--no-cache`, VERL_LINT_NO_CACHE, `clean`,
the size bound, concurrent runs and a corrupt entry behave; `--watch` re-lints on change."""

from __future__ import annotations

import os
import pickle
import shutil
import subprocess
import sys
import threading
import time
from dataclasses import asdict, replace
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest
from click.testing import CliRunner

from verl_lint import result_cache
from verl_lint.cli import main
from verl_lint.engine import lint_paths
from verl_lint.report import FORMATS
from verl_lint.settings import SettingsResolver
from verl_lint.verl import cache as disk

ROOT = Path(__file__).parent.parent
VERL_CORPUS = ROOT.parent / "shared" / "corpus" / "verl-head"


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    """A private cache directory holding the verl config cache of the session's one (warm)."""
    target = tmp_path / "cache"
    source = disk.cache_root()
    if source is not None and source.is_dir():  # composed configs: as after install
        shutil.copytree(source, target / source.name,
                        ignore=shutil.ignore_patterns(result_cache.NAMESPACE))
    monkeypatch.setenv("VERL_LINT_CACHE_DIR", str(target))
    monkeypatch.delenv("VERL_LINT_NO_CACHE", raising=False)
    disk.cache_root.cache_clear()
    yield target
    disk.cache_root.cache_clear()


@pytest.fixture
def scripts(tmp_path):
    folder = tmp_path / "scripts"
    shutil.copytree(ROOT / "fixtures" / "corpus", folder)
    for sub in ("VL102", "VL201", "VL205", "VL301"):  # fixable findings among them
        for p in (ROOT / "fixtures" / "rules" / sub).glob("*.sh"):
            shutil.copyfile(p, folder / f"{sub}_{p.name}")
    return folder


def storable(folder: Path) -> int:
    """How many of the scripts the cache may keep."""
    return sum(r.depends_on is not None for r in lint_paths(sorted(folder.rglob("*.sh")),
                                                            SettingsResolver()))


def entries() -> list[Path]:
    folder = disk.cache_root() / result_cache.NAMESPACE
    return sorted(folder.glob("*.pickle")) if folder.is_dir() else []


def cli(*args: str, env: dict | None = None):
    return CliRunner().invoke(main, list(args), env=env, catch_exceptions=False)


@pytest.mark.parametrize("fmt", [*FORMATS, "statistics"])
def test_cached_output_is_identical_in_every_format(cache_dir, scripts, fmt):
    args = ["--statistics"] if fmt == "statistics" else ["--format", fmt, "--no-color"]
    uncached = cli("check", *args, "--no-cache", str(scripts))
    assert not entries()
    first = cli("check", *args, str(scripts))  # fills the cache
    stored = entries()
    assert len(stored) == storable(scripts) == len(list(scripts.rglob("*.sh")))
    again = cli("check", *args, str(scripts))  # answered from it
    assert [p.stat().st_mtime_ns for p in entries()] == [p.stat().st_mtime_ns for p in stored]
    assert uncached.exit_code == first.exit_code == again.exit_code == 1
    assert uncached.output == first.output == again.output
    assert "VL" in uncached.output


def test_cached_reports_equal_fresh_ones_fixes_included(cache_dir, scripts):
    files = sorted(scripts.rglob("*.sh"))
    settings_for = SettingsResolver()
    fresh = lint_paths(files, settings_for)
    filling = result_cache.ResultCache()
    lint_paths(files, settings_for, cache=filling)
    assert filling.stored == storable(scripts) and filling.hits == 0
    warm = result_cache.ResultCache()
    cached = lint_paths(files, settings_for, cache=warm)
    assert warm.hits == len(files) and warm.stored == 0
    assert any(d.fix is not None for r in fresh for d in r.diagnostics)
    for a, b in zip(fresh, cached):
        assert (a.path, a.version, a.error, a.source.data) == (b.path, b.version, b.error,
                                                                 b.source.data)
        assert [asdict(d) for d in a.diagnostics] == [asdict(d) for d in b.diagnostics]
        assert [d.span.positions for d in a.diagnostics] == \
            [d.span.positions for d in b.diagnostics]


WRITERS: list = []  # [path]: each process that stores an entry appends its pid there


def _logged_store(self, report):  # module-level: forked workers call it by name
    with open(WRITERS[0], "a") as log:
        log.write(f"{os.getpid()}\n")
    return _plain_store(self, report)


_plain_store = result_cache.EntryWriter.store


def test_each_process_stores_what_it_linted(cache_dir, scripts, tmp_path, monkeypatch):
    files = sorted(scripts.rglob("*.sh"))
    settings_for = SettingsResolver()
    WRITERS[:] = [str(tmp_path / "writers.log")]
    monkeypatch.setattr(result_cache.EntryWriter, "store", _logged_store)
    filling = result_cache.ResultCache()
    lint_paths(files, settings_for, cache=filling, jobs=2)
    writers = (tmp_path / "writers.log").read_text().split()
    assert len(writers) == len(files) and len(set(writers)) == 2  # the parent and a worker
    assert filling.stored == len(entries()) == storable(scripts)
    warm = result_cache.ResultCache()
    lint_paths(files, settings_for, cache=warm, jobs=2)
    assert warm.hits == len(files) and warm.stored == 0


def _files_behind(names: list[Path]) -> dict[tuple[int, int], int]:
    """The files the entries' names lead to: {(device, inode): names leading to it}."""
    behind: dict[tuple[int, int], int] = {}
    for name in names:
        st = name.stat()
        behind[st.st_dev, st.st_ino] = behind.get((st.st_dev, st.st_ino), 0) + 1
    return behind


def test_a_run_writes_one_pack_per_process_named_under_every_entry(cache_dir, scripts):
    files = sorted(scripts.rglob("*.sh"))
    filling = result_cache.ResultCache()
    lint_paths(files, SettingsResolver(), cache=filling, jobs=2)
    stored = entries()
    assert filling.stored == len(stored) == storable(scripts)
    # the parent's and the worker's: a worker does not write the entries its parent had
    # stored before the fork (the first file), and no temporary file is left
    packs = {(n.stat().st_dev, n.stat().st_ino): n for n in stored}
    assert len(packs) == 2
    assert {len(pickle.loads(n.read_bytes())) for n in packs.values()} == \
        set(_files_behind(stored).values())  # each pack holds only the entries named by it
    assert not list((disk.cache_root() / result_cache.NAMESPACE).glob(".tmp-*"))
    warm = result_cache.ResultCache()
    lint_paths(files, SettingsResolver(), cache=warm, jobs=1)
    assert warm.hits == len(files) and warm.stored == 0


def test_an_edit_replaces_one_name_and_leaves_the_rest_of_its_pack(cache_dir, scripts):
    files = sorted(scripts.glob("*.sh"))
    lint_paths(files, SettingsResolver(), cache=result_cache.ResultCache(), jobs=1)
    [(_, count)] = _files_behind(entries()).items()
    files[0].write_bytes(files[0].read_bytes() + b"echo edited\n")
    lint_paths(files, SettingsResolver(), cache=result_cache.ResultCache(), jobs=1)
    assert sorted(_files_behind(entries()).values()) == [1, count - 1]
    warm = result_cache.ResultCache()
    lint_paths(files, SettingsResolver(), cache=warm, jobs=1)
    assert warm.hits == len(files)


def test_without_hard_links_each_entry_is_a_file_of_its_own(cache_dir, scripts, monkeypatch):
    files = sorted(scripts.glob("*.sh"))

    def no_links(*_):
        raise PermissionError(1, "Operation not permitted")  # FAT, some network shares

    monkeypatch.setattr(os, "link", no_links)
    expected = [r.diagnostics for r in lint_paths(files, SettingsResolver())]
    lint_paths(files, SettingsResolver(), cache=result_cache.ResultCache(), jobs=1)
    assert set(_files_behind(entries()).values()) == {1}
    warm = result_cache.ResultCache()
    assert [r.diagnostics for r in lint_paths(files, SettingsResolver(), cache=warm)] == expected
    assert warm.hits == len(files)


def test_a_report_judged_against_another_verl_is_not_stored(cache_dir, scripts):
    target = sorted(scripts.glob("*.sh"))[0]
    settings_for = SettingsResolver()
    cache = result_cache.ResultCache()
    assert cache.load(target, settings_for(target), str(target)) is None
    _, writer = cache.pending(target)
    [report] = lint_paths([target], settings_for)
    assert report.version is not None and report.depends_on is not None
    other = writer._replace(choice=replace(report.version, version="0.0.1"))
    assert not other.store(report) and report.json_entry is None
    cache.write()
    assert not entries()
    assert writer.store(report) and report.json_entry is not None
    cache.write()
    assert len(entries()) == 1


def test_fix_modes_are_unchanged_by_a_warm_cache(cache_dir, scripts, tmp_path):
    cli("check", str(scripts))  # warm
    diff = cli("check", "--diff", "--unsafe-fixes", str(scripts))
    assert diff.output.startswith("---") and diff.exit_code == 1
    assert cli("check", "--diff", "--unsafe-fixes", "--no-cache", str(scripts)).output == \
        diff.output
    twin = tmp_path / "twin"
    shutil.copytree(scripts, twin)
    fixed = cli("check", "--fix", "--unsafe-fixes", "--no-color", str(scripts))
    fixed_uncached = cli("check", "--fix", "--unsafe-fixes", "--no-color", "--no-cache", str(twin))
    assert fixed.output.replace(str(scripts), "X") == fixed_uncached.output.replace(str(twin), "X")
    for p in scripts.glob("*.sh"):
        assert p.read_bytes() == (twin / p.name).read_bytes()
    # after --fix the files changed: the next check must not print the old findings
    assert cli("check", str(scripts)).output == cli("check", "--no-cache", str(scripts)).output


def test_edits_settings_and_code_miss(cache_dir, scripts, monkeypatch):
    target = scripts / "role_arrays_dapo_fsdp.sh"
    assert "VL101" not in cli("check", "--format", "concise", str(target)).output
    target.write_bytes(target.read_bytes() + b"echo $NEVER_SET_ANYWHERE\n")
    assert "VL101" in cli("check", "--format", "concise", str(target)).output
    assert "VL101" not in cli("check", "--format", "concise", "--ignore", "VL101",
                              str(target)).output
    assert len(entries()) == 2  # an edit replaces its entry; other settings get their own
    cache = result_cache.ResultCache()
    lint_paths([target], SettingsResolver(), cache=cache)
    assert cache.hits == 1
    monkeypatch.setattr(result_cache, "code_stamp", lambda: "another verl-lint")
    cache = result_cache.ResultCache()
    lint_paths([target], SettingsResolver(), cache=cache)
    assert cache.hits == 0 and cache.stored == 1


def test_verl_key_is_part_of_the_slot(cache_dir, scripts, monkeypatch):
    files = sorted(scripts.glob("*.sh"))[:3]
    lint_paths(files, SettingsResolver(), cache=result_cache.ResultCache())
    monkeypatch.setattr(result_cache, "verl_key", lambda choice: "another verl source")
    cache = result_cache.ResultCache()
    lint_paths(files, SettingsResolver(), cache=cache)
    assert cache.hits == 0


def test_a_verl_tree_on_disk_is_keyed_by_its_files(tmp_path):
    from verl_lint.verl.choice import VersionChoice

    config = tmp_path / "verl" / "trainer" / "config"
    config.mkdir(parents=True)
    (config / "ppo_trainer.yaml").write_text("a: 1\n")
    choice = VersionChoice(version="0.9.1", source="workspace", kind="workspace",
                           path=str(tmp_path))
    before = result_cache.verl_key(choice)
    assert before != result_cache.verl_key(VersionChoice(version="0.9.1"))
    result_cache._TREE_STAMPS.clear()
    (config / "ppo_trainer.yaml").write_text("a: 22\n")
    assert result_cache.verl_key(choice) != before


def test_workspace_files_a_result_depends_on_are_checked(cache_dir, tmp_path):
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "mine.yaml").write_text("defaults:\n  - ppo_trainer\n  - _self_\n")
    recipe = tmp_path / "recipe.sh"  # its entry module is looked for in the workspace
    recipe.write_text("python3 -m recipe.mine.main_mine trainer.total_epochs=2\n")
    disk_config = tmp_path / "disk.sh"
    disk_config.write_text(f"python3 -m verl.trainer.main_ppo --config-dir={tmp_path}/conf "
                           "--config-name=mine trainer.total_epochs=2\n")
    cache = result_cache.ResultCache()
    reports = lint_paths([recipe, disk_config], SettingsResolver(), cache=cache)
    assert str(tmp_path / "recipe/mine/main_mine.py") in reports[0].depends_on
    assert reports[1].depends_on is None  # a config folder on disk: never stored
    assert cache.stored == 1 and len(entries()) == 1
    warm = result_cache.ResultCache()
    lint_paths([recipe], SettingsResolver(), cache=warm)
    assert warm.hits == 1
    module = tmp_path / "recipe" / "mine" / "main_mine.py"
    module.parent.mkdir(parents=True)
    module.write_text("import hydra\n")  # the module appears: the stored result is stale
    again = result_cache.ResultCache()
    lint_paths([recipe], SettingsResolver(), cache=again)
    assert again.hits == 0 and again.stored == 1


def test_files_a_rule_looks_at_are_checked(cache_dir, tmp_path):
    """VL212 looks for the files a config names: creating one makes the stored result stale."""
    fixture = ROOT / "fixtures" / "rules" / "VL212"
    shutil.copyfile(fixture / "bad_custom_dataset_missing.sh", tmp_path / "run.sh")
    shutil.copytree(fixture / "reward", tmp_path / "reward")
    args = ["check", "--format", "concise", "--select", "VL212", str(tmp_path / "run.sh")]
    assert "reward/math_rewards.py" in cli(*args).output
    assert "reward/math_rewards.py" in cli(*args).output  # from the cache
    shutil.copyfile(tmp_path / "reward" / "math_reward.py", tmp_path / "reward" / "math_rewards.py")
    assert "reward/math_rewards.py" not in cli(*args).output
    assert cli(*args).output == cli(*args, "--no-cache").output


def test_no_cache_flag_and_environment(cache_dir, scripts):
    cli("check", "--no-cache", str(scripts))
    assert not entries()
    cli("check", str(scripts), env={"VERL_LINT_NO_CACHE": "1"})
    assert not entries()
    cli("check", str(scripts))
    assert entries()


def test_corrupt_entry_is_a_miss(cache_dir, scripts):
    expected = cli("check", "--format", "json", str(scripts)).output
    for p in entries():
        p.write_bytes(b"not a pickle")
    assert cli("check", "--format", "json", str(scripts)).output == expected


def test_clean_removes_caches_but_nothing_else(cache_dir, scripts):
    cli("check", str(scripts))
    (cache_dir / "notes").mkdir()
    (cache_dir / "keep.txt").write_text("mine")
    result = cli("clean")
    assert result.exit_code == 0 and "Removed 1 cache folder" in result.output
    assert sorted(p.name for p in cache_dir.iterdir()) == ["keep.txt", "notes"]
    assert "No verl-lint cache" in cli("clean").output


def test_size_is_bounded(cache_dir, scripts, monkeypatch):
    files = sorted(scripts.glob("*.sh"))
    monkeypatch.setattr(result_cache, "MAX_ENTRIES", 10)
    lint_paths(files, SettingsResolver(), cache=result_cache.ResultCache())
    assert len(files) > 10 and len(entries()) <= 10


def test_results_are_bounded_by_their_own_limit_not_the_disk_caches(cache_dir, scripts,
                                                                    monkeypatch):
    """The composed configs' and parses' namespaces hold 4096 entries each; results 20 000
    (`result_cache.MAX_ENTRIES`, pruned once a run), not cut to the other limit on the way."""
    files = sorted(scripts.rglob("*.sh"))
    count = storable(scripts)
    monkeypatch.setattr(disk, "MAX_ENTRIES", 2)
    monkeypatch.setattr(disk, "_stores", 64 - count + 1)  # the last store is a 64th: bounded
    lint_paths(files, SettingsResolver(), cache=result_cache.ResultCache())
    assert len(entries()) == count > 2


def _lint(paths: list[str], cached: bool = True) -> list[str]:
    reports = lint_paths([Path(p) for p in paths], SettingsResolver(),
                         cache=result_cache.ResultCache() if cached else None)
    return [repr([asdict(d) for d in r.diagnostics]) for r in reports]


def test_concurrent_runs_share_the_cache_safely(cache_dir, scripts):
    files = [str(p) for p in sorted(scripts.rglob("*.sh"))]
    with ProcessPoolExecutor(4) as pool:  # four runs writing the same entries at once
        results = list(pool.map(_lint, [files] * 4))
    assert all(r == _lint(files, cached=False) for r in results)
    assert len(entries()) == storable(scripts)
    assert not list((disk.cache_root() / result_cache.NAMESPACE).glob(".tmp-*"))
    assert _lint(files) == results[0]


def test_a_cached_run_imports_no_rule_module(cache_dir, scripts):
    code = ("import sys; from verl_lint.cli import main\n"
            "try: main(['check', '--exit-zero', '-q', sys.argv[1]])\n"
            "except SystemExit: pass\n"
            "loaded = sorted(m for m in sys.modules if m.startswith(('verl_lint.rules.',"
            " 'verl_lint.shell', 'verl_lint.evaluate', 'tree_sitter')))\n"
            "print('LOADED', [m for m in loaded if m not in ('verl_lint.rules.registry',"
            " 'verl_lint.rules.base')])")
    env = dict(os.environ)
    run = [sys.executable, "-c", code, str(scripts)]
    cold = subprocess.run(run, capture_output=True, text=True, env=env, timeout=300)
    assert "verl_lint.rules.shell" in cold.stdout, cold.stderr
    warm = subprocess.run(run, capture_output=True, text=True, env=env, timeout=300)
    assert "LOADED []" in warm.stdout, warm.stdout + warm.stderr


@pytest.mark.skipif(not VERL_CORPUS.is_dir(), reason="needs ../shared/corpus/verl-head")
def test_verl_corpus_cached_equals_uncached(cache_dir):
    args = ["check", "--format", "json", "--verl-version", "0.9.1", str(VERL_CORPUS)]
    uncached = cli(*args, "--no-cache").output
    assert uncached == cli(*args).output == cli(*args).output


# ---- --watch -----------------------------------------------------------------------------

def test_watch_runs_again_after_a_change(tmp_path):
    from verl_lint.watch import watch

    script = tmp_path / "a.sh"
    script.write_text("echo hi\n")
    runs, messages = [], []

    def once():
        runs.append(script.read_text())
        return {script, tmp_path}

    def edit_later():
        time.sleep(0.3)
        script.write_text("echo changed and longer\n")

    threading.Thread(target=edit_later).start()
    deadline = time.monotonic() + 10
    watch(once, interval=0.05, announce=messages.append,
          keep_going=lambda: len(runs) < 2 and time.monotonic() < deadline)
    assert runs == ["echo hi\n", "echo changed and longer\n"]
    assert any("a.sh changed" in m for m in messages)


def test_watch_cli_end_to_end(tmp_path, cache_dir):
    folder = tmp_path / "w"
    folder.mkdir()
    script = folder / "a.sh"
    shutil.copyfile(ROOT / "fixtures" / "corpus" / "role_arrays_dapo_fsdp.sh", script)
    proc = subprocess.Popen(
        [sys.executable, "-c", "from verl_lint.cli import main; main()", "check", "--watch",
         "--format", "concise", str(folder)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=dict(os.environ))
    seen: list[str] = []

    def wait_for(text: str) -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            seen.append(line)
            if text in line:
                return
        raise AssertionError("".join(seen))

    try:
        wait_for("Watching for file changes")
        script.write_bytes(script.read_bytes() + b"echo $NEVER_SET_ANYWHERE\n")
        wait_for("VL101")
        wait_for("Watching for file changes")
        (folder / "b.sh").write_bytes(script.read_bytes())
        wait_for("2 files checked")
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    assert "Traceback" not in "".join(seen)


def test_watch_refuses_stdin_and_fixes():
    assert cli("check", "--watch", "-").exit_code == 2
    assert "only reports" in cli("check", "--watch", "--fix", ".").output


def test_jobs_default_uses_a_pool_only_for_many_files(scripts, monkeypatch):
    from verl_lint import engine

    files = sorted(scripts.glob("*.sh"))
    serial = [r.diagnostics for r in lint_paths(files, SettingsResolver(), jobs=1)]
    pools = []
    real = engine._lint_parallel
    monkeypatch.setattr(engine, "_lint_parallel",
                        lambda tasks, jobs, *rest: pools.append(jobs) or real(tasks, jobs, *rest))
    few = files[:engine.AUTO_JOBS_MIN_FILES]
    assert [r.diagnostics for r in lint_paths(few, SettingsResolver(), jobs=None)] == \
        serial[:len(few)]
    assert pools == []  # no more files than AUTO_JOBS_MIN_FILES: serial
    assert len(files) > engine.AUTO_JOBS_MIN_FILES
    monkeypatch.setattr(engine.os, "cpu_count", lambda: 2)
    assert [r.diagnostics for r in lint_paths(files, SettingsResolver(), jobs=None)] == serial
    assert pools == [2]


def test_a_batch_that_stored_nothing_does_not_prune(monkeypatch):
    # a streamed run finishes each batch of files; listing a 20,000-entry cache folder again
    # for batches that wrote nothing was wasted work
    calls = []
    monkeypatch.setattr(result_cache, "prune", lambda limit: calls.append(limit) or 0)
    cache = result_cache.ResultCache()
    cache.finish()
    cache.stored += 1
    cache.finish()
    cache.finish()
    assert calls == [result_cache.MAX_ENTRIES]


def test_a_watch_pass_reports_a_run_wide_finding_once(tmp_path, monkeypatch, capsys, cache_dir):
    # `--watch` shares check's report path: VL003 (no bundled data for this verl) once a run,
    # not once per file as the pass's own copy of that path had it
    from verl_lint import watch as watching
    from verl_lint.cli.check import CheckOptions

    for name in ("a.sh", "b.sh"):
        (tmp_path / name).write_text("#!/bin/bash\npython3 -m verl.trainer.main_ppo a=1\n")
    monkeypatch.setattr(watching, "watch", lambda once, announce: once())
    watching.run_watch(CheckOptions(paths=(str(tmp_path),), output_format="concise",
                                    verl_version="0.3.0"))
    assert capsys.readouterr().out.count("VL003") == 1

"""Hostile filesystems and file integrity (issue 19): hard links, other owners, FIFOs, devices,
link loops, unreadable folders, non-UTF-8 names, odd configuration files, `--output` written
atomically, one failing file under `--fix` not stopping the others.

Everything that could hang (a FIFO) runs the CLI in a subprocess with a timeout. Tests that need
an unprivileged user (permissions mean nothing to root) create one with `useradd` and run the CLI
in a child process that dropped to it; they skip when the tests do not run as root.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from verl_lint import fileio
from verl_lint.discovery import discover
from verl_lint.settings import Settings, SettingsError, clear_caches, load_settings

VERL_LINT = str(Path(sys.executable).parent / "verl-lint")
USER = "vlrobust"
SCRIPT = "#!/usr/bin/env bash\nset -euo pipefail\necho ok\n"
# a script with a safe fix: VL002 removes a suppression naming no rule
FIXABLE = "#!/usr/bin/env bash\nset -euo pipefail\n\n# verl-lint: disable=nonsense\necho ok\n"


def cli(*args: str, cwd: Path, timeout: float = 60, user: str | None = None,
        env: dict | None = None) -> subprocess.CompletedProcess:
    full_env = {**os.environ, "VERL_LINT_NO_CACHE": "1", "NO_COLOR": "1", **(env or {})}
    if user is not None:
        return _cli_as(user, list(args), cwd, full_env)
    return subprocess.run([VERL_LINT, *args], cwd=cwd, capture_output=True, timeout=timeout,
                          env=full_env)


def _cli_as(user: str, args: list[str], cwd: Path, env: dict) -> subprocess.CompletedProcess:
    """Run the CLI in a forked child that has dropped to `user`. Not `runuser verl-lint`: the
    interpreter may live where that user cannot go (/root/.pyenv), so the child imports all
    of verl-lint first, then gives up root."""
    import importlib
    import pkgutil
    import pwd

    import verl_lint

    for mod in pkgutil.walk_packages(verl_lint.__path__, "verl_lint."):
        if not mod.name.startswith(("verl_lint.lsp", "verl_lint.cli.server")):
            importlib.import_module(mod.name)
    for name in ("difflib", "rich.console", "rich.table", "rich.markup", "click.testing"):
        importlib.import_module(name)
    from click.testing import CliRunner

    from verl_lint.cli import main
    from verl_lint.rules.registry import all_rules

    all_rules()
    entry = pwd.getpwnam(user)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # child
        try:
            os.close(read)
            os.setgroups([])
            os.setgid(entry.pw_gid)
            os.setuid(entry.pw_uid)
            os.chdir(cwd)
            clear_caches()
            result = CliRunner(env=env).invoke(main, args)
            payload = json.dumps([result.exit_code, result.stdout, result.stderr])
        except BaseException as exc:  # noqa: BLE001 - reported to the parent
            payload = json.dumps([99, "", f"child failed: {exc!r}"])
        with os.fdopen(write, "w") as out:
            out.write(payload)
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as inp:
        code, stdout, stderr = json.loads(inp.read())
    os.waitpid(pid, 0)
    return subprocess.CompletedProcess(args, code, stdout.encode(), stderr.encode())


def errors(proc: subprocess.CompletedProcess) -> list[str]:
    return [line for line in proc.stderr.decode("utf-8", "replace").splitlines() if line]


@pytest.fixture
def unprivileged():
    """(user name, a fresh folder everyone may enter) for tests run as an ordinary user."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0 or not shutil.which("useradd"):
        pytest.skip("needs root (to create an unprivileged user) and useradd")
    if subprocess.run(["id", USER], capture_output=True).returncode != 0:
        if subprocess.run(["useradd", "-M", "-s", "/bin/sh", USER],
                          capture_output=True).returncode != 0:
            pytest.skip("cannot create an unprivileged user")
    base = Path(tempfile.mkdtemp(prefix="vl-hostile-"))
    base.chmod(0o777)
    try:
        yield USER, base
    finally:
        for p in base.rglob("*"):  # restore what the tests locked, so it can be removed
            if p.is_dir() and not p.is_symlink():
                p.chmod(0o755)
        shutil.rmtree(base, ignore_errors=True)


def _uid(user: str) -> int:
    import pwd

    return pwd.getpwnam(user).pw_uid


# ---- fileio: writing keeps the file what it was ---------------------------------------------

def test_write_keeps_hard_links(tmp_path):
    a, b = tmp_path / "a.sh", tmp_path / "b.sh"
    a.write_text("old\n")
    os.link(a, b)
    inode = a.stat().st_ino
    fileio.write_bytes(a, b"new\n")
    assert b.read_text() == "new\n" and a.stat().st_ino == inode == b.stat().st_ino


def test_write_keeps_mode_and_a_symlink(tmp_path):
    real = tmp_path / "real.sh"
    real.write_text("old\n")
    real.chmod(0o751)
    link = tmp_path / "link.sh"
    link.symlink_to(real)
    fileio.write_bytes(link, b"new\n")
    assert link.is_symlink() and real.read_text() == "new\n"
    assert stat.S_IMODE(real.stat().st_mode) == 0o751
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.sh", "real.sh"]


def test_write_keeps_another_owner(tmp_path, unprivileged):
    user, _ = unprivileged
    path = tmp_path / "theirs.sh"
    path.write_text("old\n")
    os.chown(path, _uid(user), 0)
    fileio.write_bytes(path, b"new\n")
    st = path.stat()
    assert (st.st_uid, path.read_text()) == (_uid(user), "new\n")


def test_failing_writer_leaves_the_old_file_and_no_temp(tmp_path):
    path = tmp_path / "report.json"
    path.write_text('{"old": true}\n')
    with pytest.raises(RuntimeError):
        with fileio.open_for_replace(path) as out:
            out.write('{"path": ')
            raise RuntimeError("render failed")
    assert path.read_text() == '{"old": true}\n'
    assert [p.name for p in tmp_path.iterdir()] == ["report.json"]


def test_new_file_gets_the_umask_mode(tmp_path):
    path = tmp_path / "new.json"
    fileio.write_bytes(path, b"{}")
    mask = os.umask(0)
    os.umask(mask)
    assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~mask


def test_leftovers_of_a_killed_writer_are_cleaned_and_never_walked(tmp_path):
    script = tmp_path / "run.sh"
    script.write_text(SCRIPT)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    leftover = tmp_path / f".run.sh.{dead.pid}.abc123_x{fileio.TEMP_SUFFIX}"
    leftover.write_text(SCRIPT)
    alive = tmp_path / f".run.sh.{os.getpid()}.zzz{fileio.TEMP_SUFFIX}"  # a writer still running
    alive.write_text(SCRIPT)
    sniffed = tmp_path / f".launch.{dead.pid}.q1{fileio.TEMP_SUFFIX}"
    sniffed.write_text(SCRIPT)
    assert discover([tmp_path], lambda p: Settings()) == [script]
    fileio.write_bytes(script, SCRIPT.encode())
    assert not leftover.exists() and alive.exists() and sniffed.exists()


def test_fix_writes_in_place_in_a_folder_the_user_cannot_write(unprivileged):
    user, base = unprivileged
    folder = base / "ro"
    folder.mkdir()
    script = folder / "run.sh"
    script.write_text(FIXABLE)
    os.chown(script, _uid(user), 0)
    folder.chmod(0o755)  # root's folder: the user may write the file, not the folder
    proc = cli("check", "--fix", "--select", "VL002", "ro", cwd=base, user=user)
    assert proc.returncode == 0, proc.stderr
    assert "disable=nonsense" not in script.read_text()
    assert sorted(p.name for p in folder.iterdir()) == ["run.sh"]


def test_fix_goes_on_after_a_file_it_cannot_write(unprivileged):
    user, base = unprivileged
    (base / "a.sh").write_text(FIXABLE)  # root's, read-only to the user
    (base / "a.sh").chmod(0o644)
    mine = base / "b.sh"
    mine.write_text(FIXABLE)
    os.chown(mine, _uid(user), 0)
    proc = cli("check", "--fix", "--select", "VL002", "a.sh", "b.sh", cwd=base, user=user)
    assert proc.returncode == 2
    assert [line for line in errors(proc) if line.startswith("error:")] == [
        "error: a.sh: cannot write: Permission denied; left unchanged"]
    assert "disable=nonsense" in (base / "a.sh").read_text()
    assert "disable=nonsense" not in mine.read_text()


def test_fix_goes_on_after_a_file_that_crashes_the_parser(tmp_path, monkeypatch):
    from verl_lint import fixes

    (tmp_path / "a.sh").write_text(FIXABLE)
    (tmp_path / "b.sh").write_text(FIXABLE)
    real = fixes.count_parse_errors

    def deep(source):  # what 300 nested `$(` did to the parser
        if (source.path or "").endswith("a.sh"):
            raise RecursionError("maximum recursion depth exceeded")
        return real(source)

    monkeypatch.setattr(fixes, "count_parse_errors", deep)
    settings = Settings(select=("VL002",))
    options = fixes.FixOptions(fix=True)
    from verl_lint.cli.check import Target

    targets = [Target(tmp_path / n, str(tmp_path / n)) for n in ("a.sh", "b.sh")]
    reports, _ = fixes.run_fix_mode(targets, lambda p: settings, options, quiet=True)
    assert reports[0].error == "nested too deeply to analyse (fixing); not linted"
    assert reports[1].error is None
    assert "disable=nonsense" in (tmp_path / "a.sh").read_text()
    assert "disable=nonsense" not in (tmp_path / "b.sh").read_text()


def test_output_report_replaced_only_when_complete(tmp_path, monkeypatch):
    from click.testing import CliRunner

    from verl_lint.cli import main
    from verl_lint.report import json as json_format

    monkeypatch.chdir(tmp_path)
    clear_caches()
    (tmp_path / "run.sh").write_text(SCRIPT)
    report = tmp_path / "report.json"
    report.write_text('{"previous": true}\n')
    os.link(report, tmp_path / "linked.json")

    def broken(self):
        self.out.write('{"path": ')
        raise ValueError("render failed")

    monkeypatch.setattr(json_format.Renderer, "finish", broken)
    result = CliRunner().invoke(main, ["--format", "json", "-o", "report.json", "run.sh"])
    assert result.exit_code == 2
    assert report.read_text() == '{"previous": true}\n'
    assert sorted(p.name for p in tmp_path.iterdir()) == ["linked.json", "report.json", "run.sh"]
    monkeypatch.undo()
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["--format", "json", "-o", "report.json", "run.sh"])
    assert result.exit_code == 0
    assert json.loads((tmp_path / "linked.json").read_text())["files"][0]["path"] == "run.sh"


# ---- only regular files, bounded --------------------------------------------------------

def test_fifos_and_devices_are_never_opened(tmp_path):
    (tmp_path / "run.sh").write_text(SCRIPT)
    os.mkfifo(tmp_path / "x.sh")
    os.mkfifo(tmp_path / "launch")  # no suffix: the shebang sniff must not open it
    (tmp_path / "evil.sh").symlink_to("/dev/zero")
    walked = cli("--format", "concise", ".", cwd=tmp_path, timeout=30)
    assert walked.returncode == 2
    assert errors(walked) == ["error: evil.sh: a character device, not a regular file; not linted",
                              "error: x.sh: a FIFO, not a regular file; not linted"]
    named = cli("--format", "concise", "launch", "x.sh", cwd=tmp_path, timeout=30)
    assert named.returncode == 2
    assert errors(named) == ["error: launch: a FIFO, not a regular file; not linted",
                             "error: x.sh: a FIFO, not a regular file; not linted"]
    shown = cli("show", "x.sh", cwd=tmp_path, timeout=30)
    assert shown.returncode == 2 and len(errors(shown)) == 1


def test_a_file_over_the_size_limit_is_reported(tmp_path):
    big = tmp_path / "big.sh"
    big.write_bytes(b"#!/bin/bash\n" + b"echo " + b"x" * fileio.MAX_BYTES + b"\n")
    proc = cli("--format", "concise", "big.sh", cwd=tmp_path)
    assert proc.returncode == 2
    assert errors(proc) == ["error: big.sh: larger than 1 MiB; not linted"]


def test_symlink_loops_are_reported_and_the_run_goes_on(tmp_path):
    (tmp_path / "run.sh").write_text(SCRIPT)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "x.sh").symlink_to("x.sh")  # a loop
    (tmp_path / "sub" / "up").symlink_to("..")  # a folder loop: not followed
    (tmp_path / "sub" / "a").symlink_to("b")
    (tmp_path / "sub" / "b").symlink_to("a")
    proc = cli("--format", "concise", ".", cwd=tmp_path)
    assert proc.returncode == 2
    assert errors(proc) == ["error: sub/x.sh: cannot read: Too many levels of symbolic links"]
    assert "2 files checked" in proc.stdout.decode()


def test_an_unreadable_folder_is_reported(unprivileged):
    user, base = unprivileged
    (base / "run.sh").write_text(SCRIPT)
    (base / "locked").mkdir()
    (base / "locked" / "hidden.sh").write_text(SCRIPT)
    (base / "locked").chmod(0o700)
    proc = cli("--format", "concise", ".", cwd=base, user=user)
    assert proc.returncode == 2
    assert errors(proc) == ["error: locked: cannot read folder: Permission denied; scripts in "
                            "it were not linted"]


def test_an_unreadable_file_named_explicitly_is_one_error_line(unprivileged):
    user, base = unprivileged
    (base / "secret.sh").write_text(SCRIPT)
    (base / "secret.sh").chmod(0o600)
    proc = cli("secret.sh", cwd=base, user=user)
    assert proc.returncode == 2
    assert errors(proc) == ["error: secret.sh: cannot read: Permission denied"]


@pytest.mark.parametrize("fmt", ["full", "concise", "json", "sarif", "github"])
def test_non_utf8_file_names_in_every_format(tmp_path, fmt):
    name = os.fsdecode(b"caf\xff.sh")
    (tmp_path / name).write_text("#!/bin/bash\n# verl-lint: disable=VL201\necho ok\n")
    for args in ((), ("-o", "out.txt")):
        proc = cli("--format", fmt, *args, ".", cwd=tmp_path,
                   env={"PYTHONIOENCODING": "utf-8:strict"})
        assert proc.returncode in (0, 1), proc.stderr
        text = (tmp_path / "out.txt").read_bytes() if args else proc.stdout
        text.decode("utf-8")  # strict: valid UTF-8
        assert b"xff.sh" in text and b"caf" in text


# ---- configuration files -----------------------------------------------------------------

@pytest.fixture
def fresh_caches():
    clear_caches()
    yield
    clear_caches()


def test_pyproject_whose_tool_is_not_a_table_is_not_ours(tmp_path, fresh_caches):
    (tmp_path / "pyproject.toml").write_text('tool = 3\n[project]\nname = "x"\n')
    (tmp_path / "run.sh").write_text(SCRIPT)
    assert load_settings(tmp_path / "run.sh").config_file is None


def test_broken_pyproject_is_one_line_naming_it(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.verl-lint\n")
    (tmp_path / "run.sh").write_text(SCRIPT)
    proc = cli("run.sh", cwd=tmp_path)
    assert proc.returncode == 2
    lines = errors(proc)
    assert len(lines) == 1 and lines[0].startswith(f"error: {tmp_path / 'pyproject.toml'}: ")


def test_toml_with_a_byte_order_mark_is_valid(tmp_path, fresh_caches):
    (tmp_path / ".verl-lint.toml").write_bytes(b"\xef\xbb\xbfselect = [\"VL1\"]\n")
    assert load_settings(tmp_path).select == ("VL1",)


def test_deep_toml_is_one_line(tmp_path, fresh_caches):
    (tmp_path / ".verl-lint.toml").write_text("select = " + "[" * 600 + "]" * 600 + "\n")
    with pytest.raises(SettingsError, match="nested too deeply|invalid TOML"):
        load_settings(tmp_path)


def test_looping_config_is_one_line(tmp_path):
    (tmp_path / ".verl-lint.toml").symlink_to(".verl-lint.toml")
    (tmp_path / "run.sh").write_text(SCRIPT)
    proc = cli("run.sh", cwd=tmp_path)
    assert proc.returncode == 2
    # per file it governs (others are linted: tests/test_config_loop.py)
    assert errors(proc) == [f"error: run.sh: {tmp_path / '.verl-lint.toml'}: cannot read: Too "
                            "many levels of symbolic links"]


def test_config_option_pointing_at_a_folder_is_one_line(tmp_path):
    (tmp_path / "run.sh").write_text(SCRIPT)
    (tmp_path / "conf").mkdir()
    proc = cli("--config", "conf", "run.sh", cwd=tmp_path)
    assert (proc.returncode, errors(proc)) == (2, ["error: --config conf: is a directory"])
    proc = cli("-o", "conf", "run.sh", cwd=tmp_path)
    assert (proc.returncode, errors(proc)) == (2, ["error: conf: Is a directory"])


def test_stdin_is_read_bounded(tmp_path):
    with open("/dev/zero", "rb") as zero:
        proc = subprocess.run([VERL_LINT, "-"], stdin=zero, cwd=tmp_path, capture_output=True,
                              timeout=60, env={**os.environ, "VERL_LINT_NO_CACHE": "1"})
    assert proc.returncode == 2
    assert errors(proc) == ["error: -: larger than 1 MiB; not linted"]


def test_output_to_a_device_or_pipe_is_written_directly(tmp_path):
    (tmp_path / "run.sh").write_text("#!/bin/bash\n# verl-lint: disable=nonsense\necho\n")
    proc = subprocess.run(f"{VERL_LINT} --format concise -o /dev/stdout run.sh | cat",
                          shell=True, cwd=tmp_path, capture_output=True, timeout=60)
    assert b"run.sh:2:" in proc.stdout and proc.stderr == b""
    assert cli("-o", "/dev/null", "run.sh", cwd=tmp_path).returncode == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.sh"]

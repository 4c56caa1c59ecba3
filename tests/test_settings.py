"""Settings: TOML keys, discovery (closest file wins), CLI merge, selectors, clear errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from verl_lint.diagnostics import Severity
from verl_lint.settings import (
    Settings, SettingsError, SettingsResolver, find_config, load_settings, resolve_selectors,
)


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_defaults():
    s = Settings()
    assert s.select == ("ALL",) and s.fail_on is Severity.WARNING and s.config_file is None
    assert "VL001" in s.enabled_codes()


def test_every_toml_key(tmp_path):
    write(tmp_path / ".verl-lint.toml", """
select = ["VL0", "VL3"]
extend-select = "VL401"
ignore = ["unused-suppression"]
per-file-ignores = { "./legacy/*.sh" = ["VL3"] }
severity = { VL004 = "warning" }
fail-on = "error"
exclude = ["old", "./third_party/"]
verl-version = "0.8.0"
device = "npu"
set = { TP = 4, USE_X = true }
known-env = ["MY_VAR"]
extend-rules = ["team-rules"]
""")
    (tmp_path / "team-rules").mkdir()
    s = load_settings(tmp_path / "run.sh")
    assert s.config_file == str(tmp_path / ".verl-lint.toml")
    assert s.fail_on is Severity.ERROR and s.device == "npu" and s.verl_version == "0.8.0"
    assert s.pins == {"TP": "4", "USE_X": "true"} and s.known_env == ("MY_VAR",)
    assert s.extend_rules == (str(tmp_path / "team-rules"),)
    assert s.extend_select == ("VL401",)
    codes = s.enabled_codes(str(tmp_path / "run.sh"))
    assert "VL001" in codes and "VL002" not in codes and "VL401" in codes
    assert "VL301" in codes
    assert "VL301" not in s.enabled_codes(str(tmp_path / "legacy" / "a.sh"))
    assert s.severity_for("VL004", Severity.INFO) is Severity.WARNING
    assert s.severity_for("VL001", Severity.ERROR) is Severity.ERROR
    assert s.is_excluded(tmp_path / "old" / "x.sh") and not s.is_excluded(tmp_path / "x.sh")
    assert s.is_excluded(tmp_path / "third_party" / "a" / "x.sh")


def test_closest_config_wins(tmp_path):
    write(tmp_path / "pyproject.toml", '[tool.verl-lint]\nfail-on = "info"\n')
    write(tmp_path / "sub" / ".verl-lint.toml", 'fail-on = "error"\n')
    write(tmp_path / "other" / "pyproject.toml", "[project]\nname = 'x'\n")  # no table: skipped
    assert load_settings(tmp_path / "a.sh").fail_on is Severity.INFO
    assert load_settings(tmp_path / "sub" / "deeper" / "a.sh").fail_on is Severity.ERROR
    assert load_settings(tmp_path / "other" / "a.sh").fail_on is Severity.INFO
    assert find_config(tmp_path / "sub") == tmp_path / "sub" / ".verl-lint.toml"


def test_verl_lint_toml_beats_pyproject_in_same_directory(tmp_path):
    write(tmp_path / "pyproject.toml", '[tool.verl-lint]\nfail-on = "info"\n')
    write(tmp_path / ".verl-lint.toml", 'fail-on = "error"\n')
    assert load_settings(tmp_path / "a.sh").fail_on is Severity.ERROR


def test_cli_overrides_config(tmp_path):
    write(tmp_path / ".verl-lint.toml",
          'select = ["VL0"]\nignore = ["VL001"]\nset = {A = "1"}\nverl-version = "0.7.0"\n')
    s = load_settings(tmp_path / "a.sh", {"ignore": ("VL002",), "pins": {"B": "2"}})
    assert s.ignore == ("VL001", "VL002") and s.pins == {"A": "1", "B": "2"}
    assert not s.verl_version_from_cli
    s = load_settings(tmp_path / "a.sh", {"select": ("VL001",), "verl_version": "0.8.0"})
    assert s.enabled_codes() == {"VL001"}  # a CLI --select starts afresh
    assert s.verl_version == "0.8.0" and s.verl_version_from_cli


def test_explicit_config_file(tmp_path):
    cfg = write(tmp_path / "elsewhere.toml", 'fail-on = "info"\n')
    write(tmp_path / ".verl-lint.toml", 'fail-on = "error"\n')
    resolver = SettingsResolver({}, cfg)
    assert resolver(tmp_path / "a.sh").fail_on is Severity.INFO
    assert resolver(tmp_path / "a.sh") is resolver(tmp_path / "b.sh")


@pytest.mark.parametrize("text, message", [
    ("selec = ['VL0']\n", "unknown key 'selec' (did you mean 'select'?)"),
    ("fail-on = 'fatal'\n", "key 'fail-on': Input should be 'error', 'warning' or 'info'"),
    ("select = ['VL0'\n", "invalid TOML"),
    ("select = ['VL9999']\n", "select: unknown rule selector 'VL9999'"),
    ("ignore = ['unknown-overide-key']\n", "ignore: unknown rule selector"),
    ("severity = {VL001 = 'fatal'}\n", "key 'severity.VL001'"),
    ("per-file-ignores = {'a.sh' = ['nope']}\n", "per-file-ignores: unknown rule selector 'nope'"),
])
def test_bad_config_names_file_and_key(tmp_path, text, message):
    cfg = write(tmp_path / ".verl-lint.toml", text)
    with pytest.raises(SettingsError) as err:
        load_settings(tmp_path / "a.sh")
    assert str(err.value).startswith(str(cfg)) and message in str(err.value)


def test_bad_pyproject_table_names_section(tmp_path):
    write(tmp_path / "pyproject.toml", "[tool.verl-lint]\nfailon = 'error'\n")
    with pytest.raises(SettingsError, match=r"pyproject.toml: \[tool.verl-lint\] unknown key"):
        load_settings(tmp_path / "a.sh")


def test_selectors():
    assert resolve_selectors(["VL001"]) == {"VL001"}
    assert resolve_selectors(["vl00"]) >= {"VL001", "VL002", "VL003", "VL004"}
    assert resolve_selectors(["shell-parse-error"]) == {"VL001"}
    with pytest.raises(SettingsError, match="did you mean 'VL001'"):
        resolve_selectors(["VL0011"])


def test_missing_extend_rules_folder(tmp_path):
    cfg = write(tmp_path / ".verl-lint.toml", 'extend-rules = ["nope"]\n')
    with pytest.raises(SettingsError, match=f"^{cfg}: extend-rules: .*nope"):
        load_settings(tmp_path / "a.sh")


def test_cli_bad_value():
    with pytest.raises(SettingsError, match="command line option 'fail-on'"):
        load_settings(Path("."), {"fail_on": "fatal"})

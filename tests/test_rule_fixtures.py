"""Every rule fixture: `fixtures/rules/<CODE>/<case>.sh` with its `<case>.expected`.

`bad_*` cases must produce the expected findings of that folder's code, `good_*` none. Each
expected line is `LINE:COL CODE MESSAGE`, plus ` [DEVICE=npu]` (comma-separated labels) when
the finding holds only in some scenarios. A `# verl-lint-test: OPTIONS` comment in the file's
header passes `verl-lint check` options (`--verl-version 0.8.0 --device npu`).
"""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from verl_lint.report import scenario_suffix

ROOT = Path(__file__).parent.parent / "fixtures" / "rules"
HEADER = "# verl-lint-test:"


def header_args(text: str) -> list[str]:
    """Options from `# verl-lint-test:` lines in the leading comment block."""
    args: list[str] = []
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped.startswith("#"):
            break
        if stripped.startswith(HEADER):
            args += shlex.split(stripped[len(HEADER):])
    return args


def lint_text(text: str, path: Path, extra_args: list[str] = ()):
    """Lint `text` as `verl-lint check` would with the header's options (+ `extra_args`)."""
    from verl_lint.cli.check import settings_for_args
    from verl_lint.engine import lint_source
    from verl_lint.source import SourceText

    settings = settings_for_args([*header_args(text), *extra_args], path)
    return lint_source(SourceText(text.encode(), str(path)), settings, path=str(path))


def finding_line(d) -> str:
    return f"{d.span.line}:{d.span.column} {d.code} {d.message}{scenario_suffix(d.scenarios)}"


def cases() -> list:
    out = []
    for script in sorted(ROOT.glob("*/*.sh")):
        out.append(pytest.param(script, id=f"{script.parent.name}/{script.stem}"))
    return out


@pytest.mark.parametrize("script", cases())
def test_rule_fixture(script: Path):
    code = script.parent.name
    kind = script.name.split("_", 1)[0]
    assert kind in ("bad", "good"), f"{script}: case names start with bad_ or good_"
    expected_file = script.with_suffix(".expected")
    assert expected_file.exists(), f"{expected_file} is missing"
    expected = [line for line in expected_file.read_text(encoding="utf-8").splitlines()
                if line.strip()]
    if kind == "bad":
        assert expected, f"{expected_file}: a bad case expects at least one finding"
    else:
        assert not expected, f"{expected_file}: a good case expects no finding"
    report = lint_text(script.read_text(encoding="utf-8"), script, ["--extend-select", code])
    assert report.error is None, report.error
    assert [finding_line(d) for d in report.diagnostics if d.code == code] == expected


def test_every_fixture_folder_is_a_rule():
    from verl_lint.rules.registry import get_rule

    for folder in ROOT.iterdir():
        if folder.is_dir():
            assert get_rule(folder.name) is not None, f"{folder}: no rule {folder.name}"


def test_every_rule_has_bad_and_good_fixtures():
    """The parametrized runner only sees the `.sh` files that exist: an emptied folder or a
    missing rule folder would collect no case and pass silently, so check coverage here."""
    from verl_lint.rules.registry import all_rules

    for rule in all_rules():
        names = [p.name for p in (ROOT / rule.code).glob("*.sh")]
        assert any(n.startswith("bad_") for n in names), f"{rule.code}: no bad_*.sh fixture"
        assert any(n.startswith("good_") for n in names), f"{rule.code}: no good_*.sh fixture"


def test_every_expected_file_has_its_script():
    """An `.expected` whose script was renamed or deleted is never checked."""
    orphans = [e for e in ROOT.glob("*/*.expected") if not e.with_suffix(".sh").exists()]
    assert not orphans, f"expectations without a script: {orphans}"

"""The warm run (every file answered from the result cache) does little per file: what each of
its shortcuts replaced still gives the same answer."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from verl_lint.verl.choice import header_pin_range

_PIN = re.compile(r"\bverl\s*==\s*v?([0-9][0-9A-Za-z.+\-]*)")


def _header_pin_range_by_lines(text: str) -> tuple[int, int] | None:
    """The definition: the first `verl==X` among the script's first 40 lines (as
    `str.splitlines` cuts them) while each is blank or a comment."""
    pos = 0
    for line in text.splitlines(keepends=True)[:40]:
        stripped = line.strip()
        if stripped and not stripped.startswith("#"):
            break
        m = _PIN.search(line)
        if m:
            return pos + m.start(1), pos + m.start(1) + len(m.group(1).rstrip("."))
        pos += len(line)
    return None


# pieces that make header lines, pins and every line end or space `str.splitlines`/`strip` know
_PIECES = ["#", "#!/bin/bash", " ", "\t", "\n", "\r", "\r\n", "\v", "\f", "\x1c", "\x1d", "\x1e",
           "\x1f", "\x85", "\xa0", "\u2028", "\u2029", "\u3000", "verl", "==", " == ", "v",
           "0.8.0", "1.", "verl==0.9.1", "pip install verl==0.6.1.", "set -x", "x", "é"]


@settings(max_examples=3000, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), max_size=80), st.integers(0, 45))
def test_header_pin_range_is_the_line_by_line_definition(pieces, comment_lines):
    text = "# c\n" * comment_lines + "".join(pieces)
    assert header_pin_range(text) == _header_pin_range_by_lines(text)


def test_header_pin_range_reads_40_lines_at_most():
    for before, found in ((37, True), (38, True), (39, False)):  # the pin on line 39, 40, 41
        text = "#!/bin/bash\n" + "# c\n" * before + "# verl==0.8.0\n"
        where = header_pin_range(text)
        assert where == _header_pin_range_by_lines(text)
        assert (where is not None and text[where[0]:where[1]] == "0.8.0") == found


# ---- the `json` format's text kept with the findings ------------------------------------------

import shutil  # noqa: E402
from pathlib import Path  # noqa: E402

import pytest  # noqa: E402
from click.testing import CliRunner  # noqa: E402

from verl_lint import result_cache  # noqa: E402
from verl_lint.cli import main  # noqa: E402
from verl_lint.verl import cache as disk  # noqa: E402

ROOT = Path(__file__).parent.parent


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
    monkeypatch.setattr(SourceText, "position", refuse)
    assert _cli(*args) == uncached


def test_a_run_wide_finding_is_dropped_with_its_json_text(cache_dir, fixable):
    # VL003 (no bundled data for this verl) is reported on the first file only: a cached file
    # keeps its own copy, which must go with its text
    args = ("check", "--format", "json", "--exit-zero", "--verl-version", "0.3.0", str(fixable))
    uncached = _cli(*args[:-1], "--no-cache", str(fixable))
    assert uncached.count('"code": "VL003"') == 1
    assert _cli(*args) == uncached
    assert _cli(*args) == uncached

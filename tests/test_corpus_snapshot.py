"""Snapshot of the concise findings for `fixtures/corpus/`: any behaviour change shows in review.

Rewrite the snapshot with `VERL_LINT_UPDATE_SNAPSHOTS=1 pytest tests/test_corpus_snapshot.py`,
then read the diff: every line in it must be a finding a verl user would agree with.
"""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "fixtures" / "corpus"
SNAPSHOT = Path(__file__).resolve().parent / "snapshots" / "corpus.txt"


def corpus_files() -> list[Path]:
    return sorted(CORPUS.rglob("*.sh"))


def render_corpus() -> str:
    from verl_lint.engine import lint_paths
    from verl_lint.report import RenderOptions, render
    from verl_lint.settings import Settings

    settings = Settings()  # defaults only: the snapshot must not depend on the repo's config
    reports = lint_paths(corpus_files(), lambda _: settings,
                         display=lambda p: p.relative_to(ROOT).as_posix())
    out = io.StringIO()
    for r in reports:
        if r.error:
            out.write(f"{r.path}: could not be fully linted: {r.error}\n")
    render("concise", reports, out, RenderOptions())
    return out.getvalue()


def test_corpus_has_every_style() -> None:
    texts = {p.name: p.read_bytes() for p in corpus_files()}
    assert len(texts) >= 15
    joined = b"\n".join(texts.values())
    for marker in (b"ray job submit", b"torchrun", b"uv run", b'"$@"', b"source ", b"<<",
                   b'case "${DEVICE}"', b"set -xeuo pipefail", b"sft_trainer",
                   b"fully_async_main", b"recipe.", b"() {", b"+=("):
        assert marker in joined, marker
    assert any(t.startswith(b"\xef\xbb\xbf") for t in texts.values()), "a file with a BOM"
    assert any(b"\r\n" in t for t in texts.values()), "a file with CRLF line endings"
    assert any(b"\n\t" in t for t in texts.values()), "a file indented with tabs"


def test_corpus_findings_match_snapshot() -> None:
    actual = render_corpus()
    if os.environ.get("VERL_LINT_UPDATE_SNAPSHOTS") == "1":
        SNAPSHOT.parent.mkdir(parents=True, exist_ok=True)
        SNAPSHOT.write_text(actual, encoding="utf-8")
        return
    if not SNAPSHOT.exists():
        pytest.fail(f"no snapshot yet: run VERL_LINT_UPDATE_SNAPSHOTS=1 pytest {__file__}")
    expected = SNAPSHOT.read_text(encoding="utf-8")
    assert actual == expected, "corpus findings changed; review and update the snapshot"

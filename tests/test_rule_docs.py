"""Meta-test over every registered rule (built-in and knowledge base): its docs page has the
five sections in order (six for a rule with a fix: its Fix safety), its Example fires it and
its Use instead does not."""

from __future__ import annotations

import re

import pytest
from test_rule_fixtures import lint_text

from verl_lint.rules.registry import all_rules

SECTIONS = ["What it does", "Why is this bad?", "Example", "Use instead", "References"]
FIXABLE_SECTIONS = [*SECTIONS[:4], "Fix safety", SECTIONS[4]]
_FENCE = re.compile(r"```bash\n(.*?)```", re.S)


def sections(docs: str) -> dict[str, str]:
    """Headings (`## Name`, outside code blocks) → their text."""
    out: dict[str, str] = {}
    current = None
    in_code = False
    for line in docs.splitlines():
        if line.strip().startswith("```"):
            in_code = not in_code
        if not in_code and line.startswith("#"):
            current = line.lstrip("#").strip()
            out[current] = ""
        elif current is not None:
            out[current] += line + "\n"
    return out


def _rules():
    return [pytest.param(r, id=r.code) for r in all_rules()]


@pytest.mark.parametrize("rule", _rules())
def test_docs_page_is_complete(rule):
    assert rule.summary and rule.name == rule.name.lower() and " " not in rule.name
    parts = sections(rule.docs())
    # a fix's safety is part of its docs, as in ruff: what `--fix` may change without review
    expected = FIXABLE_SECTIONS if rule.fixable else SECTIONS
    assert list(parts) in (expected, FIXABLE_SECTIONS), f"{rule.code}: sections {list(parts)}"
    assert rule.docs().split("\n", 1)[0].strip(), f"{rule.code}: first line is the summary"
    for name in parts:
        assert parts[name].strip(), f"{rule.code}: empty section {name!r}"
    for name in ("Example", "Use instead"):
        assert _FENCE.search(parts[name]), f"{rule.code}: {name} needs a ```bash block"


def _example(rule, section: str) -> str:
    return _FENCE.search(sections(rule.docs())[section]).group(1)


@pytest.mark.parametrize("rule", _rules())
def test_example_fires_and_use_instead_is_clean(rule, tmp_path):
    path = tmp_path / "example.sh"
    bad = lint_text(_example(rule, "Example"), path, ["--select", "ALL"])
    assert bad.error is None, bad.error
    assert rule.code in {d.code for d in bad.diagnostics}, f"{rule.code}: Example does not fire"
    good = lint_text(_example(rule, "Use instead"), path, ["--select", "ALL"])
    assert good.error is None, good.error
    fired = [d.message for d in good.diagnostics if d.code == rule.code]
    assert not fired, f"{rule.code}: Use instead fires: {fired}"


@pytest.mark.parametrize("rule", [r for r in _rules() if r.values[0].fixable])
def test_fix_safety_says_safe_or_unsafe(rule):
    text = sections(rule.docs())["Fix safety"]
    assert re.search(r"\b(Safe|Unsafe|safe|unsafe)\b", text), f"{rule.code}: {text!r}"

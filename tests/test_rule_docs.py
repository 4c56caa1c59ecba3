"""Meta-test over every registered rule (built-in and knowledge base): its docs page has the
five sections in order, its Example fires it and its Use instead does not."""

from __future__ import annotations

import re

import pytest
from test_rule_fixtures import lint_text

from verl_lint.rules.registry import all_rules

SECTIONS = ["What it does", "Why is this bad?", "Example", "Use instead", "References"]
# ruff's "Fix safety" section is optional, between Use instead and References
OPTIONAL = {"Fix safety": "References"}
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
    assert [p for p in parts if p not in OPTIONAL] == SECTIONS, f"{rule.code}: sections {list(parts)}"
    for name, before in OPTIONAL.items():
        if name in parts:
            names = list(parts)
            assert names.index(name) == names.index(before) - 1, f"{rule.code}: {name} placement"
    assert rule.docs().split("\n", 1)[0].strip(), f"{rule.code}: first line is the summary"
    for name in SECTIONS:
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

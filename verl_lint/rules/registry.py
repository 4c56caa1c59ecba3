"""The one registry: CLI selection, `verl-lint rule`, SARIF rules[], LSP hover and docs read it."""

from __future__ import annotations

import importlib
import pkgutil
from typing import TYPE_CHECKING, Iterable

if TYPE_CHECKING:  # settings read the registry on every start: the rules' base loads with them
    from verl_lint.rules.base import Rule

_RULES: dict[str, type[Rule]] = {}
_LOADED = False


def register(cls: type[Rule]) -> type[Rule]:
    """Class decorator for built-in rules."""
    if cls.code in _RULES and _RULES[cls.code] is not cls:
        raise ValueError(f"duplicate rule code {cls.code}")
    _RULES[cls.code] = cls
    return cls


def _load_builtin() -> None:
    global _LOADED
    if _LOADED:
        return
    _LOADED = True
    import verl_lint.rules as pkg

    # the knowledge base's pydantic schema defines no rule: loaded only to validate a rule file
    for info in pkgutil.walk_packages(pkg.__path__, prefix="verl_lint.rules."):
        if info.name.rsplit(".", 1)[-1] not in {"base", "registry", "schema"}:
            importlib.import_module(info.name)


def all_rules() -> list[type[Rule]]:
    _load_builtin()
    return sorted(_RULES.values(), key=lambda r: r.code)


def rule_names() -> dict[str, str]:
    """{code: name} of every rule (built-in and added at run time). A start whose verl-lint
    code an earlier run already indexed imports no rule module: settings resolve their
    selectors with this, so a run answered from the result cache never loads the rules
    (≈ 100 ms of imports)."""
    if not _LOADED:
        from verl_lint.result_cache import code_stamp
        from verl_lint.verl import cache

        index = cache.load("rule-index", code_stamp())
        if index is cache.MISS:
            _load_builtin()
            cache.store("rule-index", code_stamp(), {c: r.name for c, r in _RULES.items()})
        else:
            return {**index, **{c: r.name for c, r in _RULES.items()}}
    return {c: r.name for c, r in _RULES.items()}


def rule_count() -> int:
    """How many rules are registered (built-in and added at run time); cheap, unlike
    `all_rules()`, so per-file memo keys can include it."""
    return len(_RULES) if _LOADED else len(rule_names())


def get_rule(code_or_name: str) -> type[Rule] | None:
    _load_builtin()
    key = code_or_name.strip()
    if key.upper() in _RULES:
        return _RULES[key.upper()]
    for rule in _RULES.values():
        if rule.name == key:
            return rule
    return None


def add_rules(rules: Iterable[type[Rule]]) -> None:
    """Add rules built at run time (knowledge-base YAML, `extend-rules`)."""
    for rule in rules:
        register(rule)

"""The one registry: CLI selection, `verl-lint rule`, SARIF rules[], LSP hover and docs read it."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Callable, Iterable, TypeVar

if TYPE_CHECKING:  # settings read the registry on every start: the rules' base loads with them
    from verl_lint.rules.base import Rule

_RULES: dict[str, type[Rule]] = {}
_LOADED = False
_BUILTIN: dict[str, dict] = {}  # `rule_table`'s built-in part per namespace, from the disk cache
T = TypeVar("T")


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
    import pkgutil

    import verl_lint.rules as pkg

    # the knowledge base's pydantic schema defines no rule: loaded only to validate a rule file
    for info in pkgutil.walk_packages(pkg.__path__, prefix="verl_lint.rules."):
        if info.name.rsplit(".", 1)[-1] not in {"base", "registry", "schema"}:
            importlib.import_module(info.name)


def all_rules() -> list[type[Rule]]:
    _load_builtin()
    return sorted(_RULES.values(), key=lambda r: r.code)


def rule_names() -> dict[str, str]:
    """{code: name} of every rule (built-in and added at run time). Settings resolve their
    selectors with this, so a run answered from the result cache never loads the rules
    (≈ 100 ms of imports)."""
    return rule_table("rule-index", lambda rule: rule.name)


def rule_table(namespace: str, describe: Callable[[type[Rule]], T]) -> dict[str, T]:
    """{code: describe(rule)} of every rule (built-in and added at run time), by code. A start
    whose verl-lint code an earlier run already described imports no rule module: the built-in
    rules' part is kept in the disk cache (`namespace`) by verl-lint's code stamp, and read
    once a run."""
    if not _LOADED:
        table = _BUILTIN.get(namespace)
        if table is None:
            from verl_lint.result_cache import code_stamp
            from verl_lint.verl import cache

            table = cache.load(namespace, code_stamp())
            if table is cache.MISS:
                # (`extend-rules` are registered only once the built-in rules are loaded)
                _load_builtin()
                table = {c: describe(r) for c, r in _RULES.items()}
                cache.store(namespace, code_stamp(), table)
                _BUILTIN[namespace] = table
                return dict(sorted(table.items()))  # every rule is loaded: this is all of them
            _BUILTIN[namespace] = table
        if not _LOADED:
            added = {c: describe(r) for c, r in _RULES.items()}
            return dict(sorted({**table, **added}.items()))
    return {rule.code: describe(rule) for rule in all_rules()}


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

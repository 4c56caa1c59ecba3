"""VL4xx: the knowledge base of verl pitfalls, declared as YAML rules.

Importing this package registers the built-in rules of the top-level `rules/` folder (the
registry imports it when it walks `verl_lint.rules`). `extend-rules` folders are loaded with
`register_rule_folder(path)`; `load_rule_folder(path)` returns the classes without registering.
"""

from verl_lint.rules.knowledge.loader import (
    BUILTIN_DIR, KnowledgeBaseError, load_builtin_rules, load_extend_rules, load_rule_folder,
    register_rule_folder,
)
from verl_lint.rules.registry import add_rules

add_rules(load_builtin_rules())

__all__ = [
    "BUILTIN_DIR", "KnowledgeBaseError", "load_builtin_rules", "load_extend_rules",
    "load_rule_folder", "register_rule_folder",
]

"""Mine the settings verl's code demands: `assert`/`raise` sites whose message names one.

verl states many requirements in the message of the check that enforces them —
`assert "raw_prompt" in batch, "need data.return_raw_chat=True …"` — under the conditions of
the code path that reaches the check (`if self.config.multi_turn.enable:` in the caller). The
miner reads every `assert` and `raise` of `verl/**.py` with `ast` (never importing verl) and
keeps the sites whose message names a setting as `key=value`:

    {"at": "verl/workers/rollout/sglang_rollout/sglang_rollout.py:1239",
     "function": "SGLangRollout._preprocess_prompt_to_async_rollout_requests",
     "require": {"key": "data.return_raw_chat", "value": true},
     "when": [{"key": "multi_turn.enable", "op": "truthy"}],
     "engine": "sglang", "message": "need data.return_raw_chat=True, …"}

`when` is what must hold for the check to run: the `if` tests enclosing it in its function and,
for a function only this file calls, those around its calls (a caller no file references,
such as a deprecated alias, is not a way in). Keys in `when` are as the code spells them
(`multi_turn.enable` under the rollout's `self.config`); the rule resolves them against the
composed config. A site with a condition that is not a plain test of config values has
`"when": null`: nobody can say statically when it runs. `engine` is the rollout engine whose
package holds the site (`verl/workers/rollout/<engine>_rollout/`), else null.
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from typing import Any, Iterator, Mapping

Files = Mapping[str, bytes]

# `data.return_raw_chat=True`, `actor_rollout_ref.rollout.mode=async` in a message
_REQUIREMENT = re.compile(
    r"(?<![\w.])([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)\s*=\s*(True|False|true|false|[A-Za-z_][\w-]*|\d+)"
    r"(?![\w(]|\.\w)")
_WORDS = frozenset({"not", "has", "is", "in", "and", "or", "must", "should"})
_ENGINE_DIR = re.compile(r"^verl/workers/rollout/(\w+?)_rollout/")
_CONFIG_ROOTS = ("config", "cfg")
_MAX_CALL_DEPTH = 3


def mine_constraints(files: Files) -> dict[str, Any]:
    """{"sites": [...]}, sorted by place; see the module docstring for a site's fields."""
    trees = {}
    for path in sorted(files):
        if path.startswith("verl/") and path.endswith(".py"):
            try:
                trees[path] = ast.parse(files[path])
            except (SyntaxError, ValueError):
                continue
    used = _used_names(trees.values())
    sites: list[dict[str, Any]] = []
    for path, tree in trees.items():
        sites.extend(_sites(path, tree, used))
    return {"sites": sites}


def _used_names(trees) -> Counter:
    """How often each name is used (`x`, `obj.x`) in the tree's code, `def`s and strings not
    counted: a function whose name is never used is called by no one."""
    counts: Counter = Counter()
    for tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute):
                counts[node.attr] += 1
            elif isinstance(node, ast.Name):
                counts[node.id] += 1
    return counts


class _Function:
    def __init__(self, qualname: str, node: ast.AST) -> None:
        self.qualname = qualname
        self.name = qualname.rsplit(".", 1)[-1]
        self.node = node


def _functions(tree: ast.Module) -> Iterator[_Function]:
    def walk(node: ast.AST, prefix: str) -> Iterator[_Function]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                yield _Function(prefix + child.name, child)
                yield from walk(child, prefix + child.name + ".")
            elif isinstance(child, ast.ClassDef):
                yield from walk(child, prefix + child.name + ".")
    yield from walk(tree, "")


def _guarded(body: list[ast.stmt], guards: tuple) -> Iterator[tuple[ast.AST, tuple]]:
    """(node, the if-tests that hold there, as (test, polarity)) for every statement and
    expression, not descending into nested functions or classes."""
    for stmt in body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        yield stmt, guards
        if isinstance(stmt, ast.If):
            yield from _exprs(stmt.test, guards)
            yield from _guarded(stmt.body, guards + ((stmt.test, True),))
            yield from _guarded(stmt.orelse, guards + ((stmt.test, False),))
            continue
        for field in ("body", "orelse", "finalbody", "handlers"):
            inner = getattr(stmt, field, None)
            if isinstance(inner, list) and inner and isinstance(inner[0], ast.AST):
                # a loop or try body may not run: its checks run under no extra condition
                yield from _guarded([s for h in inner for s in (
                    h.body if isinstance(h, ast.ExceptHandler) else [h])], guards)
        for value in ast.iter_child_nodes(stmt):
            if isinstance(value, ast.expr):
                yield from _exprs(value, guards)


def _exprs(node: ast.expr, guards: tuple) -> Iterator[tuple[ast.AST, tuple]]:
    for sub in ast.walk(node):
        yield sub, guards


def _sites(path: str, tree: ast.Module, referenced: Counter) -> Iterator[dict[str, Any]]:
    functions = list(_functions(tree))
    calls: dict[str, list[tuple[_Function, tuple]]] = {}
    checks: list[tuple[_Function, ast.AST, tuple]] = []
    for fn in functions:
        for node, guards in _guarded(fn.node.body, ()):
            if isinstance(node, ast.Call):
                callee = node.func.attr if isinstance(node.func, ast.Attribute) else (
                    node.func.id if isinstance(node.func, ast.Name) else None)
                if callee is not None:
                    calls.setdefault(callee, []).append((fn, guards))
            elif isinstance(node, (ast.Assert, ast.Raise)):
                checks.append((fn, node, guards))
    engine = _ENGINE_DIR.match(path)
    for fn, node, guards in checks:
        message = _message(node)
        if not message:
            continue
        for key, value in _REQUIREMENT.findall(message):
            if key.startswith("self.") or value in _WORDS:
                continue  # `self.name=…` is code; `x=… not in …` names no value
            when = _conditions(fn, guards, calls, referenced, depth=0)
            yield {
                "at": f"{path}:{node.lineno}", "function": fn.qualname,
                "require": {"key": key, "value": _constant(value)},
                "when": when, "engine": engine.group(1) if engine else None,
                "message": " ".join(message.split())[:300],
            }


def _message(node: ast.AST) -> str:
    """The literal text of an assert's message or a raised exception's first argument."""
    if isinstance(node, ast.Assert):
        expr = node.msg
    else:
        exc = node.exc
        expr = exc.args[0] if isinstance(exc, ast.Call) and exc.args else None
    if expr is None:
        return ""
    return _text(expr)


def _text(expr: ast.expr) -> str:
    """A message's literal text; an f-string's `{…}` becomes `…`, which names no value."""
    if isinstance(expr, ast.Constant) and isinstance(expr.value, str):
        return expr.value
    if isinstance(expr, ast.JoinedStr):
        return "".join(_text(v) if isinstance(v, ast.Constant) else "…" for v in expr.values)
    if isinstance(expr, ast.BinOp):  # "a" + "b", "a %s" % x
        return _text(expr.left) + (_text(expr.right) if isinstance(expr.op, ast.Add) else "")
    if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and \
            expr.func.attr == "format":
        return _text(expr.func.value)
    return ""


def _constant(text: str) -> Any:
    low = text.lower()
    if low in ("true", "false"):
        return low == "true"
    return int(text) if text.isdigit() else text


def _conditions(fn: _Function, guards: tuple, calls: dict, referenced: Counter,
                depth: int) -> list[dict[str, Any]] | None:
    """The config conditions under which the check runs, or None when one is not a plain
    test of config values (or the function's callers disagree)."""
    own = []
    for test, polarity in guards:
        conds = _test(test, polarity, fn.name == "__post_init__")
        if conds is None:
            return None
        own.extend(conds)
    callers = calls.get(fn.name, [])
    if not callers or depth >= _MAX_CALL_DEPTH:
        # called from another file (or not at all): it runs whenever that code runs
        return own
    paths = []
    for caller, call_guards in callers:
        if caller is fn:
            continue
        if referenced[caller.name] == 0:
            continue  # nobody calls the caller (a deprecated alias): not a way in
        outer = _conditions(caller, call_guards, calls, referenced, depth + 1)
        if outer is None:
            return None
        paths.append(outer)
    if not paths:
        return None  # every caller is dead code: the check never runs
    first = paths[0]
    if any(p != first for p in paths[1:]):
        return None  # reached under different conditions: none of them is necessary
    return own + first


def _test(test: ast.expr, polarity: bool, self_config: bool) -> list[dict[str, Any]] | None:
    """An `if` test as conditions on config keys (all must hold), or None. In a config
    dataclass's `__post_init__` (`self_config`), `self.x` is the config's own field and is
    written `self.x`: the node it belongs to is the one the requirement names."""
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) and polarity:
        out = []
        for v in test.values:
            conds = _test(v, True, self_config)
            if conds is None:
                return None
            out.extend(conds)
        return out
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return _test(test.operand, not polarity, self_config)
    key = _config_key(test, self_config)
    if key is not None:
        return [{"key": key, "op": "truthy" if polarity else "falsy"}]
    if polarity and _rank_zero(test):
        return []  # `if self._tp_rank == 0:` — every run has a rank 0
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        key = _config_key(test.left, self_config)
        right = test.comparators[0]
        op = test.ops[0]
        if key is None or not isinstance(right, (ast.Constant, ast.Tuple, ast.List)):
            return None
        value = ast.literal_eval(right)
        names = {ast.Eq: "==", ast.NotEq: "!=", ast.In: "in", ast.NotIn: "not_in",
                 ast.Is: "==", ast.IsNot: "!="}
        name = names.get(type(op))
        if name is None:
            return None
        if not polarity:
            name = {"==": "!=", "!=": "==", "in": "not_in", "not_in": "in"}[name]
        if name in ("in", "not_in"):
            value = list(value) if isinstance(value, (tuple, list)) else None
            if value is None:
                return None
        return [{"key": key, "op": name, "value": value}]
    return None


def _rank_zero(test: ast.expr) -> bool:
    """`rank == 0`, `self._tp_rank == 0`: true on one process of every run."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and
            isinstance(test.ops[0], ast.Eq)):
        return False
    left, right = test.left, test.comparators[0]
    name = left.attr if isinstance(left, ast.Attribute) else getattr(left, "id", "")
    return "rank" in name and isinstance(right, ast.Constant) and right.value == 0


def _config_key(node: ast.expr, self_config: bool = False) -> str | None:
    """`self.config.multi_turn.enable`, `config.data.get("x")` → `multi_turn.enable`, `data.x`;
    with `self_config`, `self.mode` → `self.mode`."""
    parts: list[str] = []
    while True:
        if isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                node.func.attr == "get" and node.args and isinstance(node.args[0], ast.Constant) \
                and isinstance(node.args[0].value, str):
            parts.append(node.args[0].value)
            node = node.func.value
        else:
            break
    if isinstance(node, ast.Name) and node.id == "self" and parts and parts[-1] in _CONFIG_ROOTS:
        parts.pop()
    elif isinstance(node, ast.Name) and node.id == "self" and self_config and parts:
        parts.append("self")
    elif isinstance(node, ast.Name) and node.id in _CONFIG_ROOTS:
        pass
    else:
        return None
    return ".".join(reversed(parts)) or None

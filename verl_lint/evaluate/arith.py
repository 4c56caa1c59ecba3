"""Bash integer arithmetic (`$((…))`) on already-expanded text.

Bare identifiers are looked up through a callback (bash evaluates a variable's value as an
expression). Anything unknowable — an unknown variable, assignment operators, division by zero —
raises `ArithUnknown` with a reason; the caller turns it into `Unknown`.
"""

from __future__ import annotations

import re
from typing import Callable

_TOKEN = re.compile(r"\s*(?:(0[xX][0-9a-fA-F]+|[0-9]+#[0-9a-zA-Z@_]+|[0-9]+)|([A-Za-z_][A-Za-z0-9_]*)"
                    r"|(\*\*|<<|>>|<=|>=|==|!=|&&|\|\||\+\+|--|[-+*/%<>&|^!~?:()=,]))")
_BIN = {  # operator: (precedence, right associative)
    "||": (1, False), "&&": (2, False), "|": (3, False), "^": (4, False), "&": (5, False),
    "==": (6, False), "!=": (6, False), "<": (7, False), ">": (7, False), "<=": (7, False),
    ">=": (7, False), "<<": (8, False), ">>": (8, False), "+": (9, False), "-": (9, False),
    "*": (10, False), "/": (10, False), "%": (10, False), "**": (12, True),
}
_MASK = (1 << 64) - 1


class ArithUnknown(Exception):
    pass


def _wrap(v: int) -> int:
    v &= _MASK
    return v - (1 << 64) if v >> 63 else v


def _number(tok: str) -> int:
    if tok[:2] in ("0x", "0X"):
        return int(tok, 16)
    if "#" in tok:
        base_s, digits = tok.split("#", 1)
        base = int(base_s)
        if not 2 <= base <= 36:
            raise ArithUnknown(f"unsupported base in `{tok}`")
        try:
            return int(digits, base)
        except ValueError:
            raise ArithUnknown(f"invalid number `{tok}`") from None
    if len(tok) > 1 and tok[0] == "0":
        try:
            return int(tok, 8)
        except ValueError:
            raise ArithUnknown(f"invalid octal number `{tok}`") from None
    return int(tok)


def evaluate(text: str, lookup: Callable[[str, int], int], depth: int = 0) -> int:
    """Evaluate `text`; `lookup(name, depth)` returns a variable's integer value."""
    if depth > 16:
        raise ArithUnknown("expression recursion too deep")
    toks: list[tuple[str, str]] = []
    pos = 0
    text = text.strip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m or m.end() == pos:
            raise ArithUnknown(f"cannot evaluate `{text}`")
        num, name, op = m.groups()
        toks.append(("n", num) if num else ("v", name) if name else ("o", op))
        pos = m.end()
    if not toks:
        return 0
    p = _Parser(toks, lookup, depth)
    value = p.ternary()
    if p.i != len(toks):
        raise ArithUnknown(f"cannot evaluate `{text}`")
    return value


class _Parser:
    def __init__(self, toks, lookup, depth) -> None:
        self.toks = toks
        self.i = 0
        self.lookup = lookup
        self.depth = depth

    def peek(self) -> tuple[str, str] | None:
        return self.toks[self.i] if self.i < len(self.toks) else None

    def take(self, op: str) -> bool:
        t = self.peek()
        if t is not None and t == ("o", op):
            self.i += 1
            return True
        return False

    def ternary(self) -> int:
        cond = self.binary(1)
        if self.take("?"):
            a = self.ternary()
            if not self.take(":"):
                raise ArithUnknown("`?` without `:`")
            b = self.ternary()
            return a if cond else b
        t = self.peek()
        if t is not None and t[0] == "o" and t[1] in ("=", ",", "++", "--"):
            raise ArithUnknown("assignment inside arithmetic")
        return cond

    def binary(self, min_prec: int) -> int:
        left = self.unary()
        while True:
            t = self.peek()
            if t is None or t[0] != "o" or t[1] not in _BIN:
                return left
            prec, right_assoc = _BIN[t[1]]
            if prec < min_prec:
                return left
            self.i += 1
            right = self.binary(prec if right_assoc else prec + 1)
            left = _apply(t[1], left, right)

    def unary(self) -> int:
        t = self.peek()
        if t is None:
            raise ArithUnknown("incomplete expression")
        if t[0] == "o":
            if t[1] in ("-", "+", "!", "~"):
                self.i += 1
                v = self.unary()
                op = t[1]
                return _wrap(-v if op == "-" else v if op == "+" else int(not v) if op == "!" else ~v)
            if t[1] == "(":
                self.i += 1
                v = self.ternary()
                if not self.take(")"):
                    raise ArithUnknown("unbalanced parentheses")
                return v
            raise ArithUnknown(f"unexpected `{t[1]}`")
        self.i += 1
        if t[0] == "n":
            return _wrap(_number(t[1]))
        return self.lookup(t[1], self.depth + 1)


def _apply(op: str, a: int, b: int) -> int:
    if op in ("/", "%"):
        if b == 0:
            raise ArithUnknown("division by zero")
        q = abs(a) // abs(b)
        q = q if (a >= 0) == (b >= 0) else -q
        return _wrap(q if op == "/" else a - q * b)
    if op == "**":
        if b < 0:
            raise ArithUnknown("negative exponent")
        return _wrap(pow(a, b, 1 << 64))
    return _wrap(_OPS[op](a, b))


_OPS = {  # built once, not per operation
    "+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b,
    "<<": lambda a, b: a << (b & 63), ">>": lambda a, b: a >> (b & 63),
    "<": lambda a, b: int(a < b), ">": lambda a, b: int(a > b), "<=": lambda a, b: int(a <= b),
    ">=": lambda a, b: int(a >= b), "==": lambda a, b: int(a == b),
    "!=": lambda a, b: int(a != b), "&": lambda a, b: a & b, "|": lambda a, b: a | b,
    "^": lambda a, b: a ^ b, "&&": lambda a, b: int(bool(a) and bool(b)),
    "||": lambda a, b: int(bool(a) or bool(b)),
}

"""Hydra's override semantics on plain trees — the lint-time fast path.

What Hydra does with a command-line override of a composed config
(`hydra._internal.config_loader_impl.ConfigLoaderImpl._apply_overrides_to_config`, which calls
`OmegaConf.select` / `OmegaConf.update` on a struct-mode DictConfig) is re-implemented here on the
plain nested dicts/lists the composition cache holds, so linting never builds OmegaConf nodes or
imports hydra. `tests/test_verl_differential.py` runs real Hydra as the oracle over thousands of
overrides on several releases and requires the same accept/reject verdict and the same result.

Trees: dicts, lists and leaves; a leaf string containing `${` is an interpolation, `???` is
OmegaConf's missing value. Every dict is in struct mode (Hydra sets it on the root). Any other
leaf object is opaque: an `Unknown` an override of the script set; a verdict that depends on it
raises `Unmodeled`, a lookup below it yields it.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any, NamedTuple

from verl_lint.evaluate.model import Unknown
from verl_lint.verl import cache

MISSING = "???"
ABSENT: Any = type("Absent", (), {"__repr__": lambda self: "<absent>"})()


# --- parsing override words ---------------------------------------------------------------------

_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_\-]*(?:\.(?:[A-Za-z_][A-Za-z0-9_\-]*|0|[1-9][0-9]*))*")
_PLAIN = re.compile(r"[A-Za-z0-9_\-/.:+%*@?|]*")
_UINT = r"(?:0|[1-9](?:_?[0-9])*)"
_POINT = rf"(?:{_UINT}?\.[0-9](?:_?[0-9])*|{_UINT}\.)"
_INT = re.compile(rf"[+-]?{_UINT}")
_FLOAT = re.compile(rf"[+-]?(?:{_POINT}|(?:{_UINT}|{_POINT})[eE][+-]?[0-9](?:_?[0-9])*"
                    r"|[Ii][Nn][Ff]|[Nn][Aa][Nn])")
_BOOL = re.compile(r"[Tt][Rr][Uu][Ee]|[Ff][Aa][Ll][Ss][Ee]")
_NULL = re.compile(r"[Nn][Uu][Ll][Ll]")


class Parsed(NamedTuple):  # a NamedTuple: built per override, cheaper than a frozen dataclass
    """One override as Hydra's OverridesParser understands it."""

    prefix: str  # "", "+", "++", "~"
    key: str  # key_or_group
    package: str | None = None
    value: Any = None  # Python value (str/int/float/bool/None/list/dict); None also for `~key`
    has_value: bool = True
    sweep: bool = False  # `a=1,2`, `choice(…)`: Hydra refuses it outside --multirun
    error: str | None = None  # Hydra's parse error


def _primitive(text: str) -> Any:
    if _INT.fullmatch(text):
        return int(text.replace("_", ""))
    if _FLOAT.fullmatch(text):
        return float(text.replace("_", ""))
    if _BOOL.fullmatch(text):
        return text.lower() == "true"
    if _NULL.fullmatch(text):
        return None
    return text


@lru_cache(maxsize=16384)  # scripts repeat the same override words; Parsed is immutable
def parse(text: str) -> Parsed:
    """Parse a whole override word (`+a.b=1`, `~x`, `model_engine=megatron`)."""
    fast = read_word(text)
    if fast is not None:
        return fast
    head, _, value = text.partition("=")
    depth = nesting(value)
    if depth > MAX_NESTING:
        p = parse(f"{head}=0")
        if p.error is not None:
            return p
        return p._replace(value=Unknown(
            reason=f"a value nested {depth} deep (verl-lint reads Hydra values up to "
                   f"{MAX_NESTING} deep)"))
    return _hydra_parse(text)


# Deeper values are not parsed: Hydra's grammar and OmegaConf recurse per level (about 4 and
# 10 Python frames), so whether verl itself can read one hundreds deep depends on the stack it
# runs on (Hydra 1.3 at verl's startup gives up near 245 `{a:`, OmegaConf near 100): unknown.
MAX_NESTING = 50


def nesting(value: str) -> int:
    """How deep `[`, `{` and `(` nest in an override value, outside quoted strings."""
    depth = deepest = 0
    quote = None
    i = 0
    while i < len(value):
        c = value[i]
        if quote is not None:
            if c == "\\":
                i += 1
            elif c == quote:
                quote = None
        elif c in "'\"":
            quote = c
        elif c in "[{(":
            depth += 1
            deepest = max(deepest, depth)
        elif c in "]})":
            depth -= 1
        i += 1
    return deepest


# Override words are read here as Hydra 1.3 reads them (hydra/grammar/OverrideLexer.g4,
# OverrideParser.g4, core/override_parser/overrides_visitor.py): `key=plain` by one regex; quoted
# strings, lists, dicts, blanks, escapes, interpolations and `group@package` keys by a small
# tokenizer and recursive descent, so that an unseen script need not import Hydra (≈ 0.14 s a
# process). What the reader does not model — sweeps, functions, `=`, `(`, group paths with `/`,
# odd characters, any syntax error — it declines, and Hydra itself reads the word.
# tests/test_hydra_reader.py holds it to real Hydra.

# The value-mode tokens. ANTLR's lexer takes the longest match; this order gives the same: blanks
# next to `,` `:` `]` `}` (and after `[` `{`) belong to that token, other blanks are WS.
_TOKEN = re.compile(r"""
    (?P<quoted>'(?:\\.|[^\\'])*'|"(?:\\.|[^\\"])*")  # ends at a quote after an even run of `\`
  | (?P<interp>\$\{[^}]+\})                         # INTERPOLATION: up to the first `}`
  | (?P<esc>\\[\\()\[\]{}:=,\ \t])                  # ESC: an escaped character
  | (?P<chars>[A-Za-z0-9_\-/+.%*@?|]+|[$\\])        # ID, INT, FLOAT, BOOL, NULL, UNQUOTED_CHAR
  | (?P<colon>[ \t]*:[ \t]*)
  | (?P<sep>[ \t]*(?:,[ \t]*|[\]}])|[\[{][ \t]*)
  | (?P<ws>[ \t]+)
""", re.S | re.X)
# QuotedString unescaping: a run of n backslashes before the quote (n odd) or at the end (n even)
# keeps n // 2 of them; every other backslash stays
_UNQUOTE = {q: re.compile(rf"(\\+)({q}|\Z)") for q in "'\""}
_PRIMITIVE = ("chars", "esc", "ws", "interp", "colon")
_DICT_KEY = ("chars", "esc", "ws")  # Hydra's dictKey: no `:` and no interpolation


class _Decline(Exception):
    """The word is not one the reader models: Hydra reads it."""


def read_word(text: str) -> Parsed | None:
    """Hydra's Parsed for a word this module reads without Hydra, else None."""
    prefix = "++" if text.startswith("++") else text[:1] if text[:1] in ("+", "~") else ""
    key, eq, value = text[len(prefix):].partition("=")
    if _KEY.fullmatch(key) and _PLAIN.fullmatch(value) and (eq or prefix == "~"):
        v = _primitive(value) if eq else None  # the common word: key=plain, or ~key
        # Hydra's `~a=null` has no value, as `~a` (Override._value is None)
        return Parsed(prefix=prefix, key=key, value=v, has_value=prefix != "~" or v is not None)
    group, at, package = key.partition("@")  # `group@package`
    if not _KEY.fullmatch(group) or (at and not _KEY.fullmatch(package)):
        return None
    package = package if at else None
    if not eq:
        return Parsed(prefix, group, package, None, has_value=False) if prefix == "~" else None
    toks = []
    pos, value = 0, value.lstrip(" \t")  # Hydra's EQUAL token takes the blanks after `=`
    while pos < len(value):
        m = _TOKEN.match(value, pos)
        if m is None:
            return None  # a character Hydra's lexer refuses, or one not modelled (`=`, `(`)
        kind = m.lastgroup
        toks.append((m.group().strip(" \t") if kind == "sep" else kind, m.group()))
        pos = m.end()
    toks.append(("end", ""))
    try:
        v, i = _element(toks, 0, 0) if len(toks) > 1 else ("", 0)
    except _Decline:
        return None
    if toks[i][0] != "end":
        return None  # a sweep `a,b`, or something after the value
    return Parsed(prefix, group, package, v, has_value=prefix != "~" or v is not None)


def _element(toks: list[tuple[str, str]], i: int, depth: int) -> tuple[Any, int]:
    kind, tok = toks[i]
    if kind == "quoted":
        return _UNQUOTE[tok[0]].sub(lambda m: m[1][:len(m[1]) // 2] + m[2], tok[1:-1]), i + 1
    if kind not in ("[", "{"):
        return _primitive_at(toks, i, _PRIMITIVE)
    if depth >= MAX_NESTING:
        raise _Decline
    close = "]" if kind == "[" else "}"
    items: list[Any] = []
    i += 1
    while toks[i][0] != close:  # `[]`, `{}`, else items separated by `,` up to the close
        if kind == "[":
            item, i = _element(toks, i, depth + 1)
        else:
            k, i = _primitive_at(toks, i, _DICT_KEY)
            if toks[i][0] != "colon":
                raise _Decline
            v, i = _element(toks, i + 1, depth + 1)
            item = (k, v)
        items.append(item)
        if toks[i][0] == ",":
            i += 1
            if toks[i][0] == close:
                raise _Decline  # `[1,]`
        elif toks[i][0] != close:
            raise _Decline
    if kind == "[":
        return items, i + 1
    # Hydra builds a dict of the typed keys (`true` and `1` are one key), then _plain makes
    # them strings
    return {str(k): v for k, v in dict(items).items()}, i + 1


def _primitive_at(toks: list[tuple[str, str]], i: int, allowed: tuple[str, ...]) -> tuple[Any, int]:
    """One primitive: a run of tokens less a trailing blank, typed (by `_primitive`) when it is a
    single INT, FLOAT, BOOL or NULL token."""
    j = i
    while toks[j][0] in allowed:
        j += 1
    if j == i:
        raise _Decline  # no primitive here (Hydra: a syntax error)
    # (a primitive never starts with WS: the token before it took the blanks)
    end = j - 1 if toks[j - 1][0] == "ws" else j
    text = "".join(t[1] if k == "esc" else t for k, t in toks[i:end])
    # no escaped character (`\ `, `\,`, `\{`…) is part of an INT, FLOAT, BOOL or NULL token, so
    # the unescaped text is typed as Hydra types the token
    return _primitive(text), j


@lru_cache(maxsize=8192)
def _hydra_parse(text: str) -> Parsed:
    hit = cache.load("parse", text)
    if hit is not cache.MISS:
        return hit
    from hydra.core.override_parser.types import OverrideType
    from hydra.errors import HydraException

    try:
        ov = _parser().parse_override(text)
    except HydraException as exc:
        result = Parsed(prefix="", key=text.partition("=")[0].lstrip("+~"),
                        error=str(exc).split("\n")[0])
    else:
        prefix = {OverrideType.ADD: "+", OverrideType.FORCE_ADD: "++",
                  OverrideType.DEL: "~"}.get(ov.type, "")
        sweep = ov.is_sweep_override()
        value = None if sweep else ov.value()
        result = Parsed(prefix=prefix, key=ov.key_or_group, package=ov.package,
                        value=_plain(value), has_value=ov._value is not None or prefix != "~",
                        sweep=sweep)
    cache.store("parse", text, result)
    return result


_PARSER = None


def _parser():
    global _PARSER
    if _PARSER is None:
        from hydra.core.override_parser.overrides_parser import OverridesParser

        _PARSER = OverridesParser.create()
    return _PARSER


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    # exact types only: a subclass (Hydra's own string types) becomes a plain str
    return value if value is None or type(value) in (str, int, float, bool) else str(value)


# --- trees ----------------------------------------------------------------------------------------

# isinstance's types as one constant: written `(dict, list)` in a call, the tuple is built anew
# at every call, on paths that run for every override
CONTAINERS = (dict, list)


def is_interp(v: Any) -> bool:
    return isinstance(v, str) and "${" in v


def is_container(v: Any) -> bool:
    return isinstance(v, CONTAINERS)


def is_opaque(v: Any) -> bool:
    """A value no YAML or override word produces: the script's `Unknown`, set by an override
    whose value the linter cannot know. Hydra's verdict on anything that depends on it is too."""
    return v is not None and v is not ABSENT and \
        not isinstance(v, (str, int, float, bool, dict, list))


_INDEX = re.compile(r"[+-]?\d+")


def child(node: Any, k: str) -> Any:
    """OmegaConf's `_select_one`: the child or ABSENT; a non-int index into a list is a TypeError."""
    if isinstance(node, dict):
        return node.get(k, ABSENT)
    if isinstance(node, list):
        if not _INDEX.fullmatch(k):
            raise HydraReject("type", f"index '{k}' is not an int")
        i = int(k)
        return node[i] if 0 <= i < len(node) else ABSENT
    return ABSENT


class HydraReject(Exception):
    """Hydra (or OmegaConf under it) refuses the override."""

    def __init__(self, kind: str, message: str, at: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.kind = kind  # "missing" (key not in struct), "through-value", "append", "delete", "type"
        self.message = message
        self.at = at  # path of the first missing / blocking component


# --- interpolation ------------------------------------------------------------------------------

_SELECT = re.compile(r"^\$\{oc\.select:\s*([^,}]+?)\s*(?:,(.*))?\}$", re.S)
_REF = re.compile(r"^\$\{\s*(\.*[A-Za-z_][\w.\-]*|\.+)\s*\}$")
_EMBEDDED = re.compile(r"\$\{\s*(\.*[A-Za-z_][\w.\-]*)\s*\}")


class Unresolvable(Exception):
    pass


class Target(NamedTuple):
    """Where an interpolation leads: a path in the tree, or a literal default."""

    path: tuple[str, ...] | None  # None: the oc.select default was used
    value: Any


def absolute(base: tuple[str, ...], ref: str) -> tuple[str, ...]:
    """OmegaConf's key resolution: `a.b` absolute, `.x` sibling, `..x` parent's sibling."""
    if not ref.startswith("."):
        return tuple(ref.split("."))
    dots = len(ref) - len(ref.lstrip("."))
    rest = ref[dots:]
    if dots - 1 > len(base):
        raise Unresolvable(ref)
    parent = base[:len(base) - (dots - 1)]
    return parent + (tuple(rest.split(".")) if rest else ())


def lookup(root: Any, path: tuple[str, ...]) -> Any:
    """Plain lookup without interpolation (ABSENT when not there, a non-int index included)."""
    node = root
    for k in path:
        # dicts first, inline: rules and the analysis look up tens of thousands of keys
        if isinstance(node, dict):
            node = node.get(k, ABSENT)
        elif isinstance(node, list) and _INDEX.fullmatch(k):
            node = child(node, k)
        else:
            return ABSENT
        if node is ABSENT:
            return ABSENT
    return node


def follow(root: Any, path: tuple[str, ...], depth: int = 0) -> tuple[Any, tuple[str, ...] | None]:
    """Lookup that dereferences interpolations on the way and at the end.

    Returns (value, path where the value lives; None for an oc.select default). Below an
    Unknown the script set, the value is that Unknown, at the path where it was set."""
    if depth > 16:
        raise Unresolvable("interpolation loop")
    node = root
    try:  # the common path, by subscripts alone: existing dicts all the way (else raises)
        for k in path:
            node = node[k]
    except (KeyError, TypeError):
        pass
    else:
        if not is_interp(node):
            return node, path
    node, here = root, ()
    for i, k in enumerate(path):
        if isinstance(node, dict):  # inline fast path of `child`
            node = node.get(k, ABSENT)
        elif isinstance(node, list):
            node = child(node, k)
        elif is_opaque(node):
            return node, here  # below an Unknown from the script: unknown too
        else:
            return ABSENT, None
        here = here + (k,) if here is not None else None
        if node is ABSENT:
            return ABSENT, None
        if is_interp(node) and i < len(path) - 1:
            t = interpolation_target(root, here, node, depth + 1)
            node, here = t.value, t.path
    if is_interp(node):
        t = interpolation_target(root, here, node, depth + 1)
        return t.value, t.path
    return node, here


def interpolation_target(root: Any, at: tuple[str, ...] | None, text: str, depth: int = 0) -> Target:
    """Resolve a whole-string `${path}` / `${oc.select:path,default}` at `at` (container parent)."""
    if at is None:
        raise Unresolvable(text)
    form = _whole_interpolation(text)
    if form is None:
        raise Unresolvable(text)
    select, ref, default = form
    value, where = follow(root, absolute(at[:-1], ref), depth)
    if not select:  # `${path}`
        if value is ABSENT:
            raise Unresolvable(text)
        return Target(where, value)
    if value is not ABSENT and value != MISSING:  # `${oc.select:path[,default]}`
        return Target(where, value)
    if default is None:
        return Target(None, None)
    return Target(None, _default_literal(default))


@lru_cache(maxsize=4096)  # the same few hundred interpolations of verl's YAML, every launch
def _whole_interpolation(text: str) -> tuple[bool, str, str | None] | None:
    """(is an oc.select, the referenced path, the select's default or None) of a whole-string
    interpolation, or None for anything else."""
    m = _SELECT.match(text)
    if m:
        return True, m.group(1).strip(), None if m.group(2) is None else m.group(2).strip()
    m = _REF.match(text)
    return (False, m.group(1), None) if m else None


def _default_literal(text: str) -> Any:
    if text in ("{}", "[]"):
        return {} if text == "{}" else []
    if text.startswith(("'", '"')) and text.endswith(text[0]) and len(text) >= 2:
        return text[1:-1]
    if "${" in text or "[" in text or "{" in text:
        raise Unresolvable(text)
    return _primitive(text)


def resolve_string(root: Any, at: tuple[str, ...], text: str) -> tuple[Any, tuple[str, ...] | None]:
    """Resolve an interpolation leaf fully: (value, first source path or None)."""
    if _whole_interpolation(text) is not None:
        t = interpolation_target(root, at, text)
        value = t.value
        if is_interp(value) and t.path is not None:
            value, _ = resolve_string(root, t.path, value)
        return value, t.path
    parts, first = [], None
    pos = 0
    for m in _EMBEDDED.finditer(text):
        value, where = follow(root, absolute(at[:-1], m.group(1)))
        if is_opaque(value):
            return value, where  # an Unknown from the script poisons the whole string
        if value is ABSENT or is_container(value) or value == MISSING:
            raise Unresolvable(text)
        if is_interp(value):
            value, _ = resolve_string(root, where, value)
        parts.append(text[pos:m.start()])
        parts.append("None" if value is None else str(value))
        first = first or where
        pos = m.end()
    parts.append(text[pos:])
    out = "".join(parts)
    if "${" in out:
        raise Unresolvable(text)
    return out, first


# --- OmegaConf.select, as Hydra's `+` and `~` use it ---------------------------------------------

def hydra_select(root: dict, parts: tuple[str, ...]) -> Any:
    """`OmegaConf.select(cfg, key, throw_on_missing=False)`: value, or None when absent/missing."""
    node: Any = root
    for i, k in enumerate(parts[:-1]):
        nxt = child(node, k)
        if nxt is ABSENT:
            return None
        if is_interp(nxt):
            try:
                nxt = interpolation_target(root, parts[:i + 1], nxt).value
            except Unresolvable:
                try:  # a string interpolation (`ckpt/${a}/${b}`): resolves, but to a string
                    nxt, _ = resolve_string(root, parts[:i + 1], nxt)
                except Unresolvable as exc:
                    raise HydraReject("type", f"cannot resolve {exc}", parts[:i + 1]) from None
        if not is_container(nxt):
            # OmegaConf's select swallows "not a container" here (Hydra adds); an Unknown
            # might be a container
            return ABSENT if is_opaque(nxt) else None
        node = nxt
    value = child(node, parts[-1])
    if value is ABSENT or value == MISSING:
        return None
    if is_interp(value):
        try:
            value, _ = resolve_string(root, parts, value)
        except Unresolvable:
            return ABSENT  # resolution needs something we do not model: unknown verdict
    return None if value == MISSING else value


# --- applying overrides ------------------------------------------------------------------------

class Tree:
    """A composed config being overridden, copy-on-write over the shared cached tree."""

    def __init__(self, base: dict) -> None:
        self.root = base
        self._owned: set[int] = set()

    def _own(self, node: Any) -> Any:
        if id(node) in self._owned:
            return node
        copy = dict(node) if isinstance(node, dict) else list(node)
        self._owned.add(id(copy))
        return copy

    def _writable_path(self, parts: tuple[str, ...]) -> Any:
        """Copy the containers along `parts` (which must exist) and return the last one."""
        self.root = node = self._own(self.root)
        for k in parts:
            kk: Any = int(k) if isinstance(node, list) else k
            nxt = self._own(node[kk])
            node[kk] = nxt
            node = nxt
        return node

    def set(self, parts: tuple[str, ...], value: Any) -> None:
        """Set `parts` to value, creating/replacing intermediates with {} as OmegaConf.update."""
        owned = self._owned
        parent = self.root
        if id(parent) not in owned:  # (only the first override copies the root)
            self.root = parent = self._own(parent)
        for k in parts[:-1]:
            if type(parent) is dict:  # the common step, inline: a dict into a dict
                kk: Any = k
                nxt = parent.get(k, ABSENT)
                if type(nxt) is dict and id(nxt) in owned:
                    parent = nxt  # copied by an earlier override already
                    continue
            else:
                kk = int(k) if isinstance(parent, list) else k
                nxt = child(parent, k)
            if is_container(nxt):
                nxt = self._own(nxt)
            else:  # absent, or a value: an empty dict takes its place
                nxt = {}
                owned.add(id(nxt))
            parent[kk] = nxt
            parent = nxt
        last: Any = int(parts[-1]) if isinstance(parent, list) else parts[-1]
        parent[last] = _fresh(value, owned) if isinstance(value, CONTAINERS) else value

    def set_in(self, parent: Any, parts: tuple[str, ...], value: Any) -> None:
        """`set`, given the container at `parts[:-1]` (or None): a dict the tree owns already
        takes a plain value in place, where `set`'s walk would end too (the nodes above an
        owned one are owned: a shared node is never written, so it holds none). Most
        overrides of a launch land in a dict an earlier one copied."""
        if type(parent) is dict and id(parent) in self._owned and \
                not isinstance(value, CONTAINERS):
            parent[parts[-1]] = value
        else:
            self.set(parts, value)

    def merge(self, parts: tuple[str, ...], value: Any, struct: bool) -> None:
        dest = self._writable_path(parts)
        _merge_into(dest, value, struct, parts, self._owned)

    def delete(self, parts: tuple[str, ...]) -> None:
        """Delete a key of a dict (Hydra cannot delete a list item)."""
        self._writable_path(parts[:-1]).pop(parts[-1], None)


def _fresh(value: Any, owned: set[int]) -> Any:
    if isinstance(value, dict):
        out = {k: _fresh(v, owned) for k, v in value.items()}
    elif isinstance(value, list):
        out = [_fresh(v, owned) for v in value]
    else:
        return value
    owned.add(id(out))
    return out


def _merge_into(dest: Any, src: Any, struct: bool, at: tuple[str, ...], owned: set[int]) -> None:
    """OmegaConf `merge_with` of a parsed dict/list into an existing container."""
    if isinstance(dest, list):
        if not isinstance(src, list):
            raise HydraReject("type", f"cannot merge a {type(src).__name__} into list "
                              f"`{'.'.join(at)}`", at)
        dest[:] = [_fresh(v, owned) for v in src]
        return
    if not isinstance(src, dict):
        raise HydraReject("type", f"cannot merge a list into dict `{'.'.join(at)}`", at)
    for k, v in src.items():
        cur = dest.get(k, ABSENT)
        if cur is ABSENT:
            if struct:
                raise HydraReject("missing", f"Key '{k}' is not in struct", at + (k,))
            dest[k] = _fresh(v, owned)
        elif isinstance(cur, dict) and isinstance(v, dict):
            mine = dict(cur)
            owned.add(id(mine))
            dest[k] = mine
            _merge_into(mine, v, struct, at + (k,), owned)
        elif isinstance(cur, list) and isinstance(v, list):
            dest[k] = [_fresh(x, owned) for x in v]
        elif isinstance(cur, CONTAINERS) and isinstance(v, CONTAINERS):
            raise HydraReject("type", f"cannot merge into `{'.'.join(at + (k,))}`", at + (k,))
        else:
            dest[k] = _fresh(v, owned)


def check_update(tree: Tree, parts: tuple[str, ...], value: Any,
                 force_add: bool) -> tuple[str, Any]:
    """Raise HydraReject if `OmegaConf.update` would fail; else say how it applies.

    Returns ("merge", _) (dict/list merged into an existing container), ("set", parent) (an
    existing value replaced) or ("add", parent) (the key was not there: `lookup` finds no
    value at `parts`); `parent` is the container at `parts[:-1]`, None when that is missing."""
    node: Any = tree.root
    try:  # the common walk, by subscripts alone: existing dicts all the way (any other raises)
        for k in parts[:-1]:
            node = node[k]
    except (KeyError, TypeError):
        node = None
    if type(node) is not dict:  # a key missing on the way, a list, a value: step by step
        node = tree.root
        for i, k in enumerate(parts[:-1]):
            nxt = node.get(k, ABSENT) if type(node) is dict else child(node, k)
            if type(nxt) is dict:  # on into an existing dict
                node = nxt
                continue
            if not is_container(nxt):
                if force_add and not (nxt is ABSENT and isinstance(node, list)):
                    return "add", None  # intermediates become {} and the rest is created
                # (a list does not grow: an index past its end fails even with '++')
                if is_opaque(nxt):
                    raise Unmodeled(".".join(parts))  # an Unknown might hold the rest
                if nxt is ABSENT or isinstance(node, list):
                    raise HydraReject("missing", f"Key '{k}' is not in struct", parts[:i + 1])
                # an existing value is replaced by an empty struct dict, where the next key fails
                raise HydraReject("missing", f"Key '{parts[i + 1]}' is not in struct",
                                  parts[:i + 2])
            node = nxt
    last = parts[-1]
    if type(node) is dict:  # `child`, inline: the parent of nearly every key is a dict
        cur = node.get(last, ABSENT)
    elif isinstance(node, list) and not _INDEX.fullmatch(last):
        raise HydraReject("type", f"index '{last}' is not an int", parts)
    else:
        cur = child(node, last)
    if isinstance(value, CONTAINERS):
        if is_opaque(cur):
            raise Unmodeled(".".join(parts))  # merged into, or replacing, an Unknown
        if is_container(cur):
            _merge_into(_scratch(cur), value, not force_add, parts, set())
            return "merge", node
    if cur is ABSENT:
        if not force_add or isinstance(node, list):
            raise HydraReject("missing", f"Key '{last}' is not in struct", parts)
        return "add", node
    return "set", node


def _scratch(node: Any) -> Any:
    """A deep copy to dry-run a merge on."""
    if isinstance(node, dict):
        return {k: _scratch(v) for k, v in node.items()}
    if isinstance(node, list):
        return [_scratch(v) for v in node]
    return node


def apply(tree: Tree, p: Parsed, parts: tuple[str, ...] | None = None) -> bool:
    """Apply one parsed value override like Hydra, or raise HydraReject (tree unchanged then,
    as for Unmodeled). Returns whether a value was at the key before (False for `~`). `parts`:
    the key split at its dots, when the caller has split it already."""
    if parts is None:
        parts = tuple(p.key.split("."))
    prefix, value = p.prefix, p.value  # (a NamedTuple's field is a descriptor call: read once)
    if prefix == "~":
        current = hydra_select(tree.root, parts)
        if current is None:
            raise HydraReject("delete", f"Could not delete from config. '{p.key}' does not exist.")
        if current is ABSENT:
            raise Unmodeled(p.key)
        if p.has_value and value is not None:
            if is_opaque(value) or is_opaque(current):
                raise Unmodeled(p.key)  # compared with a value nobody knows
            if value != current:
                raise HydraReject("delete", f"Could not delete from config. The value of "
                                  f"'{p.key}' is {current} and not {value}.")
        owner = lookup(tree.root, parts[:-1])
        if isinstance(owner, list):  # Hydra's `del node['0']`: a ListConfig wants an int
            raise HydraReject("type", f"an item of list '{'.'.join(parts[:-1])}' cannot be "
                              f"deleted with '~'", parts)
        if not isinstance(owner, dict):
            raise Unmodeled(p.key)  # the parent is reached through an interpolation
        tree.delete(parts)
        return False
    if prefix == "+":
        current = hydra_select(tree.root, parts)
        if current is ABSENT or is_opaque(current) or (current is not None and
                                                       is_opaque(value)):
            raise Unmodeled(p.key)  # an Unknown may be null, or a dict to merge
        if current is not None and not isinstance(value, CONTAINERS):
            raise HydraReject("append", f"Could not append to config. An item is already at "
                              f"'{p.key}'.")
    how, parent = check_update(tree, parts, value, prefix in ("+", "++"))
    if how == "merge":
        tree.merge(parts, value, struct=prefix == "")
    else:
        tree.set_in(parent, parts, value)
    return how != "add"


class Unmodeled(Exception):
    """Hydra's verdict depends on something this fast path does not model."""

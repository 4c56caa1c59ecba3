"""Build the EffectiveConfig of a launch from the overridden tree (lazily: rules ask for a
handful of keys, so a key's value, interpolation and origin are worked out on first access)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import lru_cache
from itertools import compress, islice
from operator import eq, is_not
from typing import Any, Iterator

from verl_lint.evaluate.model import Override, Unknown
from verl_lint.records import positional
from verl_lint.verl import hydra_semantics as hs
from verl_lint.verl.effective import EffectiveConfig, Origin, Resolved

Path = tuple[str, ...]
_DEFAULT = Origin(kind="default")
_UNSEEN = object()
_SCALARS = frozenset({int, float, bool, type(None)})  # never containers nor interpolations

# a launch resolves tens of keys (≈ 6,600 over verl's scripts), each with its origin: built
# positionally (a keyword call costs twice the instructions: see `records.positional`)
_resolved = positional(Resolved, "key", "value", "origin", "inherited_origin")
_origin = positional(Origin, "kind", "span", "from_key")


@lru_cache(maxsize=16384)  # the same keys, script after script and rule after rule: one split
def key_path(key: str) -> Path:
    """`a.b.c` as ("a", "b", "c") (shared: read only)."""
    return tuple(key.split("."))


def build_effective(version: str, config_name: str, root: dict,
                    origins: dict[Path, tuple[int, Override]],
                    base: dict | None = None, *, only_sets: bool = False) -> EffectiveConfig:
    """`root` is `base` (the shared composed tree, or None) with the launch's overrides;
    `only_sets`: all they did was set the paths of `origins` (no deletion), which lets
    `keys_ending` answer from the composed tree alone for a name none of them sets."""
    return EffectiveConfig(version, config_name, _Entries(root, origins, base, only_sets))


class _Shared:
    """The key listing of a shared composed tree, for every launch whose overrides keep it
    (see `_changed_keys`): the keys, the keys ending in each tail asked, the interpolations
    that enter a dict ((where each sits, where its dict lives): a key added in that dict is
    listed under both), and the path words of every interpolation (one naming a key added may
    now lead to it). Worked out once per composed tree and kept in the disk cache beside it."""

    def __init__(self, base: dict) -> None:
        from verl_lint.verl import configs

        self.base = base  # held: the id stays this tree's
        self.by_tail: dict[str, list[str]] = {}
        self.set_kinds: dict[Path, str] = {}  # path → `_set_kind`, asked by launches as met
        self.keys, self.aliases, self.words = configs.derived(
            base, "listing", self._list, __file__, hs.__file__)

    @staticmethod
    def _list(base: dict) -> tuple[tuple[str, ...], list[tuple[Path, Path]], frozenset[str]]:
        keys = tuple(_Entries(base, {}).flat)
        aliases: list[tuple[Path, Path]] = []
        words: set[str] = set()
        stack: list[tuple[Any, Path]] = [(base, ())]
        while stack:
            node, loc = stack.pop()
            for k, v in (node.items() if type(node) is dict else enumerate(node)):
                if isinstance(v, hs.CONTAINERS):
                    stack.append((v, loc + (str(k),)))
                elif isinstance(v, str) and "${" in v:
                    words.update(_WORD.findall(v))
                    if type(node) is not dict:
                        continue  # `_walk` resolves the interpolations of dicts only
                    try:
                        target = hs.interpolation_target(base, loc + (k,), v)
                    except (hs.Unresolvable, hs.HydraReject):
                        continue
                    if isinstance(target.value, dict) and target.path is not None:
                        aliases.append((loc + (k,), target.path))
        return keys, aliases, frozenset(words)

    def ending(self, tail: str) -> list[str]:
        hit = self.by_tail.get(tail)
        if hit is None:
            hit = self.by_tail[tail] = [k for k in self.keys if k.endswith(tail)]
        return hit


_SHARED: dict[int, _Shared] = {}  # id(composed tree) → its listing
_WORD = re.compile(r"[\w\-]+")  # the parts of an interpolation's path, and other words
_MAY_NEST = re.compile(r"[\[{$]")  # in an override's value: maybe a container or interpolation


def _shared(base: dict) -> _Shared:
    hit = _SHARED.get(id(base))
    if hit is None or hit.base is not base:
        if len(_SHARED) >= 64:
            _SHARED.clear()
        hit = _SHARED[id(base)] = _Shared(base)
    return hit


REPLACED, ADDED, BLOCKED = "replaced", "added", "blocked"


def _set_kind(base: dict, path: Path) -> str:
    """What setting a plain value at `path` does to the listing of the composed tree `base`:
    REPLACED (a value that leads nowhere, reached through dicts: the same keys listed), ADDED
    (the tree lacks it below its dicts: new dicts holding the path only) or BLOCKED (through
    or over anything else, where an interpolation may lead elsewhere now)."""
    node = _through_dicts(base, path)
    if node is _UNSEEN:
        return ADDED
    return REPLACED if node is not _PAST and _leads_nowhere(base, path, node) else BLOCKED


_PAST = object()  # `_through_dicts`: a step met something other than a dict


def _through_dicts(node: Any, path: Path) -> Any:
    """The node at `path` below `node` through dicts; _UNSEEN where a dict lacks the next key,
    _PAST where the next step is into anything else."""
    for k in path:
        if type(node) is not dict:
            return _PAST
        node = node.get(k, _UNSEEN)
        if node is _UNSEEN:
            return _UNSEEN
    return node


def _plain(v: Any) -> bool:
    """A leaf of the listing that no interpolation enters or passes through differently: not
    a container or interpolation, or a list of such values."""
    if type(v) is list:
        return all(not isinstance(x, hs.CONTAINERS) and
                   not (isinstance(x, str) and "${" in x) for x in v)
    return not isinstance(v, dict) and not (isinstance(v, str) and "${" in v)


def _plain_tree(v: Any) -> bool:
    return all(map(_plain_tree, v.values())) if type(v) is dict else _plain(v)


def _leaves(path: Path, v: Any) -> Iterator[Path]:
    """The listed keys of a plain tree `v` at `path`."""
    if type(v) is dict and v:
        for k, x in v.items():
            yield from _leaves(path + (k,), x)
    else:
        yield path


def _changed_keys(tree: Any, base: Any, root: dict, loc: Path,
                  added: list[tuple[Path, Any]], filled: list[Path]) -> bool:
    """Whether `tree` (`root`, the composed tree, overridden) lists the keys of `base` (the
    node at `loc` of `root`) but for keys added to its dicts, holding plain values or trees of
    them ((path, value) appended to `added`), and empty dicts given such keys (`filled`:
    listed in `base`, not in `tree`).

    So it does when every dict keeps its keys in order, new keys holding plain values, and a
    value that changed is a plain value over a plain one or over an interpolation that leads
    to no container (`${oc.select:…}` of a scalar, which most overrides replace): no dict then
    goes, and every interpolation enters the same dicts as in `root` unless it leads to where
    a key was added (the caller checks that). Copy-on-write trees share every untouched node,
    so this walks only what the overrides copied."""
    if tree is base:
        return True
    if type(tree) is dict and type(base) is dict:
        if not base and tree:
            filled.append(loc)
        if len(tree) < len(base) or not all(map(eq, tree, base)):
            return False  # a key gone or moved (compared in C, no key lists built)
        for k in islice(tree, len(base), None):
            if not _plain_tree(tree[k]):
                return False
            added.append((loc + (k,), tree[k]))
        # the keys kept in order line up value by value: only the values the overrides
        # replaced are visited (found in C: a copied dict holds up to a hundred keys), and a
        # plain scalar over a plain scalar, what most overrides do, needs no call
        for k in compress(base, map(is_not, tree.values(), base.values())):
            t, v = tree[k], base[k]
            if type(t) in _SCALARS and type(v) in _SCALARS or \
                    type(t) is str and type(v) is str and "${" not in t and "${" not in v:
                continue
            if not _changed_keys(t, v, root, loc + (k,), added, filled):
                return False
        return True
    if type(tree) is list and type(base) is list and len(tree) == len(base) and \
            not (_plain(tree) and _plain(base)):
        # nothing below a list is listed: a key added there (which `filled` and `added`
        # would take for listed) is a change only an interpolation sees, so none is allowed
        before = len(added) + len(filled)
        return all(_changed_keys(v, b, root, loc + (str(i),), added, filled)
                   for i, (v, b) in enumerate(zip(tree, base))) and \
            len(added) + len(filled) == before
    return _plain(tree) and _leads_nowhere(root, loc, base)


def _leads_nowhere(root: dict, loc: Path, v: Any) -> bool:
    """`v`, at `loc` of the composed tree `root`, is a plain value or an interpolation that
    leads to no container: nothing is listed below it, nor through it where it is replaced."""
    if _plain(v):
        return True
    if not isinstance(v, str):
        return False
    try:
        target = hs.interpolation_target(root, loc, v)
    except (hs.Unresolvable, hs.HydraReject):
        return True
    return not isinstance(target.value, hs.CONTAINERS)


def _listed_changes(shared: _Shared, added: list[tuple[Path, Any]],
                    filled: list[Path]) -> tuple[list[str], set[str]] | None:
    """(the keys the launch's listing adds to the composed tree's, the keys it no longer has)
    for the changes `_changed_keys` found, or None when that takes more than this knows.

    A key added in (or an empty dict filled below) a dict that an interpolation enters is
    listed under the interpolation's path too; that is followed one interpolation deep: not
    when the interpolation sits in an entered dict or an entering one sits in its dict. A dict
    added where an interpolation's path names its key may now be entered: not followed."""
    if any(type(v) is dict and path[-1] in shared.words for path, v in added):
        return None
    changed = [*(path for path, _ in added), *filled]
    aliases = [(at, target) for at, target in shared.aliases
               if any(c[:len(target)] == target for c in changed)]
    for at, target in aliases:
        if any(at[:len(t)] == t or a[:len(target)] == target for a, t in shared.aliases):
            return None  # it sits in an entered dict, or one sits in its dict: a chain
        if _lookup(shared.base, target) == {}:
            return None  # it entered no dict: it was a key of its own
    new: list[str] = []
    gone: set[str] = set()
    for path, value in added:
        for leaf in _leaves(path, value):
            new.append(".".join(leaf))
            new.extend(".".join(at + leaf[len(target):]) for at, target in aliases
                       if leaf[:len(target)] == target)
    for path in filled:
        gone.add(".".join(path))
        gone.update(".".join(at + path[len(target):]) for at, target in aliases
                    if path[:len(target)] == target)
    return new, gone


def _lookup(tree: dict, path: Path) -> Any:
    node: Any = tree
    for k in path:
        if type(node) is not dict or k not in node:
            return None
        node = node[k]
    return node


class _Entries(Mapping):
    """dotted key → Resolved over the leaves of the tree, seen through inherited nodes.

    A dict, or a `${…}` interpolation whose target is a dict, is entered (`_opens`); everything
    else (empty dicts included) is a leaf, an entry. `_walk` lists the entries below a node,
    `_descend` follows one key without listing anything. A key below an Unknown the script set
    is not listed, but asked for, it is that Unknown (absent would be a guess)."""

    def __init__(self, root: dict, origins: dict[Path, tuple[int, Override]],
                 base: dict | None = None, only_sets: bool = False) -> None:
        self.root = root
        self._base = base
        self._composed = base  # (`_base` is dropped once the launch lists its own keys)
        self._only_sets = only_sets
        self._added: Any = _UNSEEN  # `_added_names`, once asked
        # (the base's listing, keys the overrides added, keys they made dicts) when that is
        # all they changed (`keys_ending`)
        self._changes: tuple[_Shared, list[str], set[str]] | None = None
        self._flat: dict[str, tuple[Path, Path, Any]] | None = None  # key → (path, loc, raw)
        self._done: dict[str, Resolved | None] = {}  # None: absent
        self._script_origins: dict[int, Origin] = {}  # one Origin per override
        self._origins = origins  # path → (its place in the order, the override that set it)

    @property
    def flat(self) -> dict[str, tuple[Path, Path, Any]]:
        if self._flat is None:
            self._flat = {}
            self._walk(self.root, (), (), 0, self._flat)
        return self._flat

    def keys_with_prefix(self, prefix: str) -> Iterator[str]:
        """Keys starting with `prefix`, walking only the subtree that can hold them."""
        if not prefix or self._flat is not None:
            return (k for k in self.flat if k.startswith(prefix))
        parts = tuple(prefix.split("."))[:-1]
        hit = self._descend(parts)
        if hit is None:
            return iter(())
        out: dict[str, tuple[Path, Path, Any]] = {}
        self._walk(hit[0], parts, hit[1], 0, out)
        return (k for k in out if k.startswith(prefix))

    def keys_ending(self, tail: str) -> list[str]:
        """The keys ending in `tail` (".multi_turn.enable"), not in the order of a listing.
        Most launches set values and add a few: their keys are those of the composed tree
        (listed once for all of them) and the ones they add."""
        if self._composed is not None and not _shared(self._composed).ending(tail) and \
                not self._may_add(tail.rpartition(".")[2]):
            return []  # (VL412 asks for keys of other releases, that most launches never add)
        if self._base is not None and self._flat is None and self._changes is None:
            added: list[tuple[Path, Any]] = []
            filled: list[Path] = []
            shared = _shared(self._base)
            changes = None
            if _changed_keys(self.root, self._base, self._base, (), added, filled):
                changes = _listed_changes(shared, added, filled)
            if changes is None:
                self._base = None  # listed itself from now on
            else:
                self._changes = (shared, *changes)
        if self._changes is not None:
            shared, added_keys, gone = self._changes
            found = [k for k in shared.ending(tail) if k not in gone]
            return [*found, *(k for k in added_keys if k.endswith(tail) and k not in found)]
        return [k for k in self.flat if k.endswith(tail)]

    def _may_add(self, name: str) -> bool:
        """Whether the launch's listing may hold a key named `name` (its last part) that the
        composed tree's lacks: not when the overrides only set plain values, each over a
        value that leads nowhere or at a path the composed tree lacks (`_added_names`), and
        none of the latter ends in `name`.

        A set over a value that leads nowhere lists the same keys (that one, under every path
        it was listed at). A dict an interpolation enters is one it entered before — its path
        leads through dicts of the composed tree, or through a set value to none — or one of
        the new dicts on an added path, holding that path only. So a key the launch lists
        that the composed tree does not is an added path, under some interpolation's path
        perhaps, and its last part is that path's."""
        if self._added is _UNSEEN:
            self._added = self._added_names()
        return self._added is None or name in self._added

    def _added_names(self) -> set[str] | None:
        """The last parts of the paths set that the composed tree lacks, when every path set
        holds a plain value (`_plain`) and is one `_set_kind` does not find BLOCKED; else None."""
        if not self._only_sets or self._composed is None:
            return None
        kinds = _shared(self._composed).set_kinds
        added = set()
        for path, (_, override) in self._origins.items():
            kind = kinds.get(path)
            if kind is None:
                kind = kinds[path] = _set_kind(self._composed, path)
            if kind is BLOCKED:
                return None
            # the value is looked up only where Hydra may read a container or an
            # interpolation in the word (a later override under it is BLOCKED or ADDED)
            value = override.value
            if type(value) is str and _MAY_NEST.search(value) and \
                    not _plain(_lookup(self.root, path)):
                return None
            if kind is ADDED:
                added.add(path[-1])
        return added

    def composed_keys_ending(self, tail: str) -> list[str] | None:
        return None if self._composed is None else _shared(self._composed).ending(tail)

    def plainly_has(self, key: str) -> bool:
        path = key_path(key)
        node = _through_dicts(self.root, path)
        if node is _UNSEEN or node is _PAST:
            return False
        # `_walk` lists a node it does not enter (a value, an empty dict, an Unknown, an
        # interpolation of a value) as its own key
        return self._opens(node, path) is None

    def _opens(self, node: Any, loc: Path) -> tuple[dict, Path] | None:
        """(the dict `node` at `loc` is entered as, where that dict lives), or None for a leaf."""
        if isinstance(node, dict):
            return (node, loc) if node else None
        if hs.is_interp(node):
            try:
                target = hs.interpolation_target(self.root, loc, node)
            except (hs.Unresolvable, hs.HydraReject):
                return None
            if isinstance(target.value, dict) and target.value and target.path is not None:
                return target.value, target.path
        return None

    def _walk(self, node: Any, path: Path, loc: Path, depth: int,
              out: dict[str, tuple[Path, Path, Any]]) -> None:
        inner = self._opens(node, loc) if depth < 8 or isinstance(node, dict) else None
        if inner is None:
            out[".".join(path)] = (path, loc, node)
            return
        d, base = inner
        if d is not node:  # entered through an interpolation (a loop of them stops at 8)
            depth += 1
        # the flat listing of a launch's whole config (≈ 3000 keys): a plain leaf, most of
        # them, is listed here without a call, a `_opens` or a join per key
        prefix = ".".join(path) + "." if path else ""
        same = base == path
        for k, v in d.items():
            p = path + (k,)
            if isinstance(v, dict) and v or isinstance(v, str) and "${" in v:
                self._walk(v, p, p if same else base + (k,), depth, out)
            else:
                out[prefix + k] = (p, p if same else base + (k,), v)

    def _descend(self, parts: Path) -> tuple[Any, Path] | None:
        """(the node at `parts`, where it lives), through inherited dicts; None when absent."""
        node: Any = self.root
        try:  # the common case, by subscripts alone: existing dicts all the way (else raises)
            for k in parts:
                node = node[k]
            return node, parts
        except (KeyError, TypeError):
            node = self.root
        for i, k in enumerate(parts):
            if type(node) is not dict:
                return self._descend_from(node, parts, i)
            node = node.get(k, _UNSEEN)
            if node is _UNSEEN:
                return None
        return node, parts

    def _descend_from(self, node: Any, parts: Path, i: int) -> tuple[Any, Path] | None:
        """`_descend` from `node` at `parts[:i]`, a node that is not a dict."""
        loc = parts[:i]
        for k in parts[i:]:
            if type(node) is dict:
                node = node.get(k, _UNSEEN)
                if node is _UNSEEN:
                    return None
                loc = loc + (k,)
                continue
            if hs.is_opaque(node):
                return node, loc  # below an Unknown from the script
            inner = self._opens(node, loc)
            if inner is None or k not in inner[0]:
                return None
            node, loc = inner[0][k], inner[1] + (k,)
        return node, loc

    def __iter__(self) -> Iterator[str]:
        return iter(self.flat)

    def __len__(self) -> int:
        return len(self.flat)

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self._locate(key) is not None

    def __getitem__(self, key: str) -> Resolved:
        hit = self.get(key)
        if hit is None:
            raise KeyError(key)
        return hit

    def get(self, key: str, default: Any = None) -> Any:
        # Mapping.get goes through __getitem__ and a KeyError for every absent key
        hit = self._done.get(key, _UNSEEN)
        if hit is _UNSEEN:
            where = self._locate(key)  # absent, a container, or a leaf (below an Unknown too)
            hit = self._done[key] = None if where is None else self._resolve(key, *where)
        return default if hit is None else hit

    def _locate(self, key: str) -> tuple[Path, Path, Any] | None:
        """(path, where its raw value lives, the raw value) for a leaf key, without flattening."""
        path = key_path(key)
        hit = self._descend(path)
        if hit is None:
            return None
        node, loc = hit
        # `_opens` without a call for the plain leaf most keys are
        if isinstance(node, dict) and node or isinstance(node, str) and "${" in node and \
                self._opens(node, loc) is not None:
            return None
        return path, loc, node

    def origin_of(self, path: Path) -> Origin:
        """The origin of the latest override that set `path` or a node above it."""
        # one lookup per node along the path: rules ask a few dozen keys a launch, fewer
        # lookups than indexing every override's path (a trie) took to build
        origins, best = self._origins, None
        for end in range(1, len(path) + 1):
            hit = origins.get(path[:end])
            if hit is not None and (best is None or hit[0] > best[0]):
                best = hit
        if best is None:
            return _DEFAULT
        origin = self._script_origins.get(best[0])
        if origin is None:
            origin = self._script_origins[best[0]] = _origin("script", best[1].span, None)
        return origin

    def _resolve(self, key: str, path: Path, loc: Path, raw: Any) -> Resolved:
        own = self.origin_of(path)
        if hs.is_interp(raw):
            try:
                value, source = hs.resolve_string(self.root, loc, raw)
            except (hs.Unresolvable, hs.HydraReject, RecursionError):
                return _resolved(key, Unknown(reason=f"cannot resolve {raw}"), own, None)
            if own.kind == "script" or source is None:
                return _resolved(key, value, own, None)
            return _resolved(key, value, _origin("inherited", None, ".".join(source)),
                             self.origin_of(source))
        if loc != path and own.kind != "script":
            return _resolved(key, raw, _origin("inherited", None, ".".join(loc)),
                             self.origin_of(loc))
        return _resolved(key, raw, own, None)

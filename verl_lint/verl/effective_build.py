"""Build the EffectiveConfig of a launch from the overridden tree (lazily: rules ask for a
handful of keys, so a key's value, interpolation and origin are worked out on first access)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Iterator

from verl_lint.evaluate.model import Override, Unknown
from verl_lint.verl import hydra_semantics as hs
from verl_lint.verl.effective import EffectiveConfig, Origin, Resolved

Path = tuple[str, ...]
_DEFAULT = Origin(kind="default")
_UNSEEN = object()

_setattr = object.__setattr__


def construct(cls, fields: dict[str, Any]):
    """What `cls.model_construct(**fields)` builds when `fields` names every field, without its
    generic per-field loop (3x slower). Only for values already of the right types: rules ask
    for a hundred keys per launch, and a launch applies tens of overrides."""
    obj = cls.__new__(cls)
    _setattr(obj, "__dict__", fields)
    _setattr(obj, "__pydantic_fields_set__", set(fields))
    _setattr(obj, "__pydantic_extra__", None)
    _setattr(obj, "__pydantic_private__", None)
    return obj


def _resolved(key: str, value: Any, origin: Origin, inherited_origin: Origin | None = None) -> Resolved:
    return construct(Resolved, {"key": key, "value": value, "origin": origin,
                                 "inherited_origin": inherited_origin})


def _origin(kind: str, span=None, from_key: str | None = None) -> Origin:
    return construct(Origin, {"kind": kind, "span": span, "from_key": from_key})


def build_effective(version: str, config_name: str, root: dict,
                    origins: dict[Path, tuple[int, Override]]) -> EffectiveConfig:
    return EffectiveConfig(version, config_name, _Entries(root, origins))


class _Entries(Mapping):
    """dotted key → Resolved over the leaves of the tree, seen through inherited nodes."""

    def __init__(self, root: dict, origins: dict[Path, tuple[int, Override]]) -> None:
        self.root = root
        self.origins = origins
        self._flat: dict[str, tuple[Path, Path]] | None = None  # key → (path, where raw lives)
        self._done: dict[str, Resolved] = {}
        self._script_origins: dict[int, Origin] = {}  # one Origin per override

    @property
    def flat(self) -> dict[str, tuple[Path, Path]]:
        if self._flat is None:
            self._flat = {}
            self._walk(self.root, (), (), 0)
        return self._flat

    def keys_with_prefix(self, prefix: str) -> Iterator[str]:
        """Keys starting with `prefix`, walking only the subtree that can hold them."""
        if not prefix or self._flat is not None:
            return (k for k in self.flat if k.startswith(prefix))
        parts = tuple(prefix.split("."))[:-1]
        node: Any = self.root
        loc: Path | None = ()
        for k in parts:
            if hs.is_interp(node) and loc is not None:
                try:
                    target = hs.interpolation_target(self.root, loc, node)
                except (hs.Unresolvable, hs.HydraReject):
                    return iter(())
                node, loc = target.value, target.path
            if not isinstance(node, dict) or k not in node:
                return iter(())
            node = node[k]
            loc = loc + (k,) if loc is not None else None
        out: dict[str, tuple[Path, Path]] = {}
        self._walk(node, parts, loc if loc is not None else (), 0, out)
        return (k for k in out if k.startswith(prefix))

    def _walk(self, node: Any, path: Path, loc: Path, depth: int,
              out: dict[str, tuple[Path, Path]] | None = None) -> None:
        if out is None:
            out = self._flat
        if isinstance(node, dict) and node:
            for k, v in node.items():
                self._walk(v, path + (k,), loc + (k,), depth, out)
            return
        if hs.is_interp(node) and depth < 8:
            try:
                target = hs.interpolation_target(self.root, loc, node)
            except (hs.Unresolvable, hs.HydraReject):
                target = None
            if target is not None and isinstance(target.value, dict) and target.value:
                base = target.path  # None: the oc.select default ({…}) is used
                for k, v in target.value.items():
                    self._walk(v, path + (k,), (base + (k,)) if base is not None else (),
                               depth + 1, out)
                return
        out[".".join(path)] = (path, loc)

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
        hit = self._done.get(key)
        if hit is None:
            where = self._flat.get(key) if self._flat is not None else self._locate(key)
            if where is None:
                return default
            hit = self._done[key] = self._resolve(key, *where)
        return hit

    def _locate(self, key: str) -> tuple[Path, Path] | None:
        """(path, where its raw value lives) for a leaf key, without flattening everything.

        Mirrors `_walk`: containers reached through a `${…}` interpolation are entered at
        their target; only leaves (and empty dicts) are entries."""
        path = tuple(key.split("."))
        node: Any = self.root
        loc: Path | None = ()
        for k in path:
            if type(node) is dict:  # the common step, inline: rules look up ~100 keys a launch
                node = node.get(k, _UNSEEN)
                if node is _UNSEEN:
                    return None
                if loc is not None:
                    loc = loc + (k,)
                continue
            if hs.is_interp(node) and loc is not None:
                try:
                    target = hs.interpolation_target(self.root, loc, node)
                except (hs.Unresolvable, hs.HydraReject):
                    return None
                if not isinstance(target.value, dict) or not target.value:
                    return None
                node, loc = target.value, target.path
            if not isinstance(node, dict) or k not in node:
                return None
            node = node[k]
            loc = loc + (k,) if loc is not None else None
        if isinstance(node, dict) and node:
            return None
        if hs.is_interp(node) and loc is not None:
            try:
                target = hs.interpolation_target(self.root, loc, node)
            except (hs.Unresolvable, hs.HydraReject):
                target = None
            if target is not None and isinstance(target.value, dict) and target.value:
                return None
        return path, (loc if loc is not None else ())

    def origin_of(self, path: Path) -> Origin:
        best = None
        for i in range(len(path), 0, -1):
            o = self.origins.get(path[:i])
            if o is not None and (best is None or o[0] > best[0]):
                best = o
        if best is None:
            return _DEFAULT
        origin = self._script_origins.get(best[0])
        if origin is None:
            origin = self._script_origins[best[0]] = _origin("script", span=best[1].span)
        return origin

    def _resolve(self, key: str, path: Path, loc: Path) -> Resolved:
        own = self.origin_of(path)
        if not loc:  # under an oc.select default: verl's default
            return _resolved(key=key, value=self._raw_default(path), origin=_DEFAULT)
        raw = hs.lookup(self.root, loc)
        inherited = loc != path
        if hs.is_interp(raw):
            try:
                value, source = hs.resolve_string(self.root, loc, raw)
            except (hs.Unresolvable, hs.HydraReject, RecursionError):
                return _resolved(key=key, value=Unknown(reason=f"cannot resolve {raw}"),
                                origin=own)
            if own.kind == "script" or source is None:
                return _resolved(key=key, value=value, origin=own)
            return _resolved(key=key, value=value,
                            origin=_origin("inherited", from_key=".".join(source)),
                            inherited_origin=self._final_origin(source))
        if inherited and own.kind != "script":
            return _resolved(key=key, value=raw, origin=_origin("inherited", from_key=".".join(loc)),
                            inherited_origin=self._final_origin(loc))
        return _resolved(key=key, value=raw, origin=own)

    def _final_origin(self, path: Path) -> Origin:
        return self.origin_of(path)

    def _raw_default(self, path: Path) -> Any:
        """A leaf under an oc.select default dict: walk the default literal."""
        for i in range(len(path) - 1, 0, -1):
            node = hs.lookup(self.root, path[:i])
            if hs.is_interp(node):
                try:
                    target = hs.interpolation_target(self.root, path[:i], node)
                except (hs.Unresolvable, hs.HydraReject):
                    return Unknown(reason="cannot resolve")
                return hs.lookup(target.value, path[i:])
        return Unknown(reason="cannot resolve")

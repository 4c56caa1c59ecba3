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

    @property
    def flat(self) -> dict[str, tuple[Path, Path]]:
        if self._flat is None:
            self._flat = {}
            self._walk(self.root, (), (), 0)
        return self._flat

    def _walk(self, node: Any, path: Path, loc: Path, depth: int) -> None:
        if isinstance(node, dict) and node:
            for k, v in node.items():
                self._walk(v, path + (k,), loc + (k,), depth)
            return
        if hs.is_interp(node) and depth < 8:
            try:
                target = hs.interpolation_target(self.root, loc, node)
            except (hs.Unresolvable, hs.HydraReject):
                target = None
            if target is not None and isinstance(target.value, dict) and target.value:
                base = target.path  # None: the oc.select default ({…}) is used
                for k, v in target.value.items():
                    self._walk(v, path + (k,), (base + (k,)) if base is not None else (), depth + 1)
                return
        self._flat[".".join(path)] = (path, loc)

    def __iter__(self) -> Iterator[str]:
        return iter(self.flat)

    def __len__(self) -> int:
        return len(self.flat)

    def __contains__(self, key: object) -> bool:
        return key in self.flat

    def __getitem__(self, key: str) -> Resolved:
        hit = self._done.get(key)
        if hit is None:
            path, loc = self.flat[key]
            hit = self._done[key] = self._resolve(key, path, loc)
        return hit

    def origin_of(self, path: Path) -> Origin:
        best = None
        for i in range(len(path), 0, -1):
            o = self.origins.get(path[:i])
            if o is not None and (best is None or o[0] > best[0]):
                best = o
        return _DEFAULT if best is None else Origin(kind="script", span=best[1].span)

    def _resolve(self, key: str, path: Path, loc: Path) -> Resolved:
        own = self.origin_of(path)
        if not loc:  # under an oc.select default: verl's default
            return Resolved(key=key, value=self._raw_default(path), origin=_DEFAULT)
        raw = hs.lookup(self.root, loc)
        inherited = loc != path
        if hs.is_interp(raw):
            try:
                value, source = hs.resolve_string(self.root, loc, raw)
            except (hs.Unresolvable, hs.HydraReject, RecursionError):
                return Resolved(key=key, value=Unknown(reason=f"cannot resolve {raw}"),
                                origin=own)
            if own.kind == "script" or source is None:
                return Resolved(key=key, value=value, origin=own)
            return Resolved(key=key, value=value,
                            origin=Origin(kind="inherited", from_key=".".join(source)),
                            inherited_origin=self._final_origin(source))
        if inherited and own.kind != "script":
            return Resolved(key=key, value=raw, origin=Origin(kind="inherited", from_key=".".join(loc)),
                            inherited_origin=self._final_origin(loc))
        return Resolved(key=key, value=raw, origin=own)

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

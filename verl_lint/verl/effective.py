"""EffectiveConfig: the value of every key after a launch's overrides, and where it came from."""

from __future__ import annotations

from typing import Any, Iterator, Literal

from verl_lint.records import record
from verl_lint.source import Span

MISSING = "???"  # a mandatory value nobody set (OmegaConf's marker)


@record
class Origin:
    kind: Literal["script", "default", "inherited"]
    span: Span | None = None  # for "script": the override word that set it
    from_key: str | None = None  # for "inherited": the key whose value flowed here

    def describe(self) -> str:
        if self.kind == "script" and self.span is not None:
            return f"set at line {self.span.line}"
        if self.kind == "inherited":
            return f"inherited from {self.from_key}"
        return "verl default"


@record
class Resolved:
    """A key's effective value. `value` may be an `Unknown` (from the script) — rules skip then."""

    key: str
    value: Any
    origin: Origin
    inherited_origin: Origin | None = None  # for "inherited": where the source key's value came from

    def describe(self) -> str:
        text = self.origin.describe()
        if self.origin.kind == "inherited" and self.inherited_origin is not None:
            text += f", {self.inherited_origin.describe()}"
        return text


class EffectiveConfig:
    """Flat view over the composed config: dotted key → Resolved."""

    def __init__(self, version: str, config_name: str, entries: dict[str, Resolved]) -> None:
        self.version = version
        self.config_name = config_name
        self._entries = entries
        self.get = entries.get  # rules ask ~100 keys a launch: no extra call per key

    def get(self, key: str) -> Resolved | None:
        return self._entries.get(key)

    def value(self, key: str, default: Any = None) -> Any:
        r = self._entries.get(key)
        return default if r is None else r.value

    def __contains__(self, key: str) -> bool:
        return key in self._entries

    def keys_ending(self, tail: str) -> list[str]:
        """The keys ending in `tail` (".multi_turn.enable"), in no particular order."""
        narrow = getattr(self._entries, "keys_ending", None)  # lazy entries walk less
        if narrow is not None:
            return narrow(tail)
        return [k for k in self._entries if k.endswith(tail)]

    def composed_keys_ending(self, tail: str) -> list[str] | None:
        """The keys ending in `tail` of the composed config the launch's overrides start from
        (listed once for every launch composing it), None when that is not known."""
        narrow = getattr(self._entries, "composed_keys_ending", None)
        return narrow(tail) if narrow is not None else None

    def plainly_has(self, key: str) -> bool:
        """`key` is a key of this config reached through dicts only, to a value that is no
        interpolation: every listing of the config has it. False says nothing."""
        plain = getattr(self._entries, "plainly_has", None)
        return plain is not None and plain(key)

    def keys(self, prefix: str = "") -> Iterator[str]:
        narrow = getattr(self._entries, "keys_with_prefix", None)  # lazy entries walk less
        if narrow is not None:
            return narrow(prefix)
        return (k for k in self._entries if k.startswith(prefix))

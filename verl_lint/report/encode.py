"""`dumps(obj)`: exactly `json.dumps(obj, indent=2, ensure_ascii=False)`, several times faster.

CPython's C encoder only runs without `indent`; with it, `json` falls back to its pure-Python
encoder, a generator per container yielding every token (≈ 30 ms for verl's 182 scripts' JSON
report). Here containers are walked by one recursive function that writes each line's
separator, indent and key in one string and escapes strings with the C encoder's own
`encode_basestring`, so the text is the same byte for byte (a test compares them on
many shapes).
"""

from __future__ import annotations

from typing import Any, Callable


def _string(value: str) -> str:
    """`json.encoder.encode_basestring(value)` (C, what `ensure_ascii=False` uses); printable
    ASCII without `"` or `\\` needs no escaping and is quoted here: a run answered from the
    result cache, whose findings are text already, then need not import `json` at all."""
    if value.isascii() and value.isprintable() and '"' not in value and "\\" not in value:
        return '"' + value + '"'
    from json.encoder import encode_basestring

    return encode_basestring(value)


_INDENT = "  "
_CONSTANTS = {None: "null", True: "true", False: "false"}


class Raw(str):
    """JSON text `dumps` writes as it is: a member encoded before (`dumps(value, level)` at the
    level it sits at), so a report can hold its findings as text and drop the objects."""

    __slots__ = ()


def dumps(obj: Any, level: int = 0) -> str:
    """The JSON text of `obj` as it would read `level` containers deep in a document."""
    chunks: list[str] = []
    _value(obj, chunks.append, "\n" + _INDENT * level)
    return "".join(chunks)


def _float(value: float) -> str:
    if value != value:
        return "NaN"
    if value in (float("inf"), float("-inf")):
        return "Infinity" if value > 0 else "-Infinity"
    return float.__repr__(value)


def _scalar(value: Any) -> str | None:
    """The JSON text of a non-container, or None for a container."""
    if type(value) is Raw:
        return value
    if isinstance(value, str):
        return _string(value)
    if value is None or value is True or value is False:
        return _CONSTANTS[value]
    if isinstance(value, int):
        return int.__repr__(value)
    if isinstance(value, float):
        return _float(value)
    if isinstance(value, (dict, list, tuple)):
        return None
    raise TypeError(f"Object of type {value.__class__.__name__} is not JSON serializable")


def _key(key: Any) -> str:
    """`"key": ` (the text before a member's value)."""
    if isinstance(key, str):
        text = _string(key)
    elif isinstance(key, (int, float)) or key is None:  # json writes these keys as strings
        text = _string(_scalar(key))  # type: ignore[arg-type]
    else:
        raise TypeError(f"keys must be str, int, float, bool or None, not "
                        f"{key.__class__.__name__}")
    if type(key) is str and len(_KEYS) < 4096:  # a report repeats a few dozen keys
        _KEYS[key] = text + ": "
    return text + ": "


_KEYS: dict[str, str] = {}


# the exact types json writes as scalars (subclasses, rarer, go through `_scalar`)
_FAST: dict[type, Callable[[Any], str]] = {
    str: _string, int: int.__repr__, bool: lambda v: "true" if v else "false",
    type(None): lambda v: "null", float: _float,
}


def _value(value: Any, emit: Callable[[str], object], newline: str) -> None:
    """Write `value`, whose line is indented as `newline` says (a newline and the indent)."""
    text = _scalar(value)
    if text is None:
        _container(value, emit, newline)
    else:
        emit(text)


def _container(value: Any, emit: Callable[[str], object], newline: str) -> None:
    inner = newline + _INDENT
    fast = _FAST.get
    if isinstance(value, dict):
        if not value:
            emit("{}")
            return
        separator = "{" + inner
        for key, item in value.items():
            key = _KEYS.get(key) or _key(key)
            scalar = fast(type(item))
            text = scalar(item) if scalar is not None else _scalar(item)
            if text is not None:
                emit(separator + key + text)
            else:
                emit(separator + key)
                _container(item, emit, inner)
            separator = "," + inner
        emit(newline + "}")
        return
    if not value:
        emit("[]")
        return
    separator = "[" + inner
    for item in value:
        scalar = fast(type(item))
        text = scalar(item) if scalar is not None else _scalar(item)
        if text is not None:
            emit(separator + text)
        else:
            emit(separator)
            _container(item, emit, inner)
        separator = "," + inner
    emit(newline + "]")

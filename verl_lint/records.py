"""`record`: the class decorator of the per-file data model (the shell model, scenarios and
launches, effective values; `Span` is a hand-written slotted class with lazy positions).

These objects are built by verl-lint itself, hundreds per script, and never come from outside,
so they need no validation: they are slotted dataclasses, which build several times faster than
pydantic models and read their fields twice as fast. pydantic stays where data crosses a
boundary: settings and config files, the YAML rule schema, and the Diagnostic model every
renderer serialises. Records are immutable by convention (nothing assigns to a built one);
`frozen=True` is left out because frozen dataclasses build three times slower. `unsafe_hash`
semantics keep them usable as set members and dict keys, as the frozen pydantic models were.

Start-up: on Python < 3.13 dataclasses compiles each generated method from source, ≈ 40 µs
each, in every process. The `__init__` (called hundreds of times per script) stays
dataclasses' own; `__eq__`, `__hash__` and `__repr__` (a few thousand calls over verl's 182
scripts in all) are shared functions reading the fields with one `attrgetter` per class, which
return exactly what dataclasses' would: the same tuples compared and hashed, the same text.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from operator import attrgetter
from reprlib import recursive_repr
from typing import Callable, TypeVar

T = TypeVar("T", bound=type)


def record(cls: T) -> T:
    cls = dataclass(cls, slots=True, kw_only=True, repr=False, eq=False)
    own = fields(cls)
    key = _tuple_of([f.name for f in own if f.compare])
    hash_key = _tuple_of([f.name for f in own if (f.compare if f.hash is None else f.hash)])
    shown = tuple(f.name for f in own if f.repr)

    def __eq__(self, other):
        if other.__class__ is self.__class__:
            return key(self) == key(other)
        return NotImplemented

    def __hash__(self):
        return hash(hash_key(self))

    @recursive_repr()
    def __repr__(self):
        return (f"{self.__class__.__qualname__}("
                + ", ".join(f"{name}={getattr(self, name)!r}" for name in shown) + ")")

    for method in (__eq__, __hash__, __repr__):
        if method.__name__ in cls.__dict__:  # written in the class body: kept, as dataclasses
            if method is __hash__:  # with unsafe_hash=True would refuse it
                raise TypeError(f"Cannot overwrite attribute __hash__ in class {cls.__name__}")
            continue
        method.__qualname__ = f"{cls.__qualname__}.{method.__name__}"
        setattr(cls, method.__name__, method)
    return cls


def _tuple_of(names: list[str]) -> Callable[[object], tuple]:
    """The tuple of these fields of an object (`attrgetter` returns a bare value for one)."""
    if len(names) > 1:
        return attrgetter(*names)
    if names:
        one = attrgetter(names[0])
        return lambda obj: (one(obj),)
    return lambda obj: ()

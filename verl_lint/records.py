"""`record`: the class decorator of the per-file data model (the shell model, scenarios and
launches, effective values; `Span` is a hand-written slotted class with lazy positions).

These objects are built by verl-lint itself, hundreds per script, and never come from outside,
so they need no validation: they are slotted dataclasses, which build several times faster than
pydantic models and read their fields twice as fast. pydantic stays where data crosses a
boundary: settings and config files, the YAML rule schema. Records are immutable by convention (nothing assigns to a built one);
`frozen=True` is left out because frozen dataclasses build three times slower. `unsafe_hash`
semantics keep them usable as set members and dict keys, as the frozen pydantic models were.

Start-up: on Python < 3.13 dataclasses compiles each generated method from source, ≈ 40 µs
each, in every process. The `__init__` (called hundreds of times per script) stays
dataclasses' own; `__eq__`, `__hash__` and `__repr__` (a few thousand calls over verl's 182
scripts in all) are shared functions reading the fields with one `attrgetter` per class, which
return exactly what dataclasses' would: the same tuples compared and hashed, the same text.
`shared_dataclass` gives other dataclasses on the start-up path (diagnostics, settings) the
same shared methods.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from operator import attrgetter
from reprlib import recursive_repr
from typing import Any, Callable


def shared_dataclass(*, eq: bool = True, repr: bool = True, unsafe_hash: bool = False,
                     **options: Any) -> Callable[[type], type]:
    """`dataclass(eq=…, repr=…, unsafe_hash=…, **options)` with the shared `__eq__`, `__hash__`
    and `__repr__` of this module in place of compiled ones (`__hash__` as dataclasses decides:
    for `unsafe_hash`, or `eq` with `frozen`; None for other `eq` classes). A class body that
    writes `__eq__` or `__hash__` itself is refused rather than second-guessed."""
    frozen = options.get("frozen", False)

    def decorate(cls: type) -> type:
        if eq and {"__eq__", "__hash__"} & cls.__dict__.keys():
            raise TypeError(f"{cls.__name__} writes __eq__ or __hash__: use dataclass")
        cls = dataclass(cls, eq=False, repr=False, **options)
        own = fields(cls)
        if eq:
            _set(cls, _eq(_tuple_of([f.name for f in own if f.compare])))
        if unsafe_hash or (eq and frozen):
            _set(cls, _hash(_tuple_of([f.name for f in own
                                       if (f.compare if f.hash is None else f.hash)])))
        elif eq:
            cls.__hash__ = None  # type: ignore[assignment]  # as for any class with __eq__
        if repr and "__repr__" not in cls.__dict__:  # a written one stays, as in dataclasses
            _set(cls, _repr(tuple(f.name for f in own if f.repr)))
        return cls
    return decorate


record = shared_dataclass(slots=True, kw_only=True, unsafe_hash=True)


def _set(cls: type, method: Callable) -> None:
    method.__qualname__ = f"{cls.__qualname__}.{method.__name__}"
    setattr(cls, method.__name__, method)


def _eq(key: Callable[[object], tuple]) -> Callable:
    def __eq__(self, other):
        if other.__class__ is self.__class__:
            return key(self) == key(other)
        return NotImplemented
    return __eq__


def _hash(key: Callable[[object], tuple]) -> Callable:
    def __hash__(self):
        return hash(key(self))
    return __hash__


def _repr(shown: tuple[str, ...]) -> Callable:
    @recursive_repr()
    def __repr__(self):
        return (f"{self.__class__.__qualname__}("
                + ", ".join(f"{name}={getattr(self, name)!r}" for name in shown) + ")")
    return __repr__


def _tuple_of(names: list[str]) -> Callable[[object], tuple]:
    """The tuple of these fields of an object (`attrgetter` returns a bare value for one)."""
    if len(names) > 1:
        return attrgetter(*names)
    if names:
        one = attrgetter(names[0])
        return lambda obj: (one(obj),)
    return lambda obj: ()


def positional(cls: type) -> Callable:
    """A constructor of the record `cls` that takes every field positionally, in field order.

    Records are keyword-only, and a keyword call costs CPython 3.11 more than twice the
    instructions of a positional one (an Override: ≈ 7,400 against 3,000): the evaluator builds
    an Override per override word and a VarUse per expansion, tens of thousands over verl's
    scripts. The object is the one the record's own `__init__` makes (which only assigns); a
    field added to the record is an argument here too. Generated as dataclasses does it."""
    names = [f.name for f in fields(cls)]
    lines = [f"def make_{cls.__name__}({', '.join(names)}):", "    obj = new(cls)"]
    lines += [f"    obj.{n} = {n}" for n in names] + ["    return obj"]
    scope = {"new": object.__new__, "cls": cls}
    exec("\n".join(lines), scope)  # noqa: S102 - the text is made here from field names
    return scope[f"make_{cls.__name__}"]

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
same shared methods, and for `frozen=True` shared guards in place of the compiled
`__setattr__`/`__delattr__` (≈ 100 µs a class).

`__init__` is written as dataclasses writes it (the same parameters, defaults, factories and
assignments; `tests/test_records.py` holds it to dataclasses' own), but its code is compiled once
per Python version and kept in the disk cache (`verl_lint.verl.cache`, namespace "code"):
compiling the 64 `__init__`s a lint loads was ≈ 10 ms of every process (≈ 12% of one file
through the CLI). A class with `__post_init__` or an `InitVar` is refused (none needs them).
"""

from __future__ import annotations

from dataclasses import MISSING, dataclass, fields
from operator import attrgetter
from reprlib import recursive_repr
from types import CodeType, FunctionType
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
        if hasattr(cls, "__post_init__"):
            raise TypeError(f"{cls.__name__} has __post_init__: use dataclass")
        writes_init = "__init__" in cls.__dict__
        undocumented = not cls.__dict__.get("__doc__")
        if undocumented:  # dataclasses would describe it before it has its __init__
            cls.__doc__ = "-"
        # frozen: dataclasses compiles a `__setattr__` and a `__delattr__` per class (≈ 100 µs
        # on every start); the shared ones below do what they do
        cls = dataclass(cls, init=False, eq=False, repr=False, **{**options, "frozen": False})
        if len(cls.__dataclass_fields__) != len(fields(cls)) and _has_initvar(cls):
            raise TypeError(f"{cls.__name__} has an InitVar: use dataclass")
        own = fields(cls)
        if frozen:
            _freeze(cls, frozenset(f.name for f in own), slots=options.get("slots", False))
        if not writes_init:
            _set(cls, _init(cls, own, frozen=frozen, slots=options.get("slots", False)))
        if undocumented:  # as dataclasses writes it
            import inspect

            cls.__doc__ = cls.__name__ + str(inspect.signature(cls)).replace(" -> None", "")
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


def _freeze(cls: type, names: frozenset[str], *, slots: bool) -> None:
    """What `dataclass(frozen=True)` adds: assigning or deleting a field (or any attribute of
    the class itself) raises `FrozenInstanceError`; a slotted one pickles its fields as a
    list, restored past that guard."""
    from dataclasses import FrozenInstanceError

    def __setattr__(self, name, value):
        if type(self) is cls or name in names:
            raise FrozenInstanceError(f"cannot assign to field {name!r}")
        super(cls, self).__setattr__(name, value)

    def __delattr__(self, name):
        if type(self) is cls or name in names:
            raise FrozenInstanceError(f"cannot delete field {name!r}")
        super(cls, self).__delattr__(name)

    for method in (__setattr__, __delattr__):
        if method.__name__ in cls.__dict__:
            raise TypeError(f"Cannot overwrite attribute {method.__name__} in class "
                            f"{cls.__name__}")
        _set(cls, method)
    if slots:
        order = tuple(f.name for f in fields(cls))
        if "__getstate__" not in cls.__dict__:
            cls.__getstate__ = lambda self: [getattr(self, n) for n in order]
        if "__setstate__" not in cls.__dict__:
            def __setstate__(self, state):
                for name, value in zip(order, state):
                    object.__setattr__(self, name, value)
            cls.__setstate__ = __setstate__


def _has_initvar(cls: type) -> bool:
    from dataclasses import InitVar

    return any(f.type is InitVar or isinstance(f.type, InitVar) or
               (isinstance(f.type, str) and "InitVar" in f.type)
               for f in cls.__dataclass_fields__.values())


class _Factory:
    """The default of a parameter whose field has a `default_factory` (dataclasses'
    `_HAS_DEFAULT_FACTORY`): not passed, the factory makes the value."""

    def __repr__(self) -> str:
        return "<factory>"


_FACTORY = _Factory()


def _init(cls: type, own: tuple, *, frozen: bool, slots: bool) -> Callable:
    """The `__init__` dataclasses would write for these fields (in their order; keyword-only
    ones after a `*`), made from code compiled once (`_code`). Its text names no value:
    defaults are the function's `__defaults__`/`__kwdefaults__`, factories and the frozen
    setter are its globals, so classes of the same field names share one code object."""
    std = [f for f in own if f.init and not f.kw_only]
    kw = [f for f in own if f.init and f.kw_only]
    seen_default = None
    for f in std:  # dataclasses' check of the positional order
        if f.default is MISSING and f.default_factory is MISSING:
            if seen_default is not None:
                raise TypeError(f"non-default argument {f.name!r} follows default argument")
        else:
            seen_default = f
    me = "__dataclass_self__" if any(f.name == "self" for f in own) else "self"
    scope: dict[str, Any] = {"__builtins__": __builtins__, "_FACTORY": _FACTORY,
                             "_setattr": object.__setattr__}
    body = []
    for f in own:
        if not f.init:  # a factory's value, or the default a slotted class has no attribute for
            value = _unpassed(f, scope) if f.default_factory is not MISSING or slots else None
            if value is None:
                continue  # a class attribute holds its default
        elif f.default_factory is not MISSING:
            value = f"{_unpassed(f, scope)} if {f.name} is _FACTORY else {f.name}"
        else:
            value = f.name
        body.append(f"    _setattr({me}, {f.name!r}, {value})" if frozen
                    else f"    {me}.{f.name} = {value}")
    params = [me, *(f.name for f in std), *(["*", *(f.name for f in kw)] if kw else [])]
    source = f"def __init__({', '.join(params)}):\n" + ("\n".join(body) or "    pass")
    init = FunctionType(_code(source), scope, "__init__")
    init.__module__ = cls.__module__
    defaults = tuple(_default(f) for f in std if _default(f) is not MISSING)
    init.__defaults__ = defaults or None
    init.__kwdefaults__ = {f.name: _default(f) for f in kw if _default(f) is not MISSING} or None
    init.__annotations__ = {**{f.name: f.type for f in (*std, *kw)}, "return": None}
    return init


def _default(f) -> Any:
    return _FACTORY if f.default_factory is not MISSING else f.default


def _unpassed(f, scope: dict[str, Any]) -> str | None:
    """The expression of field `f`'s value when no argument gives it (its factory called, its
    default), the value put in the function's `scope`; None when it has neither."""
    if f.default_factory is not MISSING:
        scope[f"_factory_{f.name}"] = f.default_factory
        return f"_factory_{f.name}()"
    if f.default is not MISSING:
        scope[f"_default_{f.name}"] = f.default
        return f"_default_{f.name}"
    return None


_CODES: dict[str, CodeType] | None = None  # `__init__` texts -> their code, this Python's
_CODES_NEW = 0  # compiled by this process, not yet in the disk cache


def _code(source: str) -> CodeType:
    global _CODES, _CODES_NEW
    if _CODES is None:
        _CODES = _load_codes()
    code = _CODES.get(source)
    if code is None:
        module = compile(source, "<records>", "exec")
        code = _CODES[source] = next(c for c in module.co_consts if isinstance(c, CodeType))
        _CODES_NEW += 1
    return code


def _codes_key() -> str:
    import sys
    from importlib.util import MAGIC_NUMBER  # code objects are marshalled per bytecode format

    return f"{sys.implementation.cache_tag}:{MAGIC_NUMBER.hex()}"


def _load_codes() -> dict[str, CodeType]:
    import marshal

    from verl_lint.verl import cache

    data = cache.load("code", _codes_key())
    try:
        codes = marshal.loads(data) if isinstance(data, bytes) else {}
    except (EOFError, ValueError, TypeError):
        return {}
    if not isinstance(codes, dict):
        return {}
    return {k: v for k, v in codes.items() if isinstance(k, str) and isinstance(v, CodeType)}


def save_compiled() -> None:
    """Keep the `__init__` code this process compiled in the disk cache for the next one (the
    CLI calls it before it leaves)."""
    global _CODES_NEW
    if not _CODES_NEW or _CODES is None:
        return
    import marshal

    from verl_lint.verl import cache

    kept = _load_codes()  # what other processes added meanwhile; edited classes leave old
    if len(kept) > _MAX_CODES:  # texts behind, so a long-lived cache starts again
        kept = {}
    cache.store("code", _codes_key(), marshal.dumps({**kept, **_CODES}))
    _CODES_NEW = 0


_MAX_CODES = 2000  # a lint loads ≈ 70 classes


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


def positional(cls: type, *names: str, **fixed: Any) -> Callable:
    """A constructor of the record `cls` that takes the fields `names` positionally (none
    given: every field, in field order), sets the `fixed` ones to those values and every other
    field to its default.

    Records are keyword-only, and a keyword call costs CPython 3.11 more than twice the
    instructions of a positional one (an Override: ≈ 7,400 against 3,000): the evaluator builds
    an Override per override word and a VarUse per expansion, the lexer ≈ 330 pieces and words
    per script. The object is the one the record's own `__init__` makes (which only assigns).
    Generated as dataclasses does it, its code compiled once (`_code`)."""
    every = fields(cls)
    if not names and not fixed:
        names = tuple(f.name for f in every)
    unknown = (set(names) | set(fixed)) - {f.name for f in every}
    if unknown:
        raise TypeError(f"{cls.__name__} has no field {', '.join(sorted(unknown))}")
    scope: dict[str, Any] = {"__builtins__": __builtins__, "new": object.__new__, "cls": cls}
    lines = [f"def make_{cls.__name__}({', '.join(names)}):", "    obj = new(cls)"]
    for f in every:
        if f.name in names:
            value = f.name
        elif f.name in fixed:
            scope[f"_fixed_{f.name}"] = fixed[f.name]
            value = f"_fixed_{f.name}"
        else:
            value = _unpassed(f, scope)
            if value is None:
                raise TypeError(f"{cls.__name__}.{f.name} has no default: pass it")
        lines.append(f"    obj.{f.name} = {value}")
    lines.append("    return obj")
    make = FunctionType(_code("\n".join(lines)), scope, f"make_{cls.__name__}")
    make.__module__ = cls.__module__
    return make

"""`record` (and `shared_dataclass`) share `__eq__`, `__hash__` and `__repr__` between classes
instead of having dataclasses compile them per class: they must answer exactly as dataclasses'
own would."""

from __future__ import annotations

import math
import os
import pickle
from dataclasses import MISSING, FrozenInstanceError, dataclass, field, fields

import pytest

from verl_lint.records import record, shared_dataclass

PLAIN = dataclass(slots=True, kw_only=True, unsafe_hash=True)  # what `record` stands for


def twins(body: dict, bases: tuple = ()) -> tuple[type, type]:
    """The same class body made a record and a plain dataclass (same name, for the repr)."""
    def make(decorate, base):
        return decorate(type("Thing", base, dict(body)))
    return make(record, bases[:1]), make(PLAIN, bases[1:])


def hash_or_error(x):
    try:
        return hash(x)
    except TypeError:  # a list field: unhashable either way
        return TypeError


NAN = math.nan
BODIES = {
    "several": ({"__annotations__": {"a": "int", "b": "object", "c": "tuple"},
                 "b": None, "c": ()},
                [dict(a=1), dict(a=1, b=NAN), dict(a=2, b=[1], c=(1, "x")), dict(a=1, b="s")]),
    "one field": ({"__annotations__": {"a": "object"}},
                  [dict(a=1), dict(a=NAN), dict(a=(1,)), dict(a="x")]),
    "no field": ({"__annotations__": {}}, [dict()]),
    "field options": ({"__annotations__": {"a": "int", "b": "int", "c": "int", "d": "int"},
                       "b": field(default=0, compare=False),
                       "c": field(default=0, repr=False),
                       "d": field(default=0, hash=False)},
                      [dict(a=1), dict(a=1, b=5), dict(a=1, c=5), dict(a=1, d=5), dict(a=2)]),
}


@pytest.mark.parametrize("name", BODIES)
def test_eq_hash_repr_match_dataclasses(name):
    body, kwargs = BODIES[name]
    rec, plain = twins(body)
    assert [f.name for f in fields(rec)] == [f.name for f in fields(plain)]
    assert rec.__match_args__ == plain.__match_args__
    nan_twice = [dict(kw) for kw in kwargs]  # the very same NaN object: equal by identity
    for x in [*kwargs, *nan_twice]:
        r, p = rec(**x), plain(**x)
        assert repr(r) == repr(p)
        assert hash_or_error(r) == hash_or_error(p)
        for y in [*kwargs, *nan_twice]:
            assert (r == rec(**y)) == (p == plain(**y)), (x, y)
            assert (r != rec(**y)) == (p != plain(**y)), (x, y)
        assert r.__eq__(p) is NotImplemented  # another class: never equal, as dataclasses
        assert (r == p) is False


def test_subclass_records_compare_their_own_fields():
    base = record(type("Base", (), {"__annotations__": {"a": "int"}}))
    sub = record(type("Sub", (base,), {"__annotations__": {"b": "int"}, "b": 0}))
    assert sub(a=1, b=2) == sub(a=1, b=2) and sub(a=1, b=2) != sub(a=1, b=3)
    assert base(a=1) != sub(a=1)  # dataclasses compare the exact class
    assert repr(sub(a=1, b=2)) == "Sub(a=1, b=2)"
    assert hash(sub(a=1, b=2)) == hash((1, 2))


def test_recursive_repr_and_methods_written_in_the_body():
    node = record(type("Node", (), {"__annotations__": {"kids": "list"},
                                    "__repr__": lambda self: "mine"}))
    assert repr(node(kids=[])) == "mine"  # the class body's own method stays
    loop = record(type("Loop", (), {"__annotations__": {"kids": "list"}}))
    x = loop(kids=[])
    x.kids.append(x)
    y = PLAIN(type("Loop", (), {"__annotations__": {"kids": "list"}}))(kids=[])
    y.kids.append(y)
    assert repr(x) == "Loop(kids=[...])" == repr(y)  # dataclasses' own recursive repr
    with pytest.raises(TypeError):
        record(type("Hashed", (), {"__annotations__": {"a": "int"}, "__hash__": lambda s: 1}))


def test_records_stay_slotted_keyword_only_and_not_frozen():
    rec = record(type("Thing", (), {"__annotations__": {"a": "int"}}))
    with pytest.raises(TypeError):
        rec(1)
    x = rec(a=1)
    with pytest.raises(AttributeError):
        x.other = 2  # slots: no __dict__
    try:
        x.a = 2  # not frozen (only by convention)
    except FrozenInstanceError:  # pragma: no cover - would be a change of contract
        pytest.fail("records are not frozen")
    assert rec.__eq__.__qualname__ == "Thing.__eq__"


# the option sets verl-lint's classes use (diagnostics, settings, suppressions, CLI options)
OPTIONS = [dict(frozen=True, slots=True), dict(frozen=True), dict(slots=True, kw_only=True),
           dict(slots=True), dict(), dict(frozen=True, eq=False)]


@pytest.mark.parametrize("options", OPTIONS, ids=str)
@pytest.mark.parametrize("name", ["several", "one field", "field options"])
def test_shared_dataclass_matches_dataclass(options, name):
    body, kwargs = BODIES[name]
    ours = shared_dataclass(**options)(type("Thing", (), dict(body)))
    theirs = dataclass(**options)(type("Thing", (), dict(body)))
    assert (ours.__hash__ is None) == (theirs.__hash__ is None)
    assert (ours.__eq__ is object.__eq__) == (theirs.__eq__ is object.__eq__)
    by_identity = theirs.__hash__ is object.__hash__
    assert (ours.__hash__ is object.__hash__) == by_identity
    for x in kwargs:
        a, b = ours(**x), theirs(**x)
        assert repr(a) == repr(b)
        if theirs.__hash__ is not None and not by_identity:
            assert hash_or_error(a) == hash_or_error(b)
        for y in kwargs:
            assert (a == ours(**y)) == (b == theirs(**y)), (x, y)
        if options.get("frozen"):  # our own guards, not dataclasses' compiled ones
            for obj in (a, b):
                with pytest.raises(FrozenInstanceError):
                    obj.a = 5
                with pytest.raises(FrozenInstanceError):
                    del obj.a
            # no new attribute either (dataclasses' own, slotted, fail with a TypeError there:
            # their guard names the class before slots were added)
            with pytest.raises((FrozenInstanceError, AttributeError)):
                a.not_a_field = 1


@shared_dataclass(frozen=True, slots=True)
class FrozenSlotted:
    a: int
    b: list = field(default_factory=list)


def test_a_frozen_slotted_one_pickles_its_fields_past_the_guard():
    x = FrozenSlotted(1, [2])
    assert FrozenSlotted.__getstate__(x) == [1, [2]]
    copy = pickle.loads(pickle.dumps(x))
    assert copy == x and repr(copy) == "FrozenSlotted(a=1, b=[2])"
    with pytest.raises(FrozenInstanceError):
        copy.b = []


# ---- __init__: written as dataclasses writes it, its code compiled once -------------------

from hypothesis import given, settings as hsettings, strategies as st  # noqa: E402

KINDS = ["required", "default", "factory", "no init, default", "no init, factory"]


@st.composite
def class_specs(draw):
    """A class body of 0–5 fields of every kind our classes use, and dataclass options."""
    names = draw(st.lists(st.sampled_from(["a", "b", "self", "obj", "kids", "z"]),
                          unique=True, max_size=5))
    body: dict = {"__annotations__": {}}
    for name in names:
        kind = draw(st.sampled_from(KINDS))
        body["__annotations__"][name] = draw(st.sampled_from(["int", "list", "object"]))
        kw_only = draw(st.booleans())
        extra = {"kw_only": True} if kw_only else {}
        if kind == "default":
            body[name] = field(default=draw(st.sampled_from([0, None, "x", (1,)])), **extra)
        elif kind == "factory":
            body[name] = field(default_factory=draw(st.sampled_from([list, dict])), **extra)
        elif kind == "no init, default":
            body[name] = field(default=7, init=False)
        elif kind == "no init, factory":
            body[name] = field(default_factory=list, init=False)
        elif kw_only:
            body[name] = field(kw_only=True)
    if draw(st.booleans()):
        body["__doc__"] = "A documented thing."
    options = draw(st.sampled_from(OPTIONS + [dict(kw_only=True), dict(frozen=True, kw_only=True)]))
    return body, options


def build(decorate, body: dict):
    try:
        return decorate(type("Thing", (), dict(body))), None
    except TypeError as exc:
        return None, str(exc)


@hsettings(max_examples=300, deadline=None)
@given(class_specs(), st.data())
def test_init_matches_dataclasses(spec, data):
    import inspect

    body, options = spec
    ours, our_error = build(shared_dataclass(**options), body)
    theirs, their_error = build(dataclass(**options), body)
    assert our_error == their_error  # a required field after a defaulted one, say
    if theirs is None:
        return
    assert str(inspect.signature(ours)) == str(inspect.signature(theirs))
    assert ours.__doc__ == theirs.__doc__ and ours.__init__.__qualname__ == "Thing.__init__"
    params = inspect.signature(theirs).parameters.values()
    args, kwargs, passed = [], {}, set()
    for p in params:
        if p.default is not p.empty and data.draw(st.booleans()):
            continue  # left to its default (or factory)
        value = data.draw(st.sampled_from([1, "v", [2]]))
        passed.add(p.name)
        if p.kind is p.KEYWORD_ONLY or data.draw(st.booleans()) or kwargs:
            kwargs[p.name] = value
        else:
            args.append(value)
    a, b = ours(*args, **kwargs), theirs(*args, **kwargs)
    for f in fields(theirs):
        assert getattr(a, f.name) == getattr(b, f.name), f.name
        if f.default_factory is not MISSING and f.name not in passed:
            assert getattr(a, f.name) is not getattr(ours(*args, **kwargs), f.name)  # fresh
    required = [p.name for p in params if p.default is p.empty]
    if required:
        with pytest.raises(TypeError) as mine:
            ours()
        with pytest.raises(TypeError) as dataclasses_own:
            theirs()
        assert str(mine.value) == str(dataclasses_own.value)


def test_init_code_is_compiled_once_and_kept_in_the_disk_cache(tmp_path):
    import subprocess
    import sys

    probe = ("import verl_lint.records as r, verl_lint.shell.model, verl_lint.evaluate.model\n"
             "print(r._CODES_NEW)\n"
             "r.save_compiled()\n")
    env = {**os.environ, "VERL_LINT_CACHE_DIR": str(tmp_path)}
    env.pop("VERL_LINT_NO_CACHE", None)

    def compiled() -> int:
        out = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True,
                             text=True, check=True)
        return int(out.stdout)

    assert compiled() > 20  # a first start compiles every record's __init__
    assert compiled() == 0  # the next one finds them all
    for entry in tmp_path.rglob("*.pickle"):  # a corrupt entry is compiled again, not trusted
        entry.write_bytes(b"\x80\x05not a pickle")
    assert compiled() > 20


def test_records_refuse_what_their_init_does_not_write():
    from dataclasses import InitVar

    with pytest.raises(TypeError, match="__post_init__"):
        record(type("Late", (), {"__annotations__": {"a": "int"},
                                 "__post_init__": lambda self: None}))
    with pytest.raises(TypeError, match="InitVar"):
        record(type("Via", (), {"__annotations__": {"a": "int", "b": InitVar[int]}}))
    written = record(type("Own", (), {"__annotations__": {"a": "int"},
                                      "__init__": lambda self, a: setattr(self, "a", a * 2)}))
    assert written(3).a == 6  # a class body's own __init__ stays, as in dataclasses


def test_positional_takes_named_fields_fixes_some_and_defaults_the_rest():
    from verl_lint.records import positional

    thing = record(type("Thing", (), {"__annotations__": {"a": "int", "b": "str", "c": "list",
                                                          "d": "int"},
                                      "b": "x", "c": field(default_factory=list), "d": 0}))
    make = positional(thing, "d", "a", b="fixed")  # any order, by name
    built = make(4, 1)
    assert built == thing(a=1, b="fixed", c=[], d=4)
    assert built.c is not make(4, 1).c  # a fresh default per object
    assert positional(thing)(1, "y", [2], 3) == thing(a=1, b="y", c=[2], d=3)  # every field
    with pytest.raises(TypeError, match="no default"):
        positional(thing, "b")  # `a` would be left unset
    with pytest.raises(TypeError, match="no field"):
        positional(thing, "a", e=1)

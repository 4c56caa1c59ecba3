"""`record` (and `shared_dataclass`) share `__eq__`, `__hash__` and `__repr__` between classes
instead of having dataclasses compile them per class: they must answer exactly as dataclasses'
own would."""

from __future__ import annotations

import math
from dataclasses import FrozenInstanceError, dataclass, field, fields

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
        if options.get("frozen"):
            with pytest.raises(FrozenInstanceError):
                a.a = 5

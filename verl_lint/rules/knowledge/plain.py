"""Validated knowledge-base models as plain objects: what linting reads.

`schema.py` (pydantic) defines and validates the YAML format. `plain(model)` copies a validated
model into the class of the same name here, field by field, and that copy is what the disk cache
keeps (`loader.cached_model`): a run that reads the built-in rules from the cache imports no
pydantic (its import and building the schema's classes are ≈ 85 ms of every start).
"""

from __future__ import annotations

from typing import Any


class Plain:
    """The fields of one validated model, read-only; equal when the kind and fields are."""

    def __init__(self, **fields: Any) -> None:
        self.__dict__.update(fields)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is read-only")

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other.__dict__ == self.__dict__

    def __hash__(self) -> int:
        return hash((type(self), *self.__dict__.values()))

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={v!r}" for k, v in self.__dict__.items())
        return f"{type(self).__name__}({fields})"


class KeyRef(Plain):
    pass


class KeyCondition(Plain):
    pass


class AnyOf(Plain):
    pass


class ModelCondition(Plain):
    pass


class When(Plain):
    pass


class FixSpec(Plain):
    # the schema's defaults, for a spec a rule writes itself (a test keeps them equal)
    prefix = near = title = None
    applicability = "safe"


class RuleSpec(Plain):
    pass


class Family(Plain):
    pass


class Trait(Plain):
    pass


class FamilyTable(Plain):
    pass


_KINDS = {c.__name__: c for c in (KeyRef, KeyCondition, AnyOf, ModelCondition, When, FixSpec,
                                  RuleSpec, Family, Trait, FamilyTable)}


def plain(value: Any) -> Any:
    """A validated schema model, and the lists, tuples and dicts in it, as plain objects."""
    fields = getattr(type(value), "model_fields", None)
    if fields is not None:
        kind = _KINDS[type(value).__name__.lstrip("_")]
        return kind(**{name: plain(getattr(value, name)) for name in fields})
    if isinstance(value, (list, tuple)):
        return type(value)(plain(v) for v in value)
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    return value

"""Building pydantic models without validation, for the per-file hot paths (parser, evaluator,
effective config): like `model_construct`, several times faster. Every value must already have
the right type; validation is for input from outside (settings, YAML rules), not for objects
verl-lint builds itself."""

from __future__ import annotations

from pydantic import BaseModel

_DEFAULTS: dict[type, dict] = {}

# BaseModel's slot descriptors, called directly: cheaper than object.__setattr__ by name
_new = object.__new__
_setattr = object.__setattr__
set_fields_set = BaseModel.__dict__["__pydantic_fields_set__"].__set__
set_extra = BaseModel.__dict__["__pydantic_extra__"].__set__
set_private = BaseModel.__dict__["__pydantic_private__"].__set__


def build(cls, **values):
    """An instance of the pydantic model `cls` with these field values (defaults for the rest)."""
    defaults = _DEFAULTS.get(cls)
    if defaults is None:
        defaults = _DEFAULTS[cls] = {name: f.get_default(call_default_factory=True)
                                     for name, f in cls.model_fields.items()
                                     if not f.is_required()}
    obj = _new(cls)
    _setattr(obj, "__dict__", {**defaults, **values})
    set_fields_set(obj, set(values))
    set_extra(obj, None)
    set_private(obj, None)
    return obj

"""The YAML format of knowledge-base rules (top-level `rules/*.yaml`, `extend-rules` folders).

One file = one rule. The pydantic models below are the format's reference; README section
`knowledge-base` shows a full example. A validated model is kept, and linted with, as its
`plain.plain` copy: this module (and pydantic) is imported only to validate a rule file.
Every validation problem is reported as `<file>: rule <code>: field <path>: <problem>` (see
`loader.py`).
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal, Union

from pydantic import (
    BaseModel, ConfigDict, Discriminator, Field, Tag, field_validator, model_validator,
)

from verl_lint.diagnostics import Severity
from verl_lint.verl.versions import in_range

# defer_build: a warm start reads validated specs from the cache (`loader.cached_model`), so
# the validators are built only for a new or changed rule file
_STRICT = ConfigDict(extra="forbid", frozen=True, defer_build=True)

# operator spelled in YAML → its name in the model
OPERATORS = ("==", "!=", "in", "not_in", "<", "<=", ">", ">=", "regex", "is_set")
_SECTIONS = ("What it does", "Why is this bad?", "Example", "Use instead", "References")
_CODE = re.compile(r"^[A-Z]{1,8}[0-9]{3,4}$")
_NAME = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
# what `message`/`help` templates may use (filled by the interpreter)
PLACEHOLDERS = frozenset({"key", "value", "origin", "expected", "other", "family", "params_b",
                          "model", "rollout", "strategy", "device", "version", "architectures",
                          "evidence"})
_KEY = re.compile(r"^[A-Za-z0-9_]+(\.([A-Za-z0-9_]+|\*|\*\*))*$")


def _listify(v: Any) -> Any:
    return [v] if isinstance(v, (str, int, float)) else v


def _template(v: str | None) -> str | None:
    """A message template may only use the known `{placeholders}`."""
    if v is None:
        return v
    import string

    try:
        names = {n for _, n, _, _ in string.Formatter().parse(v) if n is not None}
    except ValueError as exc:
        raise ValueError(f"bad template: {exc} (write {{{{ and }}}} for literal braces)") from None
    unknown = sorted(n for n in names if n not in PLACEHOLDERS)
    if unknown:
        raise ValueError(f"unknown placeholder(s) {', '.join('{' + n + '}' for n in unknown)}; "
                         f"available: {', '.join(sorted(PLACEHOLDERS))}")
    return v


class KeyRef(BaseModel):
    """`{key: other.key}` on the right of a comparison: that key's effective value."""

    model_config = _STRICT
    key: str


class KeyCondition(BaseModel):
    """One comparison on an effective config value: `{key: K, <op>: V}` with exactly one op.

    `key` may use `*` (one segment) and `**` (one or more segments); the condition then applies
    to every effective key that matches. `origin` restricts it to values set by the script,
    inherited through `${oc.select:…}`, or left at verl's default.
    """

    model_config = _STRICT

    key: str
    op: Literal["==", "!=", "in", "not_in", "<", "<=", ">", ">=", "regex", "is_set"]
    value: Any = None
    origin: Literal["script", "default", "inherited"] | None = None
    if_missing: Literal["skip", "violated"] = "skip"
    message: str | None = None
    when: "When | None" = None
    fix: "FixSpec | None" = None

    _message = field_validator("message")(_template)

    @model_validator(mode="before")
    @classmethod
    def _split_operator(cls, data: Any) -> Any:
        if not isinstance(data, dict) or "op" in data:
            return data
        ops = [k for k in data if k in OPERATORS]
        if len(ops) != 1:
            strange = [str(k) for k in data if k not in OPERATORS and k not in cls.model_fields]
            got = ", ".join(ops) or "none" + (f"; unknown: {', '.join(strange)}" if strange else "")
            raise ValueError(f"needs exactly one operator among {', '.join(OPERATORS)} (got {got})")
        data = dict(data)
        op = ops[0]
        value = data.pop(op)
        if isinstance(value, dict):
            value = KeyRef.model_validate(value)
        return {**data, "op": op, "value": value}

    @field_validator("key")
    @classmethod
    def _key_shape(cls, v: str) -> str:
        if not _KEY.match(v):
            raise ValueError(f"not a dotted config key: {v!r}")
        return v

    @model_validator(mode="after")
    def _operand_shape(self) -> "KeyCondition":
        if self.op in ("in", "not_in") and not isinstance(self.value, (list, KeyRef)):
            raise ValueError(f"`{self.op}` needs a list")
        if self.op in ("<", "<=", ">", ">=") and not isinstance(self.value, (int, float, KeyRef)):
            raise ValueError(f"`{self.op}` needs a number")
        if self.op == "regex":
            try:
                re.compile(str(self.value))
            except re.error as exc:
                raise ValueError(f"bad regex {self.value!r}: {exc}") from None
        if self.op == "is_set" and not isinstance(self.value, bool):
            raise ValueError("`is_set` needs true or false")
        return self


class AnyOf(BaseModel):
    """`{any: [cond, cond]}`: true when one of the conditions holds."""

    model_config = _STRICT
    any: list[KeyCondition] = Field(min_length=1)


# `{any: […]}` or `{key: …, <op>: …}`: pick the model by shape, so errors name one of them
Condition = Annotated[
    Union[Annotated[KeyCondition, Tag("condition")], Annotated[AnyOf, Tag("any-of")]],
    Discriminator(lambda v: "any-of" if isinstance(v, (dict, AnyOf)) and (
        "any" in v if isinstance(v, dict) else True) else "condition"),
]
LOC_TAGS = frozenset({"condition", "any-of"})  # not fields: left out of error locations


class ModelCondition(BaseModel):
    """Conditions on the model named by the effective `actor_rollout_ref.model.path`."""

    model_config = _STRICT

    family: list[str] | None = None  # any of these families (model_families.yaml)
    traits: list[str] | None = None  # every one of these traits
    params_b: dict[Literal["==", "!=", "<", "<=", ">", ">="], float] | None = None
    # the name of a per-release list mined from verl's code (verl_lint/verl/data/
    # model_support.json, e.g. `mcore_architectures`): holds when none of the family's
    # `architectures` is in that release's list (unknown without architectures or list)
    architectures_outside: str | None = None

    _one_or_many = field_validator("family", "traits", mode="before")(_listify)


class When(BaseModel):
    """Every condition must hold (and be known) for the rule to apply."""

    model_config = _STRICT

    device: list[Literal["gpu", "npu"]] | None = None
    # not in these device scenarios (an unknown device passes): evidence that covers one device
    unless_device: list[Literal["gpu", "npu"]] | None = None
    verl: str | None = None  # release range: ">=0.7.0,<0.9.0"
    entry_point: list[str] | None = None  # module names, fnmatch patterns allowed
    rollout: list[str] | None = None  # effective actor_rollout_ref.rollout.name
    strategy: list[str] | None = None  # effective actor_rollout_ref.actor.strategy
    model: ModelCondition | None = None
    config: list[Condition] = Field(default_factory=list)

    _one_or_many = field_validator("device", "unless_device", "entry_point", "rollout",
                                   "strategy", mode="before")(_listify)

    @field_validator("verl")
    @classmethod
    def _range(cls, v: str | None) -> str | None:
        if v:
            in_range("0.0.0", v)  # raises ValueError naming the bad clause
        return v


class FixSpec(BaseModel):
    """The override(s) that fix a finding.

    `set` maps keys to values. An override of that key already in the launch gets its value
    replaced; otherwise a new override `<prefix><key>=<value>` is inserted next to the launch's
    overrides that share the longest key prefix (`near` picks another prefix): as a new element
    after the last one of their array — in the scenario's own branch when the rule is
    device-specific — or before them in an inline `\\` chain.
    """

    model_config = _STRICT

    set: dict[str, Any] = Field(min_length=1)
    prefix: Literal["", "+", "++"] | None = None  # None: `+` only when the key is not in the config
    near: str | None = None
    title: str | None = None
    applicability: Literal["safe", "unsafe"] = "safe"


class _Family(BaseModel):
    """A model family of `model_families.yaml`."""

    model_config = _STRICT
    name: str
    label: str | None = None  # how messages name it ("Qwen3.5"); default: name
    match: str
    traits: tuple[str, ...] = ()
    params_b: float | None = None
    # the Hugging Face `architectures` a checkpoint of the family may declare (config.json)
    architectures: tuple[str, ...] = ()
    note: str = ""


class _Trait(BaseModel):
    model_config = _STRICT
    trait: str
    match: str


class FamilyTable(BaseModel):
    """`model_families.yaml`: model path → family, traits, size (`families.FamilyMatcher`)."""

    model_config = _STRICT
    families: tuple[_Family, ...] = Field(default_factory=tuple)
    traits: tuple[_Trait, ...] = Field(default_factory=tuple)


class RuleSpec(BaseModel):
    """One knowledge-base rule file."""

    model_config = _STRICT

    code: str
    name: str
    severity: Severity
    summary: str
    doc: str
    evidence: list[str] = Field(min_length=1)
    when: When = Field(default_factory=When)
    require: list[KeyCondition] = Field(default_factory=list)
    forbid: list[KeyCondition] = Field(default_factory=list)
    message: str | None = None  # when the rule has no require/forbid: the finding's message
    help: str | None = None
    fix: FixSpec | None = None  # default fix of every require/forbid entry without its own

    _one_or_many = field_validator("evidence", mode="before")(_listify)
    _templates = field_validator("message", "help")(_template)

    @field_validator("code")
    @classmethod
    def _code(cls, v: str) -> str:
        if not _CODE.match(v):
            raise ValueError("must be letters then 3-4 digits, like VL401 or TEAM001")
        return v

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if not _NAME.match(v):
            raise ValueError("must be kebab-case naming the bad pattern, like gdn-remove-padding")
        return v

    @field_validator("doc")
    @classmethod
    def _doc_sections(cls, v: str) -> str:
        missing = [s for s in _SECTIONS if s not in v]
        if missing:
            raise ValueError(f"missing section(s): {', '.join(missing)}")
        if "```bash" not in v:
            raise ValueError("Example and Use instead need a ```bash fenced script")
        return v

    @model_validator(mode="after")
    def _has_effect(self) -> "RuleSpec":
        if not (self.require or self.forbid or self.message):
            raise ValueError(
                "a rule needs `require`, `forbid`, or a `message` for when `when` holds")
        return self


"""Loading rule folders: the built-in `rules/` (shipped in the wheel) and `extend-rules` folders.

Every `*.yaml`/`*.yml` file of a folder is one rule, except `model_families.yaml`, which extends
the model-family table for that folder's rules (its families are tried before the built-in ones).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from verl_lint.digest import hexdigest
from verl_lint.rules.base import Rule
from verl_lint.rules.knowledge.families import FAMILY_FILE, FamilyMatcher, load_family_table
from verl_lint.rules.knowledge.plain import FamilyTable, RuleSpec
from verl_lint.settings import SettingsError

if TYPE_CHECKING:
    from pydantic import ValidationError

# `verl_lint/rules/knowledge/builtin` is a symlink to the top-level `rules/` folder, so the
# same files are read from a checkout, an editable install and the wheel (where setuptools
# copies them as package data). A checkout without symlink support (Windows) reads `rules/`.
_HERE = Path(__file__).resolve().parent
BUILTIN_DIR = _HERE / "builtin" if (_HERE / "builtin").is_dir() else _HERE.parents[2] / "rules"

_FOLDERS: dict[str, list[type[Rule]]] = {}
M = TypeVar("M")


class KnowledgeBaseError(SettingsError):
    """A rule file the user must fix: the message names the file, the rule and the field.

    A SettingsError, so the CLI reports it like any configuration problem (exit code 2)."""


def format_validation_error(path: Path, rule: str, exc: "ValidationError") -> str:
    from verl_lint.rules.knowledge.schema import LOC_TAGS

    lines = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err["loc"]
                       if p not in LOC_TAGS and not str(p).startswith("function-"))
        msg = err["msg"].removeprefix("Value error, ")
        lines.append(f"{path}: rule {rule}: field `{loc or '<file>'}`: {msg}")
    return "\n".join(lines)


def cached_yaml(text: str, *, fast: bool = True) -> Any:
    """`text` parsed as YAML (C loader when `fast`), cached on disk by content: importing PyYAML
    and parsing the built-in rules is ~20 ms of a one-file CLI run. Raises yaml.YAMLError."""
    from verl_lint.verl import cache

    namespace = "rule-yaml" if fast else "rule-yaml-py"
    data = cache.load(namespace, text)
    if data is cache.MISS:
        import yaml

        data = yaml.load(text, Loader=_loader() if fast else yaml.SafeLoader)
        cache.store(namespace, text, data)
    return data


def is_yaml_error(exc: BaseException) -> bool:
    import yaml

    return isinstance(exc, yaml.YAMLError)


@lru_cache(maxsize=1)
def _schema_stamp() -> str:
    """Fingerprint of the rule and family schemas and their plain form: a changed schema must
    not reuse old models. Read as files: importing the schema would import pydantic."""
    here = Path(__file__).parent
    return hexdigest(b"".join((here / name).read_bytes()
                                 for name in ("schema.py", "families.py", "plain.py")))


def cached_model(namespace: str, text: str, validate: Callable[[], M]) -> M:
    """`validate()`, the model read from `text` (its `plain` form), cached on disk by content
    and schema: a warm start then imports no pydantic. Invalid files raise from `validate()`
    and are never cached."""
    from verl_lint.verl import cache

    key = f"{_schema_stamp()}\n{text}"
    model = cache.load(namespace, key)
    if model is cache.MISS:
        model = validate()
        cache.store(namespace, key, model)
    return model


def parse_rule_file(path: Path) -> RuleSpec:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise KnowledgeBaseError(f"{path}: cannot read: {exc}") from None
    return cached_model("rule-spec", text, lambda: _validate_rule(path, text))


def _validate_rule(path: Path, text: str) -> RuleSpec:
    from pydantic import ValidationError

    from verl_lint.rules.knowledge import schema
    from verl_lint.rules.knowledge.plain import plain

    try:
        data = cached_yaml(text)
    except Exception as exc:
        if not is_yaml_error(exc):
            raise
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        raise KnowledgeBaseError(f"{path}: invalid YAML{where}: "
                                 f"{getattr(exc, 'problem', None) or exc}") from None
    if not isinstance(data, dict):
        raise KnowledgeBaseError(f"{path}: a rule file must be a mapping (code: …, name: …)")
    rule = str(data.get("code") or "<no code>")
    try:
        return plain(schema.RuleSpec.model_validate(data))
    except ValidationError as exc:
        raise KnowledgeBaseError(format_validation_error(path, rule, exc)) from None


def _check_model_names(path: Path, spec: RuleSpec, table: FamilyTable) -> None:
    """A misspelt family or trait would silently never match: reject it."""
    families = {f.name for f in table.families}
    traits = {t for f in table.families for t in f.traits} | {t.trait for t in table.traits}
    places = [("when.model", spec.when)]
    for section in ("require", "forbid"):
        places += [(f"{section}.{i}.when.model", e.when)
                   for i, e in enumerate(getattr(spec, section)) if e.when is not None]
    for where, when in places:
        if when.model is None:
            continue
        for field, names, known in (("family", when.model.family, families),
                                    ("traits", when.model.traits, traits)):
            unknown = sorted(set(names or ()) - known)
            if unknown:
                raise KnowledgeBaseError(
                    f"{path}: rule {spec.code}: field `{where}.{field}`: unknown "
                    f"{field} {', '.join(unknown)} (model_families.yaml has: "
                    f"{', '.join(sorted(known))})")


def _loader():
    import yaml

    return getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _builtin_table() -> FamilyTable:
    return _cached_table(BUILTIN_DIR / FAMILY_FILE)


_TABLES: dict[Path, FamilyTable] = {}


def _cached_table(path: Path) -> FamilyTable:
    if path not in _TABLES:
        _TABLES[path] = load_family_table(path)
    return _TABLES[path]


def load_rule_folder(path: str | Path) -> list[type[Rule]]:
    """The rules of one folder as registry classes (not registered; see `register_rule_folder`).

    Raises KnowledgeBaseError for a missing folder, a malformed file or a duplicated code.
    Loading the same folder twice returns the same classes.
    """
    from verl_lint.rules.knowledge.interpreter import build_rule

    folder = Path(path).expanduser().resolve()
    key = str(folder)
    if key in _FOLDERS:
        return _FOLDERS[key]
    if not folder.is_dir():
        raise KnowledgeBaseError(f"{path}: extend-rules folder not found")
    table = _builtin_table()
    if folder != BUILTIN_DIR.resolve() and (folder / FAMILY_FILE).is_file():
        own = _cached_table(folder / FAMILY_FILE)
        table = FamilyTable(families=own.families + table.families,
                            traits=own.traits + table.traits)
    matcher = FamilyMatcher(table)
    rules: list[type[Rule]] = []
    seen: dict[str, Path] = {}
    for file in sorted([*folder.glob("*.yaml"), *folder.glob("*.yml")]):
        if file.name == FAMILY_FILE:
            continue
        spec = parse_rule_file(file)
        _check_model_names(file, spec, table)
        if spec.code in seen:
            raise KnowledgeBaseError(f"{file}: rule {spec.code}: field `code`: already used by "
                                     f"{seen[spec.code]}")
        seen[spec.code] = file
        rules.append(build_rule(spec, origin=str(file), families=matcher))
    _FOLDERS[key] = rules
    return rules


def load_builtin_rules() -> list[type[Rule]]:
    return load_rule_folder(BUILTIN_DIR)


def register_rule_folder(path: str | Path) -> list[type[Rule]]:
    """Load an `extend-rules` folder and add its rules to the registry (idempotent).

    A code that an existing rule already uses is an error naming both places.
    """
    from verl_lint.rules.registry import add_rules, get_rule

    rules = load_rule_folder(path)
    for rule in rules:
        existing = get_rule(rule.code)
        if existing is not None and existing is not rule:
            raise KnowledgeBaseError(
                f"{rule.origin}: rule {rule.code}: field `code`: already used by "
                f"{existing.name} ({existing.origin})")
    add_rules(rules)
    return rules


def load_extend_rules(paths: tuple[str, ...] | list[str]) -> list[type[Rule]]:
    """Register every `extend-rules` folder (the engine calls this once per settings)."""
    return [rule for path in paths for rule in register_rule_folder(path)]

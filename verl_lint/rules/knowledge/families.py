"""The model-family table (`rules/model_families.yaml`): model path → family, traits, size."""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

from verl_lint.records import shared_dataclass

if TYPE_CHECKING:
    from verl_lint.rules.knowledge.plain import FamilyTable

FAMILY_FILE = "model_families.yaml"

# `397B`, `0.5B`, `8x7B`; not `A17B` (active parameters: preceded by a letter)
_SIZE = re.compile(r"(?<![a-z0-9.])(?:(\d+)x)?(\d+(?:\.\d+)?)b(?![a-z0-9])")


@shared_dataclass(frozen=True)
class ModelInfo:
    path: str
    family: str | None
    label: str | None
    traits: frozenset[str]
    params_b: float | None
    architectures: tuple[str, ...] = ()

    def describe(self) -> str:
        size = f", {self.params_b:g}B parameters" if self.params_b is not None else ""
        return f"{self.label or 'unknown family'}{size}"


class FamilyMatcher:
    def __init__(self, table: FamilyTable) -> None:
        self._families = [(f, re.compile(f.match, re.I)) for f in table.families]
        self._traits = [(t.trait, re.compile(t.match, re.I)) for t in table.traits]
        self.classify = lru_cache(maxsize=1024)(self._classify)

    def _classify(self, path: str) -> ModelInfo:
        family = label = None
        traits: set[str] = set()
        params = None
        archs: tuple[str, ...] = ()
        for f, rx in self._families:
            if rx.search(path):
                family, label, params, archs = f.name, f.label or f.name, f.params_b, \
                    f.architectures
                traits.update(f.traits)
                break
        traits.update(t for t, rx in self._traits if rx.search(path))
        return ModelInfo(path, family, label, frozenset(traits), parse_params_b(path) or params,
                         archs)


def parse_params_b(path: str) -> float | None:
    """Parameter count in billions from the last path segment that names one."""
    for segment in reversed([s for s in path.lower().split("/") if s]):
        sizes = _SIZE.findall(segment)
        if sizes:
            experts, size = sizes[0]
            return float(size) * (int(experts) if experts else 1)
    return None


def load_family_table(path: Path) -> FamilyTable:
    from verl_lint.rules.knowledge.loader import KnowledgeBaseError, cached_model

    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise KnowledgeBaseError(f"{path}: {exc}") from None
    return cached_model("model-families", text, lambda: _validate_table(path, text))


def _validate_table(path: Path, text: str) -> FamilyTable:
    from pydantic import ValidationError

    from verl_lint.rules.knowledge import schema
    from verl_lint.rules.knowledge.loader import (
        KnowledgeBaseError, cached_yaml, format_validation_error, is_yaml_error,
    )
    from verl_lint.rules.knowledge.plain import plain

    try:
        data = cached_yaml(text, fast=False) or {}
        table = plain(schema.FamilyTable.model_validate(data))
        for f in table.families:
            re.compile(f.match)
        for t in table.traits:
            re.compile(t.match)
    except ValidationError as exc:
        raise KnowledgeBaseError(format_validation_error(path, "model families", exc)) from None
    except (re.error, OSError) as exc:
        raise KnowledgeBaseError(f"{path}: {exc}") from None
    except Exception as exc:
        if not is_yaml_error(exc):
            raise
        raise KnowledgeBaseError(f"{path}: {exc}") from None
    return table

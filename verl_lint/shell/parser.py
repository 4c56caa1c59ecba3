"""tree-sitter-bash → ScriptModel (implementation in progress)."""

from __future__ import annotations

from verl_lint.shell.model import ScriptModel
from verl_lint.source import SourceText


def parse_script(source: SourceText) -> ScriptModel:
    return ScriptModel(length=len(source.data))

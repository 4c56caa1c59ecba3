"""Shell stage: parse a bash script with tree-sitter-bash into a `ScriptModel`."""

from verl_lint.shell.model import (
    ArrayLiteral, Assignment, BranchRef, Case, CaseItem, Command, Comment, Condition, Function,
    Group, Heredoc, If, IfBranch, Loop, Other, ParseError, Piece, Pipeline, Redirect, ScriptModel,
    SetOptions, Statement, Unset, Word,
)
from verl_lint.shell.parser import parse_script

__all__ = [
    "ArrayLiteral", "Assignment", "BranchRef", "Case", "CaseItem", "Command", "Comment",
    "Condition", "Function", "Group", "Heredoc", "If", "IfBranch", "Loop", "Other", "ParseError",
    "Piece", "Pipeline", "Redirect", "ScriptModel", "SetOptions", "Statement", "Unset", "Word",
    "parse_script",
]

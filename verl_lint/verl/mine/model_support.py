"""Mine the model lists verl's code keeps: which architectures a code path supports.

- `mcore_architectures`: the values of `SupportedModel` in `verl/models/mcore/registry.py`, the
  Hugging Face architectures verl's own Megatron-Core conversion (`hf_to_mcore_config`, the path
  without a Megatron bridge) accepts; any other raises `NotImplementedError` in
  `get_supported_model`.
- `model_types`: every `model_type` string verl's code compares with (`model.config.model_type
  in ["qwen2_5_vl", "qwen2_vl"]`), with where: the model types verl special-cases, for
  extending `rules/model_families.yaml`.

Each list is `{"values": [...], "at": "path:line"}` (`model_types`: value → first `path:line`).
"""

from __future__ import annotations

import ast
from typing import Any, Mapping

Files = Mapping[str, bytes]
REGISTRY = "verl/models/mcore/registry.py"


def mine_model_support(files: Files) -> dict[str, Any]:
    out: dict[str, Any] = {}
    registry = _parse(files.get(REGISTRY))
    if registry is not None:
        for node in registry.body:
            if isinstance(node, ast.ClassDef) and node.name == "SupportedModel":
                values = sorted(a.value.value for a in node.body
                                if isinstance(a, ast.Assign) and isinstance(a.value, ast.Constant)
                                and isinstance(a.value.value, str))
                out["mcore_architectures"] = {"values": values,
                                              "at": f"{REGISTRY}:{node.lineno}"}
            elif isinstance(node, ast.FunctionDef) and node.name == "get_supported_model":
                out["mcore_lookup"] = f"{REGISTRY}:{node.lineno}"
    out["model_types"] = _model_types(files)
    return out


def _parse(raw: bytes | None) -> ast.Module | None:
    if raw is None:
        return None
    try:
        return ast.parse(raw)
    except (SyntaxError, ValueError):
        return None


def _model_types(files: Files) -> dict[str, str]:
    """`x.model_type == "a"`, `model_type in ("a", "b")` → {"a": "path:line", …}."""
    found: dict[str, str] = {}
    for path in sorted(files):
        if not (path.startswith("verl/") and path.endswith(".py")):
            continue
        tree = _parse(files[path])
        if tree is None:
            continue
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Compare) and len(node.ops) == 1 and
                    isinstance(node.ops[0], (ast.Eq, ast.In, ast.NotEq, ast.NotIn))):
                continue
            left = node.left
            name = left.attr if isinstance(left, ast.Attribute) else getattr(left, "id", None)
            if name != "model_type":
                continue
            right = node.comparators[0]
            items = right.elts if isinstance(right, (ast.List, ast.Tuple, ast.Set)) else [right]
            for item in items:
                if isinstance(item, ast.Constant) and isinstance(item.value, str):
                    found.setdefault(item.value, f"{path}:{node.lineno}")
    return dict(sorted(found.items()))

"""The comment verl's own YAML config writes above a key, for hover.

verl documents its config keys with `#` comments in the YAML files of each config group
(`rollout/rollout.yaml`, `actor/actor.yaml`, `optim/fsdp.yaml`, …). A key's full dotted path is
found in a group file by its tail: `actor_rollout_ref.rollout.tensor_model_parallel_size` is
`tensor_model_parallel_size` in a file of the `rollout` group. Requiring the group folder to
match the segment before the tail keeps a same-named key of another group from answering.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import PurePosixPath

_KEY_LINE = re.compile(r"^(?P<indent>\s*)(?P<name>[A-Za-z_][\w\-]*)\s*:(?P<rest>.*)$")
_TRAILING = re.compile(r"\s#\s?(?P<text>.*)$")
_SKIP_TOP = {"defaults", "hydra"}


def _comment_lines(text: str) -> dict[str, str]:
    """Local dotted path → the comment block right above it (or its trailing comment)."""
    docs: dict[str, str] = {}
    stack: list[tuple[int, str]] = []
    pending: list[str] = []
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped:
            pending = []
            continue
        if stripped.startswith("#"):
            pending.append(stripped.lstrip("#").strip())
            continue
        m = _KEY_LINE.match(line)
        if m is None:  # list items, continuation of a block scalar
            pending = []
            continue
        indent = len(m.group("indent"))
        while stack and stack[-1][0] >= indent:
            stack.pop()
        path = [name for _, name in stack] + [m.group("name")]
        stack.append((indent, m.group("name")))
        if path[0] in _SKIP_TOP:
            pending = []
            continue
        trailing = _TRAILING.search(m.group("rest"))
        text_block = "\n".join(p for p in pending if p) or (
            trailing.group("text").strip() if trailing else "")
        if text_block:
            docs.setdefault(".".join(path), text_block)
        pending = []
    return docs


@lru_cache(maxsize=None)
def _index(version: str) -> dict[tuple[str, str], str]:
    from verl_lint.verl import data

    index: dict[tuple[str, str], str] = {}
    # verl's trainer configs first: they are what most launches compose
    files = sorted(data.config_files(version).items(),
                   key=lambda kv: (not kv[0].startswith("verl/trainer/config/"), kv[0]))
    for name, text in files:
        if not name.endswith((".yaml", ".yml")) or "/_generated" in name:
            continue
        parts = PurePosixPath(name).parts
        group = parts[parts.index("config") + 1] if "config" in parts and \
            parts.index("config") + 2 < len(parts) else ""
        for path, doc in _comment_lines(text).items():
            index.setdefault((group, path), doc)
    return index


def key_comment(version: str, key: str) -> str | None:
    """verl's YAML comment for a dotted config key in that release, or None."""
    try:
        index = _index(version)
    except (KeyError, OSError, ValueError):  # no bundled configs for that version
        return None
    segments = key.split(".")
    for i in range(len(segments)):
        group = segments[i - 1] if i else ""
        found = index.get((group, ".".join(segments[i:])))
        if found:
            return found
    return None

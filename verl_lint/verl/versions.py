"""verl release numbers and ranges (`>=0.7.0,<0.9.0`)."""

from __future__ import annotations

import re
from functools import lru_cache

SUPPORTED_VERSIONS: tuple[str, ...] = (
    "0.4.0", "0.4.1", "0.5.0", "0.6.0", "0.6.1", "0.7.0", "0.7.1", "0.8.0", "0.9.0", "0.9.1",
)
NEWEST = SUPPORTED_VERSIONS[-1]

_VERSION = re.compile(r"^\s*(\d+)\.(\d+)(?:\.(\d+))?")


def parse_version(text: str) -> tuple[int, int, int]:
    m = _VERSION.match(text)
    if not m:
        raise ValueError(f"not a verl version: {text!r}")
    return int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)


@lru_cache(maxsize=1024)  # rules ask the same few (release, range) pairs for every launch
def in_range(version: str, spec: str | None) -> bool:
    """True when `version` satisfies every comma-separated clause of `spec` (None/"" = any)."""
    if not spec:
        return True
    v = parse_version(version)
    for clause in spec.split(","):
        clause = clause.strip()
        m = re.match(r"^(>=|<=|==|!=|>|<)\s*(.+)$", clause)
        if not m:
            raise ValueError(f"bad version range clause {clause!r}")
        op, bound = m.group(1), parse_version(m.group(2))
        ok = {
            ">=": v >= bound, "<=": v <= bound, "==": v == bound,
            "!=": v != bound, ">": v > bound, "<": v < bound,
        }[op]
        if not ok:
            return False
    return True

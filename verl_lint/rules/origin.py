"""Where an effective value came from in the script: shared by the VL3xx and VL4xx rules."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from verl_lint.source import Span
    from verl_lint.verl.effective import Resolved


def script_span(resolved: Resolved | None) -> Span | None:
    """The override word that decided this value: the one that set the key, or, for a value
    inherited through `${oc.select:…}`, the one that set the key it inherits from. None when
    verl's default decided it (or the key does not exist)."""
    if resolved is None:
        return None
    origin = resolved.origin
    if origin.kind == "inherited":
        origin = resolved.inherited_origin
        if origin is None:
            return None
    return origin.span if origin.kind == "script" else None

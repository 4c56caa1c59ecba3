"""Compose a verl config with hydra-core itself (the slow, exact path).

Used by `scripts/build_verl_data.py` to precompose the bundled default configs, and at lint time
only for a (config name, group overrides) pair that is neither bundled nor in the disk cache.
hydra is imported here, lazily: a warm run never reaches this module.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from verl_lint.records import shared_dataclass


@shared_dataclass()
class ComposeFailure:
    """Hydra refused to compose: which override (if known) and Hydra's message."""

    kind: str  # "missing-config" (unknown group option / config name), "override", "syntax"
    message: str
    override: str | None = None


def compose_tree(config_dir: Path, config_name: str, overrides: list[str],
                 search_dirs: list[Path] = ()) -> tuple[dict[str, Any] | None, ComposeFailure | None]:
    """Compose like verl's `@hydra.main` would and return the plain, unresolved tree.

    `search_dirs` replace the primary config's `hydra.searchpath` (verl points it at
    `pkg://verl.trainer.config`, which would import verl; we point it at the same files).
    """
    from hydra import compose, initialize_config_dir
    from hydra.errors import HydraException, MissingConfigException, OverrideParseException
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    if not (config_dir / f"{config_name}.yaml").exists():
        # Hydra finds the primary config anywhere on its search path (`--config-dir` folders
        # included); the compose API only looks in the primary folder, so start from the one
        # that has it
        holder = next((d for d in search_dirs if (d / f"{config_name}.yaml").exists()), None)
        if holder is not None:
            search_dirs = [config_dir, *(d for d in search_dirs if d != holder)]
            config_dir = holder
    extra = []
    if search_dirs:
        extra.append("hydra.searchpath=[" + ",".join(f"file://{d}" for d in search_dirs) + "]")
    try:
        with initialize_config_dir(config_dir=str(config_dir), version_base=None):
            cfg = compose(config_name, overrides=[*overrides, *extra])
    except MissingConfigException as exc:
        return None, ComposeFailure(kind="missing-config", message=_first_paragraph(exc))
    except OverrideParseException as exc:
        return None, ComposeFailure(kind="syntax", message=_first_paragraph(exc))
    except (HydraException, OmegaConfBaseException, ValueError, TypeError, IndexError) as exc:
        return None, ComposeFailure(kind="override", message=_first_paragraph(exc))
    return OmegaConf.to_container(cfg, resolve=False), None


def _first_paragraph(exc: BaseException) -> str:
    return str(exc).split("\n\n", 1)[0].strip()

"""Apply a launch's overrides to verl's composed config.

CONTRACT: `analyze_launch(release, launch) -> LaunchAnalysis` where `config` is the
EffectiveConfig (None when the entry point/config cannot be resolved, with `unresolved` saying
why, for VL004) and `problems` lists every override Hydra (or instantiation) would reject.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from verl_lint.evaluate.model import Launch
from verl_lint.verl.effective import EffectiveConfig
from verl_lint.verl.release import VerlRelease


class LaunchAnalysis(BaseModel):
    model_config = ConfigDict(arbitrary_types_allowed=True)

    config: EffectiveConfig | None = None
    config_name: str | None = None
    unresolved: str | None = None
    problems: list = Field(default_factory=list)


def analyze_launch(release: VerlRelease, launch: Launch) -> LaunchAnalysis:
    return LaunchAnalysis(unresolved="verl knowledge not built yet")

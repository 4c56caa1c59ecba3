"""The `verl-lint` console script (`[project.scripts]` in pyproject.toml).

Importing click and verl-lint allocates tens of thousands of objects that live as long as the
process: with the default thresholds the collector walks them ≈ 40 times, ≈ 3 ms of a run
answered from the result cache. The gen-0 threshold is raised here, before those imports, as
the engine raises it for a batch (linting makes no reference cycles) — in the console script's
own process only: a program that imports `verl_lint.cli` keeps its collector settings.
"""

import gc

gc.set_threshold(50_000, 20, 20)

from verl_lint.cli import entry  # noqa: E402

__all__ = ["entry"]

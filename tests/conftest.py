"""Shared test configuration.

Hypothesis profiles: `ci` (default) keeps the whole property suite under ~3 minutes on two cores;
`long` (`VERL_LINT_HYPOTHESIS_PROFILE=long`) runs many more examples locally; `dev` is a quick
smoke run while editing.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

_SLOW_OK = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example]

settings.register_profile("ci", max_examples=60, deadline=None, derandomize=True,
                          suppress_health_check=_SLOW_OK, print_blob=True)
settings.register_profile("long", max_examples=2_000, deadline=None,
                          suppress_health_check=_SLOW_OK, print_blob=True)
settings.register_profile("dev", max_examples=15, deadline=None, suppress_health_check=_SLOW_OK)
settings.load_profile(os.environ.get("VERL_LINT_HYPOTHESIS_PROFILE", "ci"))

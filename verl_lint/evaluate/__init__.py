"""Evaluate stage: interpret a ScriptModel once per Scenario into launches and overrides."""

from verl_lint.evaluate.model import (
    Launch, Override, Passthrough, Scenario, ScenarioRun, Unknown, Value, VarUse,
)
from verl_lint.evaluate.scenarios import evaluate_script, infer_scenarios

__all__ = ["Launch", "Override", "Passthrough", "Scenario", "ScenarioRun", "Unknown", "Value",
           "VarUse", "evaluate_script", "infer_scenarios"]

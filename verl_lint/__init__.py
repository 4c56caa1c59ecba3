"""verl-lint: a static linter for the bash scripts that launch verl training jobs."""

__version__ = "0.1.0"

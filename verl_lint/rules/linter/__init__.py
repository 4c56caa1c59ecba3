"""VL0xx: findings about the linter's own inputs (parse errors, suppressions, versions, configs)."""

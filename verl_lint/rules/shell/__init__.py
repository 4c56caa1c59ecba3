"""VL1xx: the shell script itself (variables, device branches, continuations, quoting)."""

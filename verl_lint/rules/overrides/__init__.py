"""VL2xx: overrides checked against verl's config for the chosen release and entry point."""

"""The language server (`verl-lint server`): `server` (pygls wiring), `convert` (positions,
diagnostics, edits), `insight` (hover and completion), `yaml_docs` (verl's key comments)."""

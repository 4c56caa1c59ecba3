"""`verl-lint server`: the language server over stdio (pygls is imported only here)."""

from __future__ import annotations

import click


@click.command("server")
def command() -> None:
    """Run the verl-lint language server on stdin/stdout (for editors)."""
    try:
        from verl_lint.lsp.server import main
    except ImportError as exc:  # pygls is a dependency, but a broken install should say so
        raise click.ClickException(f"the language server needs pygls: {exc}") from exc
    main()

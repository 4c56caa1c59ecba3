"""`verl-lint server`: the language server over stdio (pygls is imported only here)."""

from __future__ import annotations

import click


@click.command("server")
@click.option("--stdio", is_flag=True,
              help="Talk LSP over stdin/stdout (the default and only transport; editors pass it).")
def command(stdio: bool) -> None:
    """Run the verl-lint language server on stdin/stdout (for editors)."""
    del stdio  # stdio is the only transport: the flag is accepted because clients send it
    try:
        from verl_lint.lsp.server import main
    except ImportError as exc:  # pygls is a dependency, but a broken install should say so
        raise click.ClickException(f"the language server needs pygls: {exc}") from exc
    main()

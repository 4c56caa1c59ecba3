"""`verl-lint clean`: delete verl-lint's caches (the result cache and composed verl configs)."""

from __future__ import annotations

import click


@click.command("clean")
def command() -> None:
    """Delete the result cache and the verl config cache (every verl-lint version's)."""
    from verl_lint.result_cache import clean
    from verl_lint.verl.cache import cache_root

    root = cache_root()
    if root is None:
        click.echo("The cache is disabled (VERL_LINT_NO_CACHE); nothing to clean.")
        return
    removed = clean()
    where = root.parent
    click.echo(f"Removed {len(removed)} cache folder{'s' if len(removed) != 1 else ''} "
               f"from {where}." if removed else f"No verl-lint cache in {where}.")

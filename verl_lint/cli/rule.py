"""`verl-lint rule CODE|NAME` prints a rule's docs page; `--all` lists every rule
(text, `--format json`, or `--format markdown` — the README's rules table)."""

from __future__ import annotations

import json
import sys
from typing import Any

import click


def rule_dict(rule) -> dict[str, Any]:
    return {"code": rule.code, "name": rule.name, "severity": rule.severity.value,
            "summary": rule.summary, "scope": rule.scope, "fixable": rule.fixable,
            "origin": rule.origin, "url": rule.url(), "docs": rule.docs()}


def _heading(rule, level: str) -> str:
    """The page's title and its severity/fixable line (as `verl-lint rule` and docs/rules.md
    show them)."""
    fix = "yes" if rule.fixable else "no"
    return f"{level} {rule.code} {rule.name}\n\nSeverity: {rule.severity.value} · Fixable: {fix}"


def page(rule) -> str:
    return _heading(rule, "#") + "\n\n" + rule.docs().strip() + "\n"


def markdown_table(rules) -> str:
    lines = ["| Code | Name | Severity | Fix | Summary |", "|---|---|---|---|---|"]
    for r in rules:
        summary = r.summary.replace("|", "\\|")
        lines.append(f"| {r.code} | [{r.name}]({r.url()}) | {r.severity.value} | "
                     f"{'yes' if r.fixable else ''} | {summary} |")
    return "\n".join(lines) + "\n"


def docs_markdown(rules) -> str:
    """docs/rules.md: the table, then every rule's page under a `## CODE name` heading (the
    anchor `rule_url` links to), its own headings one level down."""
    parts = ["# verl-lint rules\n", "Generated from the rule registry "
             "(`VERL_LINT_UPDATE_SNAPSHOTS=1 pytest tests/test_cli.py` rewrites it).\n",
             markdown_table(rules)]
    for r in rules:
        body = "\n".join("#" + line if line.startswith("#") and not _in_fence(r.docs(), i)
                         else line for i, line in enumerate(r.docs().strip().splitlines()))
        parts.append(f"{_heading(r, '##')}\n\n{body}\n")
    return "\n".join(parts)


def _in_fence(text: str, index: int) -> bool:
    return sum(1 for line in text.strip().splitlines()[:index]
               if line.strip().startswith("```")) % 2 == 1


@click.command("rule")
@click.argument("rule", required=False)
@click.option("--all", "show_all", is_flag=True, help="Every rule.")
@click.option("--format", "output_format", type=click.Choice(["text", "json", "markdown"]),
              default="text", show_default=True)
def command(rule: str | None, show_all: bool, output_format: str) -> None:
    """Show the documentation of a rule (by code or name)."""
    from verl_lint.rules.registry import all_rules, get_rule
    from verl_lint.settings import closest_rule

    if show_all == (rule is not None):
        click.echo("error: give a rule code or name, or --all", err=True)
        sys.exit(2)
    if show_all:
        rules = all_rules()
    else:
        found = get_rule(rule)
        if found is None:
            close = closest_rule(rule, all_rules())
            hint = f" (did you mean {close!r}?)" if close else ""
            click.echo(f"error: unknown rule {rule!r}{hint}; `verl-lint rule --all` lists them",
                       err=True)
            sys.exit(2)
        rules = [found]
    if output_format == "json":
        data = [rule_dict(r) for r in rules]
        click.echo(json.dumps(data if show_all else data[0], indent=2, ensure_ascii=False))
    elif output_format == "markdown":
        click.echo(markdown_table(rules) if show_all else page(rules[0]), nl=False)
    else:
        click.echo("\n".join(page(r) for r in rules), nl=False)

"""`cems rule …`: the rules the PreToolUse hook enforces."""

from __future__ import annotations

import json
import os
from pathlib import Path

import typer

from cems_cli.cli.common import JsonOption, add_id_column, console, emit_json, fail, service, short_id, shown

rule_app = typer.Typer(
    help="Rules that block, ask about or warn on an agent's tool calls.", no_args_is_help=True
)


def _rule_json(rule, created: bool | None = None) -> dict:
    data = rule.to_dict()
    if created is not None:
        data["created"] = created
    return data


@rule_app.command("add")
def add(
    pattern: str = typer.Argument(
        ..., help="Glob (or regex with --regex), or the one-line form 'Bash: git push --force* — reason'."
    ),
    tool: str = typer.Option(
        None, "--tool", help="Tool name: Bash, Edit, Write, Read, WebFetch, mcp__server__tool"
    ),
    field: str = typer.Option(
        None, "--field", help="tool_input field to match (default: the tool's main one)"
    ),
    action: str = typer.Option(None, "--action", help="block (default), ask or warn"),
    reason: str = typer.Option(None, "--reason", help="Why: shown to the agent when it is stopped."),
    project: str = typer.Option(None, "--project", help="Only inside this project (org/repo)."),
    regex: bool = typer.Option(False, "--regex", help="PATTERN is a regular expression."),
    scope: str = typer.Option("personal", "--scope", help="personal, or shared (binds your team)"),
    as_json: bool = JsonOption,
) -> None:
    """Add a rule; prints its id."""
    with service() as svc:
        stored, created = svc.rules.add_one(
            pattern, tool=tool, action=action, reason=reason, field=field, regex=regex, project=project,
            scope=scope, tool_hint="--tool",
        )
    if as_json:
        emit_json(_rule_json(stored, created))
    else:
        console.print(stored.id if created else f"{stored.id} (already in force)")


@rule_app.command("list")
def list_(
    project: str = typer.Option(None, "--project", help="Only rules in force in this project."),
    as_json: bool = JsonOption,
) -> None:
    """The rules in force for you (yours and your team's)."""
    from cems_cli.project import normalize_project

    with service() as svc:
        rules = svc.rules.list_rules(normalize_project(project).lower() if project else None)
    if as_json:
        emit_json({"rules": [_rule_json(r) for r in rules]})
        return
    if not rules:
        console.print("No rules.")
        return
    from rich.table import Table

    table = Table(title=f"{len(rules)} rules")
    add_id_column(table)
    for column in ("action", "tool", "pattern", "reason", "where"):
        table.add_column(column, overflow="fold")
    for r in rules:
        where = ", ".join(
            x
            for x in (
                r.scope,
                r.project or "all projects",
                f"field={r.field}" if r.field else "",
                "regex" if r.regex else "",
            )
            if x
        )
        table.add_row(short_id(r.id), r.action, shown(r.tool), shown(r.pattern), shown(r.reason),
                      shown(where))
    console.print(table)


@rule_app.command("rm")
def rm(
    rule_id: str = typer.Argument(..., help="Rule id (or a unique prefix)."), as_json: bool = JsonOption
) -> None:
    """Remove a rule."""
    with service() as svc:
        removed = svc.rules.remove(rule_id)
    if as_json:
        emit_json({"id": removed, "removed": True})
    else:
        console.print(f"Removed rule {removed}")


@rule_app.command("test")
def test(
    tool: str = typer.Option(..., "--tool", help="Tool name, e.g. Bash"),
    input_: str = typer.Option(
        ..., "--input", help='tool_input as JSON, e.g. \'{"command": "git push -f"}\''
    ),
    project: str = typer.Option(None, "--project", help="Project to test in (default: the current one)."),
    as_json: bool = JsonOption,
) -> None:
    """Show what the PreToolUse hook would decide for this tool call, and which rule decides it."""
    from cems_cli.project import normalize_project
    from cems_cli.rules.matcher import decide

    try:
        tool_input = json.loads(input_)
    except json.JSONDecodeError as error:
        fail(f"--input is not valid JSON: {error.msg} at position {error.pos}")
    if not isinstance(tool_input, dict):
        fail("--input must be a JSON object")
    with service() as svc:
        current = normalize_project(project).lower() if project else svc.settings.current_project().lower()
        rules = svc.rules.list_rules()
        on_timeout = svc.settings.rules_on_timeout
    decision = decide(rules, tool, tool_input, current, cwd=os.getcwd(), on_timeout=on_timeout)
    result = {
        "decision": decision.action if decision else "allow",
        "project": current,
        "rule": _rule_json(decision.rule) if decision else None,
        "matched": decision.value if decision else None,
        "unchecked": (decision.unchecked or None) if decision else None,
    }
    if as_json:
        emit_json(result)
    elif decision is None:
        console.print(f"allow — no rule matches ({len(rules)} rules checked)")
    else:
        rule = decision.rule
        console.print(
            f"{decision.action} — rule {short_id(rule.id)} {rule.tool}: {rule.pattern}"
            + (f" — {rule.reason}" if rule.reason else "")
            + (f" ({decision.unchecked})" if decision.unchecked else ""),
            markup=False,
        )


@rule_app.command("import")
def import_(
    file: Path = typer.Argument(..., help="One rule per line: 'Bash: pattern — reason' (# comments)."),
    project: str = typer.Option(None, "--project", help="Apply every rule only in this project."),
    scope: str = typer.Option("personal", "--scope", help="personal or shared"),
    as_json: bool = JsonOption,
) -> None:
    """Import rules from a file (all or nothing)."""
    from cems_cli.rules.parse import parse_rules_file

    try:
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        fail(f"cannot read {file}: {error}")
    with service() as svc:
        try:
            rules = parse_rules_file(text, project=project, scope=scope, user_id=svc.settings.user)
        except ValueError as error:
            fail(f"{file}: {error}")
        if not rules:
            fail(f"{file}: no rules found")
        stored = svc.rules.add(rules)
    created = sum(1 for _, new in stored if new)
    if as_json:
        emit_json(
            {"imported": len(stored), "created": created, "rules": [_rule_json(r, c) for r, c in stored]}
        )
    else:
        console.print(f"Imported {len(stored)} rules ({created} new)")


def register(app: typer.Typer) -> None:
    app.add_typer(rule_app, name="rule")

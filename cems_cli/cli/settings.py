"""`cems config …`: live settings stored in the database, applied by the next search without a restart."""

from __future__ import annotations

import json

import typer

from cems_cli.cli.common import JsonOption, console, emit, emit_json, service

config_app = typer.Typer(
    help="Live settings: stored per user (or team), applied by the next search, no restart. "
    "Precedence: environment > yours > your team's > config.toml > default.",
    no_args_is_help=True,
)
TeamOption = typer.Option(False, "--team", help="Your team's value (CEMS_TEAM) instead of yours.")


def _shown(value: object) -> str:
    return "none" if value is None else json.dumps(value) if not isinstance(value, str) else value


@config_app.command("list")
def list_(as_json: bool = JsonOption) -> None:
    """Every setting that can be stored: its value in effect and where it comes from."""
    with service() as memory:
        values = memory.config.list_settings()
    if as_json:
        emit_json({"settings": [v.to_json() for v in values]})
        return
    from rich.table import Table

    table = Table(title="Live settings (cems config set KEY VALUE)")
    for column in ("key", "value", "from"):
        table.add_column(column)
    for v in values:
        table.add_row(v.key, _shown(v.value), v.source)
    console.print(table)


@config_app.command("get")
def get(key: str = typer.Argument(..., help="A setting, e.g. recall_limit or fusion_vector_weight."),
        as_json: bool = JsonOption) -> None:
    """The value in effect of one setting, and where it comes from."""
    with service() as memory:
        value = memory.config.get(key)
    emit(as_json, value.to_json(), f"{value.key} = {_shown(value.value)}  ({value.source})", markup=False)


@config_app.command("set")
def set_(
    key: str = typer.Argument(..., help="A setting (see `cems config list`)."),
    value: str = typer.Argument(..., help="Its value, written as in the environment (none clears to None)."),
    team: bool = TeamOption,
    as_json: bool = JsonOption,
) -> None:
    """Store a setting for you (or --team); the next search of every process uses it."""
    with service() as memory:
        stored = memory.config.set(key, value, team=team)
    if as_json:
        emit_json(stored.to_json())
        return
    console.print(f"{stored.key} = {_shown(stored.value)}  ({stored.source})", markup=False)
    if stored.source == "environment":
        console.print(f"note: CEMS_{stored.key.upper()} in the environment wins over the stored value")


@config_app.command("unset")
def unset(key: str = typer.Argument(..., help="A setting."), team: bool = TeamOption,
          as_json: bool = JsonOption) -> None:
    """Remove your (or --team's) stored value: the next layer applies again."""
    with service() as memory:
        removed = memory.config.unset(key, team=team)
        value = memory.config.get(key)
    if as_json:
        emit_json({"removed": removed, **value.to_json()})
    else:
        verb = "removed" if removed else "nothing stored"
        console.print(f"{verb}; {value.key} = {_shown(value.value)}  ({value.source})", markup=False)


def register(app: typer.Typer) -> None:
    app.add_typer(config_app, name="config")

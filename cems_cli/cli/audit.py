"""`cems audit`: the append-only trail of writes to, and searches of, shared memories and rules."""

from __future__ import annotations

import typer

from cems_cli.cli.common import JsonOption, add_id_column, check_range, console, emit_json, shown


def audit(
    team: str = typer.Option(None, "--team", help="Only this team's entries."),
    since: str = typer.Option("1d", "--since", help="How far back: 30m, 12h, 1d, 2w, or an ISO 8601 time."),
    limit: int = typer.Option(200, "--limit", help="At most this many entries, newest first."),
    as_json: bool = JsonOption,
) -> None:
    """Who wrote, changed, shared, forgot or searched shared memories and rules (what you may read: your
    own actions and your teams'; an administrator reads all)."""
    from cems_cli.api import Memory
    from cems_cli.config import get_settings

    check_range("--limit", limit, 1, 100_000)
    # --team filters; CEMS_TEAM plays no part (it need not even be one of yours to read your own entries).
    with Memory(get_settings().model_copy(update={"team": None})) as memory:
        found = memory.audit(team=team, since=since, limit=limit)
    if as_json:
        emit_json({"entries": [entry.to_json() for entry in found]})
        return
    if not found:
        console.print("no audit entries")
        return
    from rich.table import Table

    table = Table(title="Audit (newest first)")
    for column in ("when", "who", "action", "team", "memory", "detail"):
        if column == "memory":
            add_id_column(table, column)
        else:
            table.add_column(column)
    for entry in found:
        what = entry.memory_id[:8] if entry.memory_id else ""
        if entry.query_hash:
            # A search's results are added when it ends (sql/025): one still running, or never ended by
            # its client, has none.
            results = entry.detail.get("results")
            counted = f"{results} results" if results is not None else "results not recorded"
            detail = f"query {entry.query_hash[:12]}, {counted}"
        else:
            detail = f"{entry.category} by {entry.author}" if entry.author else ""
        table.add_row(entry.at.strftime("%Y-%m-%d %H:%M:%S"), shown(entry.actor), entry.action,
                      shown(entry.team), what, shown(detail))
    console.print(table)


def register(app: typer.Typer) -> None:
    app.command()(audit)

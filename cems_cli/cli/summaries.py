"""`cems summaries`: the summaries overview questions are answered from (cems_cli/engine/summaries.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer

from cems_cli.cli.common import JsonOption, add_id_column, console, emit_json, service, short_id, shown

if TYPE_CHECKING:
    from cems_cli.api import StoredSummary


def summaries(
    project: str = typer.Option(
        None, "--project", "-p", help="Only this project's (a name or project:name; '' for no project)."
    ),
    rebuild: bool = typer.Option(
        False, "--rebuild", help="Bring them up to date first (maintenance does it daily)."
    ),
    full: bool = typer.Option(False, "--full", help="Show each summary's whole text."),
    as_json: bool = JsonOption,
) -> None:
    """List your summaries: one per group of alike memories of a project, and one per project.

    An overview question ("catch me up", "what have we done on billing this month?") is answered from
    them first, in `cems search` and in what the prompt hook injects. Made offline by extraction, or by
    the configured LLM; a summary goes when any of its memories is forgotten or changed.
    """
    from cems_cli.project import normalize_project

    wanted = None if project is None else normalize_project(project) if project.strip() else ""
    with service() as memory:
        report = memory.summarize() if rebuild else None
        found = memory.summaries(wanted)
    if as_json:
        emit_json({**({"rebuilt": report.to_json()} if report else {}),
                   "summaries": [s.to_json() for s in found]})
        return
    if report is not None:
        console.print(f"summaries: {report.describe()}", markup=False)
    if not found:
        console.print("no summaries yet: they are made of groups of at least two alike memories "
                      "(`cems summaries --rebuild`, or `cems maintain`)", markup=False)
        return
    if full:
        from rich.text import Text

        for s in found:
            head = f"  level {s.level}  {s.title}  ({len(s.members)} memories, {_period(s)}, {s.method})"
            console.print(Text.assemble((short_id(s.id), "bold"), head))
            console.print(s.content, markup=False, highlight=False)
            console.print()
        return
    from rich.table import Table

    table = Table()
    add_id_column(table)
    for column in ("project", "level", "title", "memories", "period"):
        table.add_column(column, overflow="fold")
    for s in found:
        table.add_row(short_id(s.id), shown(s.project.removeprefix("project:") or "—"), str(s.level),
                      shown(s.title), str(len(s.members)), _period(s))
    console.print(table)
    console.print("`cems summaries --full` shows their text", markup=False)


def _period(summary: StoredSummary) -> str:
    first, last = summary.period_start.date().isoformat(), summary.period_end.date().isoformat()
    return first if first == last else f"{first} – {last}"


def register(app: typer.Typer) -> None:
    app.command()(summaries)

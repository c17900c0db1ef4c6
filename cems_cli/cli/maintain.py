"""`cems maintain`: expire, consolidate and prune your memories (cems_cli/engine/maintain.py); `cems restore`
brings back what it archived."""

from __future__ import annotations

import typer

from cems_cli.cli.common import JsonOption, console, emit_json, service, short_id

_STEP_LABELS = {
    "expire": "archiving expired memories",
    "consolidate": "merging near duplicates",
    "prune": "deleting long-archived memories",
    "summarize": "summarising groups of memories",
}
_SHOWN_GROUPS = 20
_SHOWN_CHARS = 160  # of each text of a merge, on one line


def maintain(
    dry_run: bool = typer.Option(False, "--dry-run", help="Change nothing; report what would happen."),
    as_json: bool = JsonOption,
) -> None:
    """Archive expired memories, merge near duplicates, delete memories archived long ago, summarise.

    Expired: past their expiry, or captured session context unused (not updated, searched or recalled) for
    CEMS_CONTEXT_TTL_DAYS (default 90). Near duplicates (cosine >= 0.80, same scope, team, category and
    project) that state the same values (no number, version, name, path, environment, date or negation
    apart) become one, your own text over a captured copy; the other is archived, pointing at it, and
    `cems restore ID` brings it back. The texts of each merge are shown.
    Archived memories are deleted CEMS_ARCHIVE_GRACE_DAYS (default 30) after they were archived.
    Groups of alike memories and each project are summarised again where their memories changed (`cems
    summaries`; CEMS_SUMMARIES=false skips it). Pinned memories are never touched. The observer runs this
    once a day.
    """
    from rich.progress import Progress, SpinnerColumn, TextColumn

    from cems_cli.api import MAINTENANCE_STEPS as STEPS

    with service() as svc:
        settings = svc.settings
        with Progress(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            TextColumn("{task.completed}/{task.total}"),
            console=console,
            disable=as_json or not console.is_terminal,
            transient=True,
        ) as bar:
            task = bar.add_task("maintenance", total=len(STEPS))

            def on_step(step: str) -> None:
                bar.update(task, description=_STEP_LABELS.get(step, step), completed=STEPS.index(step))

            report = svc.maintain(dry_run=dry_run, progress=on_step)
            bar.update(task, completed=len(STEPS))
    if as_json:
        emit_json(report.to_json())
        return
    from rich.table import Table

    verb = "would be" if dry_run else "were"
    title = f"Maintenance of {settings.user}'s memories"
    table = Table(title=title + (" (dry run: nothing changed)" if dry_run else ""))
    table.add_column("step")
    table.add_column("memories", justify="right")
    table.add_column("what happened" if not dry_run else "what would happen")
    kept = len(report.consolidated)
    table.add_row("expire", str(report.expired), f"{verb} archived (expired)")
    table.add_row(
        "consolidate",
        str(report.merged),
        f"{verb} merged into {kept} other {'memory' if kept == 1 else 'memories'} (near duplicates)",
    )
    table.add_row(
        "prune",
        str(report.pruned),
        f"{verb} deleted (archived over {settings.archive_grace_days:g} days ago)",
    )
    if report.summaries is not None:
        table.add_row("summarize", str(report.summaries.written), report.summaries.describe(dry_run))
    if report.indexes:
        table.add_row("indexes", "", f"built {', '.join(report.indexes)} (left by an interrupted import)")
    if report.scrub is not None:
        done = "erased from the database files" if report.scrub.tables else "not yet erased"
        note = f" ({report.scrub.note})" if report.scrub.note else ""
        table.add_row("scrub", "", f"purged and pruned text {done}{note}")
    console.print(table)
    for group in report.consolidated[:_SHOWN_GROUPS]:
        merged = ", ".join(short_id(m) for m in group.merged)
        console.print(f"kept {short_id(group.kept)}  ←  {merged}", markup=False)
        console.print(f"  kept:   {_one_line(group.kept_text)}", markup=False, highlight=False)
        for memory_id, text in zip(group.merged, group.merged_texts, strict=True):
            console.print(f"  {short_id(memory_id)}: {_one_line(text)}", markup=False, highlight=False)
    if len(report.consolidated) > _SHOWN_GROUPS:
        console.print(f"… and {len(report.consolidated) - _SHOWN_GROUPS} more (see --json)", markup=False)


def _one_line(text: str) -> str:
    """Memory text is data: one line, control characters dropped, cut to _SHOWN_CHARS."""
    flat = " ".join("".join(c if c.isprintable() else " " for c in text).split())
    return flat if len(flat) <= _SHOWN_CHARS else flat[: _SHOWN_CHARS - 1].rstrip() + "…"


def restore(
    memory_id: str = typer.Argument(..., metavar="ID", help="The archived memory's id (or a unique prefix)."),
    as_json: bool = JsonOption,
) -> None:
    """Bring back an archived memory: merged by `cems maintain`, expired, or forgotten.

    A merged memory is taken out of the memory it was merged into: what the merge changed there (priority,
    expiry, tags, accesses, a title or provenance it lacked) is set back where nothing changed it since,
    and maintenance never merges the two again. An expired memory loses its expiry. Memories deleted
    (pruned or purged) are gone for good.
    """
    with service() as svc:
        restored = svc.restore(memory_id)
    if as_json:
        emit_json(restored.to_json())
        return
    console.print(f"Restored {restored.id}", markup=False)
    if restored.merged_into:
        undone = f"; undid its changes to it ({', '.join(restored.undone)})" if restored.undone else ""
        console.print(f"taken out of {restored.merged_into}{undone}", markup=False)
    if restored.expiry_cleared:
        console.print("its expiry was past and is cleared", markup=False)


def register(app: typer.Typer) -> None:
    app.command()(maintain)
    app.command()(restore)

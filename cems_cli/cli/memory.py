"""Memory commands: remember, search, list, show, forget, pin, share."""

from __future__ import annotations

import sys
from typing import Any

import typer

from cems_cli.cli.common import (
    JsonOption,
    add_id_column,
    check_range,
    confirm,
    console,
    emit,
    emit_json,
    fail,
    plain_value,
    service,
    short_id,
    shown,
    stdin_is_terminal,
)

CATEGORY_HELP = "preferences, decisions, patterns, context, learnings, general or rules"
# `search --limit`: the bound of CEMS_SEARCH_LIMIT. `list --limit`: a screenful is 50; past ten thousand,
# `cems export` is the way to read everything.
SEARCH_LIMIT_MAX = 1000
LIST_LIMIT_MAX = 10_000


def _read_text(text: str) -> str | bytes:
    """The memory text (from stdin for -), refused when over CEMS_MAX_MEMORY_BYTES before anything else
    happens: embedding cost grows with the text (cems_cli/embedding/limits.py)."""
    from cems_cli.embedding.limits import check_text_size, configured_max_bytes, read_limited

    if text == "-":
        return read_limited(sys.stdin.buffer, configured_max_bytes())
    check_text_size(text, configured_max_bytes())
    return text


def remember(
    text: str = typer.Argument(..., help="The memory text, or - to read it from stdin."),
    category: str = typer.Option("general", "--category", "-c", help=CATEGORY_HELP),
    tags: str = typer.Option("", "--tags", "-t", help="Comma-separated tags."),
    scope: str = typer.Option("personal", "--scope", help="personal or shared"),
    project: str = typer.Option(
        None, "--project", "-p", help="Project id (org/repo); default: the current one."
    ),
    no_project: bool = typer.Option(False, "--no-project", help="Store without a project reference."),
    pin: bool = typer.Option(False, "--pin", help="Pin it: exempt from decay, boosted in search."),
    title: str = typer.Option(None, "--title", help="A short title."),
    context: str = typer.Option(
        None, "--context", help="What situates it (e.g. the question it answers): searchable, not shown."
    ),
    as_json: bool = JsonOption,
) -> None:
    """Remember TEXT; prints the memory id (the existing one if the text is already stored)."""
    from cems_cli.project import normalize_project

    content = _read_text(text)
    with service() as svc:
        # None: the library's default (the current project); "": no project.
        source_ref = "" if no_project else (normalize_project(project) if project else None)
        memory_id, created = svc.remember(
            content,
            category=category,
            tags=tags,
            scope=scope,
            project=source_ref,
            pin=pin,
            title=title,
            context=context,
        )
    emit(as_json, {"id": memory_id, "created": created},
         memory_id if created else f"{memory_id} (already remembered)")


def search(
    query: str = typer.Argument(..., help="What to look for."),
    limit: int = typer.Option(
        None,
        "--limit",
        "-n",
        help=f"How many results, at most {SEARCH_LIMIT_MAX:,} (default CEMS_SEARCH_LIMIT, 5).",
    ),
    category: str = typer.Option(None, "--category", "-c", help=CATEGORY_HELP),
    scope: str = typer.Option("both", "--scope", help="personal, shared or both"),
    project: str = typer.Option(None, "--project", "-p", help="Only memories of this project."),
    mode: str = typer.Option(None, "--mode", help="vector, hybrid or auto (default CEMS_SEARCH_MODE)."),
    explain: bool = typer.Option(False, "--explain", help="Show why each result ranks where it does, one "
                                 "line per factor (with --json: every number)."),
    explain_full: bool = typer.Option(False, "--explain-full", help="--explain with every number of every "
                                      "stage (JSON)."),
    show_all: bool = typer.Option(False, "--all", help="Also results below the confidence floor "
                                  "(CEMS_RECALL_MIN_CONFIDENCE), marked weak."),
    as_json: bool = JsonOption,
) -> None:
    """Search memories; prints ranked results, only those likely enough to answer (nothing when nothing
    matches)."""
    from cems_cli.embedding.limits import check_text_size, configured_max_bytes
    from cems_cli.project import normalize_project

    check_range("--limit", limit, 1, SEARCH_LIMIT_MAX)
    check_text_size(query, configured_max_bytes(), "search query", "shorten it")
    explain = explain or explain_full
    with service() as svc:
        options = svc.search_options(
            limit=limit,
            category=category,
            scope=scope,
            project=normalize_project(project) if project else None,
            mode=mode,
            explain=explain,
            include_weak=show_all,
        )
        results = svc.search(query, options)
    if as_json:
        emit_json({"results": [r.to_json(with_explain=explain) for r in results]})
        return
    if not results:
        return  # a query that matches nothing prints nothing, as the prompt hook injects nothing
    from rich.table import Table

    # Every cell of stored text is `shown`: literal (no rich markup) and without control sequences.
    table = Table(title=shown(f"Search: {query}"), show_lines=False)
    for column, style in (
        ("#", "dim"),
        ("id", "cyan"),
        ("score", "green"),
        ("conf", "green"),
        ("category", "magenta"),
        ("memory", ""),
    ):
        if column == "id":
            add_id_column(table, style=style)
        else:  # on a narrow terminal these give way (fold), the id does not
            table.add_column(column, style=style, overflow="fold", no_wrap=column == "#")
    for rank, result in enumerate(results, start=1):
        conf = f"{result.confidence:.2f}" + (" weak" if result.weak else "")
        table.add_row(str(rank), short_id(result.id), f"{result.score:.3f}", conf, result.category,
                      shown(result.snippet), style="dim" if result.weak else None)
    console.print(table)
    if explain:
        _print_explain(results, full=explain_full)


def _print_explain(results: list[Any], *, full: bool) -> None:
    import json

    from cems_cli.cli.explain import compact

    for rank, result in enumerate(results, start=1):
        chunk = result.explain.get("chunk_index")
        weak = ", weak" if result.weak else ""
        head = (f"#{rank} {short_id(result.id)}  score {result.score:.3f}, "
                f"confidence {result.confidence:.2f}{weak}" + (f", chunk {chunk}" if chunk else ""))
        console.print(head, style="bold", markup=False, highlight=False, soft_wrap=True)
        if full:
            console.print(json.dumps(result.explain, indent=2, default=str), markup=False)
            continue
        width = max((len(name) for name, _ in compact(result.explain)), default=0)
        for name, text in compact(result.explain):
            # soft_wrap: one line of output per factor (the terminal may fold it, nothing inserts breaks);
            # entity names come from stored text: literal (markup off), escapes shown by the console.
            console.print(f"  {name:<{width}}  {text}", markup=False, highlight=False, soft_wrap=True)


def list_(
    category: str = typer.Option(None, "--category", "-c", help=CATEGORY_HELP),
    scope: str = typer.Option("both", "--scope", help="personal, shared or both"),
    project: str = typer.Option(None, "--project", "-p", help="Only memories of this project."),
    limit: int = typer.Option(50, "--limit", "-n", help=f"How many memories (at most {LIST_LIMIT_MAX:,})."),
    as_json: bool = JsonOption,
) -> None:
    """List memories, pinned first, newest first."""
    from cems_cli.project import normalize_project

    check_range("--limit", limit, 1, LIST_LIMIT_MAX)
    with service() as svc:
        records = svc.list_memories(
            scope=scope,
            category=category,
            limit=limit,
            project=normalize_project(project) if project else None,
        )
    if as_json:
        emit_json({"memories": [r.to_json() for r in records]})
        return
    from rich.table import Table

    table = Table(title=f"{len(records)} memories")
    add_id_column(table)
    for column in ("category", "scope", "created", "memory"):
        table.add_column(column, overflow="fold")
    for r in records:
        flat = " ".join(r.content.split())
        text = ("📌 " if r.pinned else "") + (flat if len(flat) <= 120 else flat[:119] + "…")
        table.add_row(short_id(r.id), r.category, r.scope, r.created_at.strftime("%Y-%m-%d"), shown(text))
    console.print(table)


def show(
    memory_id: str = typer.Argument(..., help="Memory id (or a unique prefix)."),
    history: bool = typer.Option(False, "--history", help="Also list its edits, newest first, with the "
                                 "text before each change of text."),
    as_json: bool = JsonOption,
) -> None:
    """Show one memory with all its metadata, and how often it was edited."""
    with service() as svc:
        record = svc.get(memory_id)
        edits = svc.history(record.id).edits
    data = record.to_json()
    if as_json:
        emit_json({**data, "edits": [e.to_json() for e in edits]} if history else data)
        return
    from rich.table import Table

    table = Table(show_header=False, title=f"Memory {record.id}")
    table.add_column("field", style="bold", no_wrap=True)
    # Wide enough for a whole id (a uuid: 36 characters), so ids and dates are not folded.
    table.add_column("value", overflow="fold", min_width=len(record.id))
    for key, value in data.items():
        if key != "content":
            table.add_row(key, shown(plain_value(value)))
    if edits:
        table.add_row("edits", shown(_edits_line(edits)))
    console.print(table)
    console.print(record.content, markup=False)
    if history:
        for edit in edits:
            console.print(shown(f"\n{edit.at:%Y-%m-%d %H:%M} {edit.actor}: {', '.join(edit.fields)}"))
            if edit.old_text is not None:
                console.print(shown("text before:\n" + edit.old_text))


def _edits_line(edits: list[Any]) -> str:
    """`edited 3 times, last 2026-05-01 14:03 by alice (text)`; past the kept twenty, "at least"."""
    from cems_cli.defaults import EDITS_KEPT

    last = edits[0]
    count = f"at least {len(edits)}" if len(edits) >= EDITS_KEPT else str(len(edits))
    times = "time" if len(edits) == 1 else "times"
    fields = ", ".join(last.fields)
    return (f"edited {count} {times}, last {last.at:%Y-%m-%d %H:%M} by {last.actor} ({fields})"
            " — `cems show --history` lists them")


def forget(
    memory_ids: list[str] | None = typer.Argument(
        None,
        metavar="ID...",
        help="Memory ids (or unique prefixes): all of them are forgotten, or none if one is unknown.",
        show_default=False,
    ),
    tag: str | None = typer.Option(None, "--tag", help="Forget your live memories with this tag."),
    source: str | None = typer.Option(
        None,
        "--source",
        help="Forget your live memories from this source, as stored: manual, import, session, observer, "
        "tool, …",
    ),
    yes: bool = typer.Option(False, "--yes", "-y", help="Forget what --tag/--source selects without asking."),
    purge: bool = typer.Option(False, "--purge", help="Delete for good instead of archiving."),
    as_json: bool = JsonOption,
) -> None:
    """Forget memories: archived (excluded from search) or, with --purge, deleted.

    Give ids, or select your own live memories with --tag and/or --source: the count is shown, then confirmed.
    --yes skips the question; without a terminal to ask on, it is required.
    """
    ids = [memory_id for memory_id in memory_ids or [] if memory_id.strip()]
    tag = tag.strip() if tag is not None else None
    source = source.strip() if source is not None else None
    if tag == "" or source == "":
        fail("--tag and --source need a value")
    selecting = tag is not None or source is not None
    if ids and selecting:
        fail("give memory ids or --tag/--source, not both")
    if not ids and not selecting:
        fail("give at least one memory id, or --tag/--source to select memories")
    with service() as svc:
        if ids:
            forgotten = svc.forget(ids, purge=purge)
        else:
            selected = svc.ids_where(tag=tag, source=source)
            if selected and not yes:
                _confirm_forget(len(selected), _selection(tag, source), purge)
            forgotten = svc.forget_ids(selected, purge=purge)
    if as_json:
        payload: dict[str, Any] = {"forgotten": forgotten, "archived": not purge, "purged": purge}
        if len(ids) == 1:  # the single-id form's field, which scripts written for it read
            payload = {"id": forgotten[0], **payload}
        emit_json(payload)
        return
    verb = "Purged" if purge else "Forgot"
    if len(ids) == 1:
        console.print(f"{verb} {forgotten[0]}")
    elif not ids and not forgotten:
        console.print(f"No memories {_selection(tag, source)}.")
    else:
        console.print(f"{verb} {_count(len(forgotten))}.")


def _count(n: int) -> str:
    return f"{n:,} memory" if n == 1 else f"{n:,} memories"


def _selection(tag: str | None, source: str | None) -> str:
    parts = ([f"tagged {tag!r}"] if tag is not None else []) + (
        [f"from source {source!r}"] if source is not None else []
    )
    return " and ".join(parts)


def _confirm_forget(count: int, selection: str, purge: bool) -> None:
    """Filters can select far more than the user expects: show the count and ask, or refuse without a
    terminal (a script must say --yes)."""
    action = "purge (delete for good)" if purge else "forget"
    if not stdin_is_terminal():
        fail(f"this would {action} {_count(count)} {selection}: pass --yes to confirm (no terminal to ask)")
    if not confirm(f"{action.capitalize()} {_count(count)} {selection}?"):
        fail("nothing was forgotten", 1)


def pin(
    memory_id: str = typer.Argument(..., help="Memory id (or a unique prefix)."),
    reason: str = typer.Option(None, "--reason", help="Why it matters."),
    pin_category: str = typer.Option(
        None, "--pin-category", help="guideline, convention, architecture, standard or documentation"
    ),
    unpin: bool = typer.Option(False, "--unpin", help="Remove the pin."),
    as_json: bool = JsonOption,
) -> None:
    """Pin a memory: never decays, ranks a little higher, included in session profiles."""
    with service() as svc:
        pinned = svc.unpin(memory_id) if unpin else svc.pin(memory_id, reason=reason, category=pin_category)
    emit(as_json, {"id": pinned, "pinned": not unpin, "reason": reason, "pin_category": pin_category},
         f"{'Unpinned' if unpin else 'Pinned'} {pinned}")


def share(
    id_or_text: str = typer.Argument(..., help="A memory id to share, or new text (- for stdin)."),
    team: str = typer.Option(None, "--team", help="Team to share with (default CEMS_TEAM)."),
    as_json: bool = JsonOption,
) -> None:
    """Share a memory with your team (a shared-scope copy every member can find)."""
    value = _read_text(id_or_text)
    with service() as svc:
        text = value.decode("utf-8", errors="replace") if isinstance(value, bytes) else value
        memory_id, created = svc.share(text, team=team)
        team_name = team or svc.settings.team
    emit(as_json, {"id": memory_id, "created": created, "team": team_name, "scope": "shared"},
         f"{memory_id} shared with team {team_name}" + ("" if created else " (already shared)"), markup=False)


def register(app: typer.Typer) -> None:
    app.command()(remember)
    app.command()(search)
    app.command("list")(list_)
    app.command()(show)
    app.command()(forget)
    app.command()(pin)
    app.command()(share)

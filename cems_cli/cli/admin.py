"""Administration: status, the embedded server (db), reindex, and the demo that `make run` shows."""

from __future__ import annotations

import typer

from cems_cli.cli.common import JsonOption, check_range, console, emit, emit_json, fail, service

db_app = typer.Typer(help="The embedded PostgreSQL server.", no_args_is_help=True)
admin_app = typer.Typer(
    help="A team server (CEMS_DATABASE_URL as its administrator): schema, members' roles, quotas.",
    no_args_is_help=True,
)


def _server_state() -> dict:
    from cems_cli.api import database_status

    return database_status()


@db_app.command("status")
def db_status(as_json: bool = JsonOption) -> None:
    """Is the embedded server running, where, and how big is it."""
    info = _server_state()
    if as_json:
        emit_json(info)
        return
    if not info["embedded"]:
        console.print(f"Using {info['location']} (CEMS_DATABASE_URL); no embedded server.")
    elif info["running"]:
        console.print(f"running  pid {info['pid']}  data {info['location']}  ({_size(info['size_bytes'])})")
    else:
        console.print(f"stopped  data {info['location']}")


@db_app.command("start")
def db_start(as_json: bool = JsonOption) -> None:
    """Start the embedded server (commands start it on demand anyway)."""
    from cems_cli.config import get_settings
    from cems_cli.paths import pgdata_path
    from cems_cli.store.embedded import ensure_server

    settings = get_settings()
    if settings.database_url:
        fail("CEMS_DATABASE_URL is set: there is no embedded server to start")
    state = ensure_server(pgdata_path(settings.home))
    emit(as_json, {"running": True, "pid": state.pid}, f"running  pid {state.pid}")


@db_app.command("stop")
def db_stop(as_json: bool = JsonOption) -> None:
    """Stop the embedded server."""
    from cems_cli.config import get_settings
    from cems_cli.paths import pgdata_path
    from cems_cli.server.daemon import stop_server as stop_search_server
    from cems_cli.store.embedded import stop_server

    settings = get_settings()
    if settings.database_url:
        fail("CEMS_DATABASE_URL is set: there is no embedded server to stop")
    # The warm search server holds a connection to this database and would only fail from now on.
    search_server_stopped = stop_search_server(settings.home)
    was_running = stop_server(pgdata_path(settings.home))
    if as_json:
        emit_json({"stopped": was_running, "running": False, "search_server_stopped": search_server_stopped})
    else:
        console.print("stopped" if was_running else "not running")
        if search_server_stopped:
            console.print("stopped the search server (cems serve) too")


def status(as_json: bool = JsonOption) -> None:
    """Counts by category and scope, where the data lives, the model, and the server state."""
    with service() as svc:
        settings = svc.settings
        found = svc.status().to_json()
        info = {
            **{key: found[key] for key in ("user", "team", "project", "home", "embedding", "llm")},
            "database": _server_state(),
            "counts": found["counts"],
            "total": found["total"],
            "memory": {**found["memory"], "search_server": _search_server_memory(settings.home)},
        }
    if as_json:
        emit_json(info)
        return
    from rich.table import Table

    table = Table(
        title=f"CEMS — {info['total']} memories for {settings.user}"
        + (f" (team {settings.team})" if settings.team else "")
    )
    table.add_column("scope")
    table.add_column("category")
    table.add_column("count", justify="right")
    for entry in info["counts"]:
        table.add_row(entry["scope"], entry["category"], str(entry["count"]))
    console.print(table)
    db = info["database"]
    where = db["location"] + (f" ({_size(db['size_bytes'])}, pid {db['pid']})" if db["embedded"] else "")
    console.print(f"database  {where}")
    console.print(
        f"model     {settings.embedding_backend}: {settings.resolved_embedding_model} "
        f"({settings.resolved_embedding_dim} dims)"
    )
    console.print(f"memory    {_memory_line(info['memory'])}")
    console.print(f"project   {info['project']}")
    console.print(
        f"llm       {'configured: ' + settings.llm_model if settings.llm_configured else 'none (offline)'}"
    )


def reindex(as_json: bool = JsonOption) -> None:
    """Re-embed every memory with the configured embedding model."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    from cems_cli.api import reindex
    from cems_cli.config import get_settings

    settings = get_settings()
    with Progress(
        TextColumn("re-embedding"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=console,
        disable=as_json,
        transient=False,
    ) as bar:
        task = bar.add_task("reindex", total=None)
        report = reindex(settings, progress=lambda done, total: bar.update(task, completed=done, total=total))
    emit(as_json, report.to_json(),
         f"Re-embedded {report.chunks} chunks with {report.model} ({report.dim} dims)")


@admin_app.command("init")
def admin_init(as_json: bool = JsonOption) -> None:
    """Prepare the database of CEMS_DATABASE_URL: the vector extension, every migration, the group roles
    cems_app (no superuser, no BYPASSRLS) and cems_admin with their grants, the row-level security
    policies."""
    from cems_cli.api import init_server
    from cems_cli.config import get_settings

    report = init_server(get_settings())
    if as_json:
        emit_json(report)
        return
    console.print(
        f"database {report['database']} ready: schema version {report['schema_version']}, pgvector "
        f"{report['vector']}, application role {report['app_role']}, administrators {report['admin_role']}",
        markup=False,
    )
    for note in report["notes"]:
        console.print(f"note: {note}", markup=False)


@admin_app.command("grant")
def admin_grant(
    role: str = typer.Argument(..., help="The member's login role."),
    user: str = typer.Option(None, "--user", help="The CEMS user the role acts as (default: its name)."),
    create: bool = typer.Option(False, "--create", help="Create the role (LOGIN, no superuser) if missing."),
    password_stdin: bool = typer.Option(False, "--password-stdin",
                                        help="Set the role's password from the first line of stdin (hashed "
                                        "with SCRAM-SHA-256 here: the server never sees it in clear)."),
    admin: bool = typer.Option(False, "--admin", help="Also a CEMS administrator (cems_admin)."),
    as_json: bool = JsonOption,
) -> None:
    """Let a database role use CEMS on this server: member of cems_app, optionally mapped to a CEMS user."""
    import sys

    from cems_cli.api import grant_role
    from cems_cli.config import get_settings

    password = sys.stdin.readline().rstrip("\r\n") if password_stdin else None
    report = grant_role(get_settings(), role, user=user, create=create, password=password, admin=admin)
    if as_json:
        emit_json(report)
        return
    verb = "created and granted" if report["created"] else "granted"
    console.print(f"{verb} {report['role']} (CEMS user {report['user']})"
                  + (", with a new password" if report["password_set"] else "")
                  + (", administrator" if report["admin"] else ""), markup=False)
    if not report["can_login"]:
        console.print(f"note: {report['role']} cannot log in (ALTER ROLE … LOGIN)", markup=False)


@admin_app.command("quota")
def admin_quota(
    user: str = typer.Argument(None, help="A user or role; '*' is everyone's default. Omitted: list quotas."),
    memories: int = typer.Option(None, "--memories", help="Most live memories the user may store."),
    searches: int = typer.Option(None, "--searches-per-minute", help="Most searches a minute."),
    clear: bool = typer.Option(False, "--clear", help="Remove the user's quota."),
    as_json: bool = JsonOption,
) -> None:
    """Per-user limits on a shared server, checked before any embedding (administrators set them)."""
    from cems_cli.api import list_quotas, set_quota
    from cems_cli.config import get_settings

    check_range("--memories", memories, 0, 2**31 - 1)
    check_range("--searches-per-minute", searches, 0, 2**31 - 1)
    settings = get_settings()
    if user is None:
        if memories is not None or searches is not None or clear:
            fail("name the user (or '*') whose quota to set")
        found = list_quotas(settings)
    else:
        if clear and (memories is not None or searches is not None):
            fail("--clear removes the quota: give no limit with it")
        if not clear and memories is None and searches is None:
            fail("give --memories and/or --searches-per-minute (or --clear)")
        found = set_quota(settings, user, max_memories=memories, searches_per_minute=searches)
    if as_json:
        emit_json({"quotas": found})
        return
    for quota in found:
        console.print(f"{quota['user']}: memories {quota['max_memories'] or 'unlimited'}, searches a minute "
                      f"{quota['searches_per_minute'] or 'unlimited'}", markup=False)


@admin_app.command("watchdog")
def admin_watchdog(
    idle: float = typer.Option(60.0, "--idle-in-transaction", help="End a member's session idle in a "
                               "transaction for longer than this many seconds."),
    statement: float = typer.Option(300.0, "--statement", help="End a member's session running one "
                                    "statement for longer than this many seconds."),
    interval: float = typer.Option(5.0, "--interval", help="Seconds between passes."),
    once: bool = typer.Option(False, "--once", help="One pass, then exit."),
    as_json: bool = JsonOption,
) -> None:
    """End members' sessions that hold a team server up: idle in a transaction (locks held, vacuum and
    migrations waiting) or stuck in one statement. A member may switch off the timeouts their role is given;
    run this from the server's administrator login (it needs the right to signal members' sessions)."""
    import time

    from cems_cli.api import end_stuck_sessions
    from cems_cli.config import get_settings

    check_range("--idle-in-transaction", idle, 1, 86_400)
    check_range("--statement", statement, 1, 86_400)
    check_range("--interval", interval, 0.1, 3_600)
    if as_json and not once:
        fail("--json prints one document: give it with --once")
    settings = get_settings()
    ended_all: list[dict] = []
    try:
        while True:
            ended = end_stuck_sessions(settings, idle_seconds=idle, statement_seconds=statement)
            refused = [e for e in ended if not e["ended"]]
            if refused:
                fail(f"not allowed to end the session of {refused[0]['role']} (pid {refused[0]['pid']}): "
                     "run the watchdog as a superuser or a role with pg_signal_backend")
            ended_all += ended
            if not as_json:
                for e in ended:
                    console.print(f"ended {e['role']}'s session (pid {e['pid']}): {e['state']} for "
                                  f"{e['seconds']:.0f} s", markup=False)
            if once:
                break
            time.sleep(interval)
    except KeyboardInterrupt:
        pass
    if as_json:
        emit_json({"ended": ended_all})


def _search_server_memory(home) -> dict | None:
    """The warm search server's resident memory, or None when none runs."""
    from cems_cli.plumbing.procinfo import resident_bytes
    from cems_cli.server.daemon import server_pid

    pid = server_pid(home)
    return None if pid is None else {"pid": pid, "rss_bytes": resident_bytes(pid)}


def _memory_line(memory: dict) -> str:
    """"page cache 512.0 MB for 1.2 GB searched (tables …, HNSW …, full text …); model 22.0 MB; …"."""
    cache = memory["page_cache"]
    parts = []
    if cache["tables_bytes"] is not None:
        searched = cache["tables_bytes"] + cache["hnsw_bytes"] + cache["gin_bytes"]
        buffers = _size(cache["shared_buffers_bytes"]) if cache["shared_buffers_bytes"] else "?"
        parts.append(f"page cache {buffers} for {_size(searched)} searched (tables "
                     f"{_size(cache['tables_bytes'])}, HNSW {_size(cache['hnsw_bytes'])}, full text "
                     f"{_size(cache['gin_bytes'])})")
    if memory.get("model_bytes"):
        parts.append(f"model {_size(memory['model_bytes'])}")
    server = memory.get("search_server")
    if server is None:
        parts.append("search server not running")
    elif server["rss_bytes"] is not None:
        parts.append(f"search server {_size(server['rss_bytes'])} resident")
    return "; ".join(parts)


def _size(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"


def register(app: typer.Typer) -> None:
    app.command()(status)
    app.command()(reindex)
    app.add_typer(db_app, name="db")
    app.add_typer(admin_app, name="admin")
    from cems_cli.cli import demo

    app.command()(demo.demo)

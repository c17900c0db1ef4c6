"""`cems observe`: turn Claude Code sessions into memories by watching their transcripts."""

from __future__ import annotations

import logging
from typing import Any

import typer

from cems_cli.cli.common import JsonOption, console, emit, emit_json, fail, say

observe_app = typer.Typer(invoke_without_command=True)


def _settings() -> tuple[Any, Any]:
    from cems_cli.capture.observer_settings import load_observer_settings
    from cems_cli.config import get_settings

    return get_settings(), load_observer_settings()


def _log_to_stderr(level: int) -> None:
    logger = logging.getLogger("cems")
    if not any(getattr(h, "_cems_observer", False) for h in logger.handlers):
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
        handler._cems_observer = True  # type: ignore[attr-defined]
        logger.addHandler(handler)
    logger.setLevel(level)


@observe_app.callback(invoke_without_command=True)
def observe(
    ctx: typer.Context,
    daemon: bool = typer.Option(False, "--daemon", help="Run in the background (pid file in $CEMS_HOME)."),
    once: bool = typer.Option(False, "--once", help="Process what is new, then exit."),
    as_json: bool = JsonOption,
) -> None:
    """Watch Claude Code transcripts (~/.claude/projects) and remember what happens in each session.

    Foreground until Ctrl-C; --daemon runs it in the background; --once processes what is new and exits.

    CEMS_OBSERVER_PATHS sets the folders to watch instead, separated by ':' (os.pathsep) or ','. A session
    whose transcript stays unchanged for CEMS_OBSERVER_IDLE_SECONDS (default 300) is finalized.

    Never observed, so that CEMS never learns from its own LLM calls:

    transcripts whose working directory is inside CEMS_HOME, or with a prompt containing <cems:no-observe/>.
    """
    if ctx.invoked_subcommand is not None:
        return
    if daemon and once:
        fail("--daemon and --once cannot be used together")
    from cems_cli.capture import observer_daemon

    settings, observer_settings = _settings()
    if daemon:
        try:
            pid = observer_daemon.start_detached(settings.home)
        except (observer_daemon.AlreadyRunning, observer_daemon.DaemonError) as error:
            fail(str(error), 1)
        log_path = settings.home / observer_daemon.LOG_FILE
        emit(as_json, {"started": True, "pid": pid, "log": str(log_path)},
             f"observer started (pid {pid}); log: {log_path}", markup=False)
        return
    _log_to_stderr(logging.WARNING if once else logging.INFO)
    try:
        report = observer_daemon.run(settings, observer_settings, once=once)
    except observer_daemon.AlreadyRunning as error:
        fail(str(error), 1)
    if as_json:
        emit_json(report.to_json())
    elif once:
        console.print(
            f"read {report.bytes_read:,} bytes ({report.lines:,} lines, {report.malformed} malformed) "
            f"from {report.files_read} of {report.files} transcripts; stored {report.observations} "
            f"observations"
            + (
                f", {report.backlog} chunks queued and {report.extracted} extractions"
                if report.backlog or report.extracted
                else ""
            ),
            markup=False,
        )
    for message in report.errors[:5]:  # stderr: with --json, stdout holds one JSON document (errors included)
        say(f"error: {message}", err=True)
    if report.errors:
        raise typer.Exit(1)


@observe_app.command("status")
def status(as_json: bool = JsonOption) -> None:
    """Is the observer running, what it watches, how far behind it is, and its last error."""
    from cems_cli.capture import observer_daemon

    settings, observer_settings = _settings()
    info = observer_daemon.status(settings, observer_settings)
    if as_json:
        emit_json(info)
        return
    state = f"running (pid {info['pid']})" if info["running"] else "not running"
    lines = [
        f"observer: {state}",
        f"watching: {', '.join(info['roots'])}"
        + ("" if info["roots_from"] == "daemon" else " (from this shell's settings)"),
        f"idle: a session quiet for {info['idle_seconds']:g} s is finalized (CEMS_OBSERVER_IDLE_SECONDS)",
        f"files: {info['files_watched']} transcripts, {info['bytes_behind']:,} bytes behind, "
        f"{info['malformed_lines']} malformed lines skipped",
        f"pending: {info['open_chunks']} open chunks, {info['backlog_chunks']} chunks awaiting extraction "
        f"({'LLM' if info['llm'] else 'digests, no LLM configured'})",
        f"observations stored: {info['observations']}",
        *_catching_up(info.get("catching_up")),
        f"last run: {info['last_run_at'] or 'never'}",
        f"last error: {info['last_error'] or 'none'}"
        + (f" ({info['last_error_at']})" if info["last_error"] else ""),
    ]
    for line in lines:
        say(line)


def _catching_up(figures: dict | None) -> list[str]:
    if not figures:
        return []
    return [f"catching up: {figures['files_done']:,} of {figures['files_total']:,} transcripts in "
            f"{figures['seconds']:,.0f} s ({figures['files_per_second']:,.1f} files/s, "
            f"{figures['bytes_per_second'] / 1e6:,.1f} MB/s), about {figures['seconds_left']:,.0f} s left"]


@observe_app.command("stop")
def stop(as_json: bool = JsonOption) -> None:
    """Stop the running observer (SIGTERM, then SIGKILL after 15 s: safe, every commit is atomic)."""
    from cems_cli.capture import observer_daemon
    from cems_cli.config import get_settings

    result = observer_daemon.stop_running(get_settings().home)
    if as_json:
        emit_json(result)
    elif result["stopped"]:
        console.print(
            f"stopped (pid {result['pid']})" + (" with SIGKILL" if result.get("forced") else ""), markup=False
        )
    else:
        console.print("not running", markup=False)


def register(app: typer.Typer) -> None:
    app.add_typer(observe_app, name="observe")

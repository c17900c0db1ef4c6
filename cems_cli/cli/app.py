"""Entry point: `cems` → this app. Heavy imports happen inside commands, not here."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import Any

import typer
from typer.main import get_command

from cems_cli.cli import (
    admin,
    audit,
    evaluation,
    hooks,
    maintain,
    mcp,
    memory,
    observer,
    plugin,
    rules,
    settings,
    summaries,
    team,
    transfer,
    ui,
    uninstall,
)
from cems_cli.cli.common import use_tidy_help

app = typer.Typer(
    name="cems",
    help="CEMS: long-term memory and guard rails for AI coding agents.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _print_version(requested: bool) -> None:
    if requested:
        from cems_cli.cli.common import cems_version

        sys.stdout.write(f"cems {cems_version()}\n")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False,
        "--version",
        "-V",
        callback=_print_version,
        is_eager=True,  # answered before any command is looked up or run
        help="Print the version and exit.",
    ),
) -> None:
    """CEMS: long-term memory and guard rails for AI coding agents."""


for group in (memory, rules, settings, transfer, admin, team, audit, maintain, summaries, hooks, mcp, plugin,
              observer, evaluation, uninstall, ui):
    group.register(app)
use_tidy_help(app)


@functools.cache
def _command() -> Callable[..., Any]:
    """The click command tree, built once per process: `app(...)` rebuilds it (every command's parameters
    read back from its signature) on each call, about 0.1 s that a program running several commands
    in-process (the test suite runs thousands) would pay every time. Built from `app` after every group
    registered above; calling it is what `app(...)` does, with pretty exceptions off."""
    return get_command(app)


def main(argv: list[str] | None = None) -> None:
    import os

    from cems_cli.paths import PRIVATE_UMASK

    # Everything this command creates (and the daemons it starts, which inherit the umask) is owner-only.
    # Restored on the way out for callers that run commands in-process.
    previous_umask = os.umask(PRIVATE_UMASK)
    try:
        _run(argv)
    finally:
        os.umask(previous_umask)


def _run(argv: list[str] | None) -> None:
    from cems_cli.cli.common import describe_error, err_console, error_line, say

    try:
        _command()(args=argv)
    except SystemExit:
        raise
    except KeyboardInterrupt:
        err_console.print("interrupted")
        sys.exit(130)
    except Exception as error:  # noqa: BLE001 - every failure must end as one line, not a traceback
        described = describe_error(error) or _refused(error)
        if described is None:
            import os

            if os.environ.get("CEMS_DEBUG"):
                raise
            say(f"error: internal error: {type(error).__name__}: {error_line(str(error))}", err=True)
            err_console.print("(set CEMS_DEBUG=1 for the traceback)", markup=False)
            sys.exit(1)
        message, code = described
        say(f"error: {error_line(message)}", err=True)
        sys.exit(code)


def _refused(error: BaseException) -> tuple[str, int] | None:
    """A write the team server's policies refused (row-level security, a quota) that no earlier check
    caught: the user's to fix, so one line and exit code 2, not an internal error."""
    import psycopg

    if not isinstance(error, psycopg.Error):
        return None
    from cems_cli.api import refusal

    reason = refusal(error)
    return (reason, 2) if reason else None


if __name__ == "__main__":
    main()

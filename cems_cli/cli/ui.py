"""`cems ui`: the local web viewer (cems_cli/ui/), a thin command over it. Needs `pip install 'cems[ui]'`."""

from __future__ import annotations

import typer

from cems_cli.cli.common import JsonOption, check_range, emit_json, err_console, fail, service

INSTALL_HINT = "cems ui needs the web extra: pip install 'cems[ui]'"


def ui(
    port: int = typer.Option(None, "--port", help="Port on 127.0.0.1 (default: 10000 + your uid mod 20000)."),
    no_browser: bool = typer.Option(False, "--no-browser", help="Print the address; open no browser."),
    as_json: bool = JsonOption,
) -> None:
    """See and steer your memories in the browser: search, edit, forget, restore, pin, share; sessions, the
    next session's preview, rules, maintenance, team. Local only (127.0.0.1, a token in the printed address);
    stops on Ctrl-C or after CEMS_UI_IDLE_SECONDS (default 1800) without a request."""
    from cems_cli.ui import server

    missing = server.missing_packages()
    if missing:
        fail(f"{INSTALL_HINT} (missing: {', '.join(missing)})", code=1)
    check_range("--port", port, 1, 65535)
    chosen = server.default_port() if port is None else port

    def say(line: str) -> None:
        if as_json and line.startswith("CEMS viewer on "):
            emit_json({"url": line.removeprefix("CEMS viewer on "), "port": chosen})
        elif as_json:
            err_console.print(line, markup=False, highlight=False)
        else:
            typer.echo(line)

    with service() as memory:
        server.serve(memory, port=chosen, browser=not no_browser, say=say)


def register(app: typer.Typer) -> None:
    app.command()(ui)

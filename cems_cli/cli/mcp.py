"""`cems mcp`: the MCP server an agent starts (stdio), or a look at the tools it offers."""

from __future__ import annotations

import typer

from cems_cli.cli.common import JsonOption, cems_version, console, emit_json, err_console, stdin_is_terminal


def mcp(
    list_tools: bool = typer.Option(
        False, "--list-tools", help="Print the tools instead of serving (with --json: their full schemas)."
    ),
    as_json: bool = JsonOption,
) -> None:
    """Serve your memories to an MCP client (Claude Code, …) over stdin/stdout.

    Tools: search, timeline, get, remember, forget, pin, list_recent, rule_add, rule_list, rule_test, status.

    Register it with `cems hooks install --mcp`. The database and the model are opened by the first call.

    While serving, stdout carries the protocol (JSON-RPC, one message a line): --json is for --list-tools.
    """
    if list_tools:
        _print_tools(as_json)
        return
    if stdin_is_terminal():  # someone typed it: say why nothing happens
        err_console.print(
            "cems mcp: serving MCP on stdin/stdout for an MCP client (Ctrl-C to stop)", markup=False
        )
    from cems_cli.mcp.server import serve

    serve()


def _print_tools(as_json: bool) -> None:
    from cems_cli.mcp.server import SERVER_NAME
    from cems_cli.mcp.tools import TOOLS

    if as_json:
        emit_json(
            {
                "server": SERVER_NAME,
                "version": cems_version(),
                "tools": [
                    {
                        "name": spec.name,
                        "title": spec.title,
                        "description": spec.description,
                        "inputSchema": spec.input_schema,  # the MCP wire spelling
                    }
                    for spec in TOOLS
                ],
            }
        )
        return
    from rich.table import Table

    table = Table(title=f"MCP tools (Claude Code names them mcp__{SERVER_NAME}__<tool>)", show_lines=True)
    for column in ("tool", "arguments", "what it does"):
        table.add_column(column, overflow="fold")
    for spec in TOOLS:
        required = set(spec.input_schema.get("required", []))
        arguments = ", ".join(
            name if name in required else f"[{name}]" for name in spec.input_schema.get("properties", {})
        )
        table.add_row(spec.name, arguments, spec.description.split(". ")[0].rstrip(".") + ".")
    console.print(table, markup=False)


def register(app: typer.Typer) -> None:
    app.command("mcp")(mcp)

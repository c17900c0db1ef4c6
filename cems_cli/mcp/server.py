"""The stdio MCP server on the official SDK's low-level `Server`: the schemas are ours, written by hand.

`initialize` and `tools/list` touch neither the database nor the embedding model: the tool catalogue is
static data, and the service (connection, model) is opened by the first `tools/call`. A call runs in a
worker thread, one at a time (each opens its own `Memory`, as a CLI command does), so the event loop keeps
answering pings and cancellations while a search runs. Whatever goes wrong in a call comes back
as a tool error (`isError`) with one line of text; the server itself goes on serving.

While it serves, the SDK points fd 1 at stderr and fd 0 at /dev/null (mcp.server.stdio), so nothing a
library or child process (the embedded PostgreSQL) prints can corrupt the protocol stream.
"""

from __future__ import annotations

import json
from functools import partial
from typing import TYPE_CHECKING, Any, cast

from cems_cli.mcp.tools import BY_NAME, INSTRUCTIONS, TOOLS, ToolSpec

if TYPE_CHECKING:
    from jsonschema.exceptions import ValidationError
    from mcp import types as mcp_types
    from mcp.server.lowlevel import Server

SERVER_NAME = "cems"
_MAX_VALUE_SHOWN = 60  # an argument quoted in an error message is cut here: the message stays one line


class ToolFailure(Exception):
    """A call that cannot be carried out; its message is the one line the client sees."""


# --- arguments -------------------------------------------------------------------------------------------

_validators: dict[str, Any] = {}


def _validator(spec: ToolSpec) -> Any:
    validator = _validators.get(spec.name)
    if validator is None:
        from jsonschema import Draft202012Validator

        validator = _validators[spec.name] = Draft202012Validator(spec.input_schema)
    return validator


def check_arguments(spec: ToolSpec, arguments: dict[str, Any] | None) -> dict[str, Any]:
    """The arguments, checked against the tool's schema, or ToolFailure naming the first problem.

    A null stands for "not given": models often send one for an optional argument they do not use.
    """
    from jsonschema.exceptions import best_match

    args = {key: value for key, value in (arguments or {}).items() if value is not None}
    error = best_match(_validator(spec).iter_errors(args))
    if error is not None:
        raise ToolFailure(f"invalid arguments for {spec.name}: {_describe(error, spec)}")
    return args


_JSON_TYPES = {
    bool: "a boolean",
    int: "an integer",
    float: "a number",
    str: "a string",
    list: "an array",
    dict: "an object",
    type(None): "null",
}


def _shown(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= _MAX_VALUE_SHOWN else text[: _MAX_VALUE_SHOWN - 1] + "…"


def _describe(error: ValidationError, spec: ToolSpec) -> str:
    """One line saying what is wrong, in the caller's terms (jsonschema's own messages quote whole values)."""
    where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path).lstrip(".")
    name = where or "arguments"
    # Set on every error a validator yields; the stubs also allow jsonschema's `Unset` placeholder.
    kind = error.validator
    expected: Any = error.validator_value
    value: Any = error.instance
    if kind == "required":
        missing = [key for key in expected if key not in value]
        return f"missing required argument {missing[0]!r}" if missing else error.message
    if kind == "additionalProperties":
        known = spec.input_schema.get("properties", {})
        extra = sorted(key for key in value if key not in known)
        allowed = ", ".join(known) or "none"
        return f"unknown argument {extra[0]!r} (arguments: {allowed})" if extra else error.message
    if kind == "type":
        wanted = {
            "integer": "an integer",
            "number": "a number",
            "string": "a string",
            "boolean": "a boolean",
            "array": "an array",
            "object": "an object",
        }.get(expected, f"of type {expected}")
        got = _JSON_TYPES.get(type(value), type(value).__name__)
        return f"{name} must be {wanted}, not {got} ({_shown(value)})"
    if kind == "enum":
        return f"{name} must be one of: {', '.join(map(str, expected))} (got {_shown(value)})"
    if kind == "minimum":
        return f"{name} must be at least {expected}"
    if kind == "maximum":
        return f"{name} must be at most {expected}"
    if kind == "minLength":
        if expected == 1:
            return f"{name} must not be empty"
        return f"{name} needs at least {expected} characters"
    if kind == "minItems":
        return f"{name} needs at least {expected} item{'s' if expected != 1 else ''}"
    if kind == "maxItems":
        return f"{name} takes at most {expected} items"
    return f"{name}: {' '.join(error.message.split())[:200]}"


# --- calling ---------------------------------------------------------------------------------------------


def run_tool(name: str, arguments: dict[str, Any] | None) -> dict[str, Any]:
    """Check the arguments and run the tool; ToolFailure (one line) for anything that goes wrong. What it
    returns, or says went wrong, is inert for the agent's context (cems_cli/text/inert.py)."""
    from cems_cli.text.inert import for_model, model_payload

    spec = BY_NAME.get(name)
    if spec is None:
        raise ToolFailure(for_model(f"unknown tool {name!r} (tools: {', '.join(BY_NAME)})"))
    try:
        payload = spec.run(check_arguments(spec, arguments))
    except ToolFailure as failure:
        raise ToolFailure(for_model(str(failure))) from failure
    except Exception as error:  # noqa: BLE001 - every failure is the caller's tool error, never a crash
        raise ToolFailure(for_model(_error_line(error))) from error
    # Everything a tool returns reaches the agent's context: memory text, titles, tags, rule reasons and
    # patterns may all come from a hostile repository, and none may open or close a tag there.
    return cast(dict[str, Any], model_payload(payload))


def _error_line(error: Exception) -> str:
    """The CLI's one-line message for a known failure; type and first line for anything else (a bug)."""
    from cems_cli.api import describe_error, error_line

    described = describe_error(error)
    if described is not None:
        return error_line(described[0])
    return f"internal error: {type(error).__name__}: {error_line(str(error))}"


# --- the server ------------------------------------------------------------------------------------------


def tool_list() -> list[mcp_types.Tool]:
    from mcp import types as mcp_types

    return [
        mcp_types.Tool(
            name=spec.name,
            title=spec.title,
            description=spec.description,
            input_schema=spec.input_schema,
            annotations=mcp_types.ToolAnnotations(
                title=spec.title,
                read_only_hint=spec.read_only,
                destructive_hint=spec.destructive,
                idempotent_hint=spec.idempotent,
                open_world_hint=False,  # the user's own store, nothing beyond it
            ),
        )
        for spec in TOOLS
    ]


def build_server() -> Server[Any]:
    import anyio
    from mcp import types as mcp_types
    from mcp.server.lowlevel import Server

    from cems_cli import installed_version

    tools = tool_list()
    one_at_a_time = anyio.Lock()

    async def list_tools(
        ctx: Any, params: mcp_types.PaginatedRequestParams | None
    ) -> mcp_types.ListToolsResult:
        return mcp_types.ListToolsResult(tools=tools)

    async def call_tool(ctx: Any, params: mcp_types.CallToolRequestParams) -> mcp_types.CallToolResult:
        async with one_at_a_time:
            try:
                payload = await anyio.to_thread.run_sync(partial(run_tool, params.name, params.arguments))
            except ToolFailure as failure:
                message = mcp_types.TextContent(type="text", text=str(failure))
                return mcp_types.CallToolResult(content=[message], is_error=True)
        # The JSON as text for every client, and as structured content for those that read it.
        text = json.dumps(payload, ensure_ascii=False, default=str)
        return mcp_types.CallToolResult(
            content=[mcp_types.TextContent(type="text", text=text)], structured_content=payload
        )

    return Server(
        SERVER_NAME,
        version=installed_version(),
        title="CEMS memory",
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


async def _serve() -> None:
    from mcp.server.stdio import stdio_server

    server = build_server()
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


def serve() -> None:
    """Serve MCP on stdin/stdout until the client closes stdin."""
    import anyio

    anyio.run(_serve)

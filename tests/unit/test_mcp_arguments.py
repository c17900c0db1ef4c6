"""The MCP tools' schemas and argument checks, without a server or a database: every schema is valid JSON
Schema an agent can read, and every bad argument is named in one line that quotes no long value."""

from __future__ import annotations

import pytest
from jsonschema import Draft202012Validator

from cems_cli.mcp.server import ToolFailure, check_arguments, run_tool
from cems_cli.mcp.tools import BY_NAME, TOOLS


@pytest.mark.parametrize("spec", TOOLS, ids=lambda spec: spec.name)
def test_each_schema_is_valid_closed_and_described(spec):
    Draft202012Validator.check_schema(spec.input_schema)
    assert spec.input_schema["type"] == "object" and spec.input_schema["additionalProperties"] is False
    assert set(spec.input_schema.get("required", [])) <= set(spec.input_schema["properties"])
    assert all(prop.get("description") for prop in spec.input_schema["properties"].values())
    assert spec.description.endswith(".") and "\n" not in spec.description


@pytest.mark.parametrize(
    ("tool", "arguments", "message"),
    [
        ("search", {}, "missing required argument 'query'"),
        ("search", {"query": ["a"]}, 'query must be a string, not an array (["a"])'),
        ("search", {"query": "x", "limit": True}, "limit must be an integer, not a boolean (true)"),
        ("search", {"query": "x", "limit": 51}, "limit must be at most 50"),
        ("search", {"query": ""}, "query must not be empty"),
        (
            "search",
            {"query": "x", "scope": "team"},
            'scope must be one of: personal, shared, both (got "team")',
        ),
        ("remember", {"text": "x", "tags": ["ok", 3]}, "tags[1] must be a string, not an integer (3)"),
        ("remember", {"text": "x", "tags": ["t"] * 21}, "tags takes at most 20 items"),
        ("rule_test", {"tool": "Bash"}, "missing required argument 'input'"),
        ("forget", {"id": "x", "purge": True}, "unknown argument 'purge' (arguments: id)"),
        ("status", {"verbose": 1}, "unknown argument 'verbose' (arguments: none)"),
        ("search", {"query": "x", "full": "yes"}, 'full must be a boolean, not a string ("yes")'),
        ("get", {}, "missing required argument 'ids'"),
        ("get", {"ids": []}, "ids needs at least 1 item"),
        ("get", {"ids": ["a"] * 21}, "ids takes at most 20 items"),
        ("get", {"ids": "1a2b3c4d"}, 'ids must be an array, not a string ("1a2b3c4d")'),
        ("get", {"ids": [""]}, "ids[0] must not be empty"),
        ("timeline", {"id": "1a2b", "before": 51}, "before must be at most 50"),
        ("timeline", {"id": "1a2b", "after": -1}, "after must be at least 0"),
        ("timeline", {"session": "ab"}, "session needs at least 4 characters"),
        (
            "timeline",
            {"id": "1a2b", "within": "team"},
            'within must be one of: session, project, all (got "team")',
        ),
    ],
)
def test_bad_arguments_are_named_in_one_line(tool, arguments, message):
    with pytest.raises(ToolFailure) as raised:
        check_arguments(BY_NAME[tool], arguments)
    assert str(raised.value) == f"invalid arguments for {tool}: {message}"


def test_a_long_value_is_cut_in_the_message():
    with pytest.raises(ToolFailure) as raised:
        check_arguments(BY_NAME["search"], {"query": "x", "category": "y" * 500})
    assert len(str(raised.value)) < 250 and "…" in str(raised.value)


def test_null_means_not_given():
    assert check_arguments(BY_NAME["search"], {"query": "x", "limit": None, "project": None}) == {
        "query": "x"
    }


def test_an_unknown_tool_names_the_tools():
    with pytest.raises(ToolFailure, match=r"^unknown tool 'serach' \(tools: search, timeline, get, "):
        run_tool("serach", {"query": "x"})

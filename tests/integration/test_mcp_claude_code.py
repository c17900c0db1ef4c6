"""The real Claude Code CLI (offline, scripted fake model) calling `cems mcp` as an MCP server.

Claude Code names MCP tools `mcp__<server>__<tool>`. By default it defers MCP tools behind its ToolSearch
tool (a model must select a tool before calling it); with ENABLE_TOOL_SEARCH=false they are offered
directly. Both are exercised. The harness is tests/support/claude_code; the test skips, saying why, only
when the pinned CLI cannot be installed.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cems_cli.mcp.register import server_entry
from tests.conftest import cems_subprocess
from tests.support.claude_code import FakeAnthropic, ToolUse, claude_code_or_skip, run_claude

pytestmark = pytest.mark.slow

MEMORY = "Integration tests run against the staging database, never production."


@pytest.fixture(scope="module")
def claude() -> Path:
    return claude_code_or_skip()


def _mcp_config(tmp_path: Path, env: dict[str, str]) -> Path:
    """An --mcp-config file with the entry `cems hooks install --mcp` writes, plus the test's user."""
    entry = server_entry(portable=False, home=Path(env["CEMS_HOME"]))
    entry["env"] = {**entry["env"], **env}
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": {"cems": entry}}))
    return path


def _remember(env: dict[str, str]) -> str:
    proc = cems_subprocess(["remember", MEMORY, "--category", "decisions", "--json"], env)
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    return json.loads(proc.stdout)["id"]


def _offered(model: FakeAnthropic) -> set[str]:
    return {tool["name"] for body in model.message_bodies for tool in body.get("tools") or []}


def test_the_model_calls_search_and_reads_the_memory(claude, env, tmp_path):
    memory_id = _remember(env)
    with FakeAnthropic(command=None) as model:
        model.script(
            ToolUse("mcp__cems__forget", {"id": "no-such-memory"}),  # a tool error: the server lives on
            ToolUse("mcp__cems__search", {"query": "which database do integration tests use?"}),
            ToolUse("mcp__cems__get", {"ids": [memory_id]}),  # progressive recall: the index, then the text
        )
        result = run_claude(
            claude,
            model.root_url,
            home=tmp_path / "home",
            cwd=tmp_path / "work",
            prompt="Where should the integration tests point?",
            args=[
                "--mcp-config",
                str(_mcp_config(tmp_path, env)),
                "--allowedTools",
                "mcp__cems__search,mcp__cems__get,mcp__cems__forget",
            ],
            env={"ENABLE_TOOL_SEARCH": "false"},  # MCP tools offered directly, callable in the first reply
        )
    assert result.returncode == 0, result.stderr[-2000:]
    assert not model.errors, "the fake model crashed:\n" + "\n".join(model.errors)
    assert {"mcp__cems__search", "mcp__cems__remember", "mcp__cems__status"} <= _offered(model)
    forgot, found, got = model.tool_results
    assert forgot.get("is_error") is True and "no memory with id 'no-such-memory'" in json.dumps(forgot)
    assert not found.get("is_error") and not got.get("is_error")
    # The index reached the model's next request with the memory's id; `get` brought its text and where it
    # came from.
    after = next(b for b in model.message_bodies if found["tool_use_id"] in json.dumps(b.get("messages")))
    assert memory_id in json.dumps(after["messages"])
    after = next(b for b in model.message_bodies if got["tool_use_id"] in json.dumps(b.get("messages")))
    sent = json.dumps(after["messages"])
    assert MEMORY in sent and memory_id in sent and "written by hand (project acme/api)" in sent
    assert "done." in result.stdout


def test_with_claude_codes_default_tool_search(claude, env, tmp_path):
    """The default: the model selects the deferred tool through ToolSearch, then calls it."""
    _remember(env)
    with FakeAnthropic(command=None) as model:
        model.script(
            ToolUse("ToolSearch", {"query": "select:mcp__cems__search"}),
            ToolUse("mcp__cems__search", {"query": "staging database"}),
        )
        result = run_claude(
            claude,
            model.root_url,
            home=tmp_path / "home",
            cwd=tmp_path / "work",
            prompt="Where should the integration tests point?",
            args=["--mcp-config", str(_mcp_config(tmp_path, env)), "--allowedTools", "mcp__cems__search"],
        )
    assert result.returncode == 0, result.stderr[-2000:]
    assert not model.errors, "the fake model crashed:\n" + "\n".join(model.errors)
    selected, found = model.tool_results
    assert "mcp__cems__search" in json.dumps(selected)
    assert not found.get("is_error") and MEMORY in json.dumps(found)
    assert MEMORY in json.dumps(model.message_bodies[-1]["messages"])

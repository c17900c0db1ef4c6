"""The real Claude Code CLI, offline, against a scripted fake model (standard library only).

    claude = claude_code_or_skip()                       # npm install, once per machine (cached)
    with FakeAnthropic(command="git status") as model:
        result = run_claude(claude, model.root_url, home=tmp / "home", cwd=tmp / "work",
                            prompt="check the repo", args=["--allowedTools", "Bash"], env=cems_env)
    model.message_bodies                                  # what reached the model
    transcripts(tmp / "home")                             # what the CLI wrote

Hooks come from ``home/.claude/settings.json``; MCP servers from ``args=["--mcp-config", path, ...]``.
"""

from tests.support.claude_code.fake_anthropic import FakeAnthropic, ToolUse, Turn
from tests.support.claude_code.install import VERSION, InstallError, claude_code_or_skip, install_claude_code
from tests.support.claude_code.run import run_claude, transcripts

__all__ = [
    "VERSION",
    "FakeAnthropic",
    "InstallError",
    "ToolUse",
    "Turn",
    "claude_code_or_skip",
    "install_claude_code",
    "run_claude",
    "transcripts",
]

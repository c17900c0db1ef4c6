"""Run the real Claude Code CLI headless against a local fake model, with no other network traffic."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

# Without these the CLI looks up (unreachable) hosts for telemetry, updates and error reports, which
# makes every run several seconds slower and, with a network, would leave this machine.
OFFLINE_ENV = {
    "DISABLE_TELEMETRY": "1",
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_ERROR_REPORTING": "1",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
}


def _inherited_env() -> dict[str, str]:
    """The caller's environment minus what would point the CLI elsewhere: the developer's own API
    settings, the variables a surrounding agent session sets, and proxies (which could capture 127.0.0.1)."""
    dropped = ("ANTHROPIC_", "CLAUDE", "AWS_BEARER_TOKEN_BEDROCK")
    return {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(dropped) and key.lower() not in ("http_proxy", "https_proxy", "all_proxy")
    }


def run_claude(
    binary: Path,
    base_url: str,
    *,
    home: Path,
    cwd: Path,
    prompt: str,
    args: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
    timeout: float = 180,
) -> subprocess.CompletedProcess[str]:
    """``claude -p PROMPT ARGS…`` in ``cwd`` with ``home`` as its HOME (settings, transcripts), talking to
    the model at ``base_url``. ``env`` is added last (hooks see it). Pass what a run needs in ``args``:
    ``--allowedTools Bash`` (as root, ``--dangerously-skip-permissions`` is refused), ``--mcp-config …``."""
    runtime = home / ".runtime"  # the CLI's scratch files stay in this run's folder, not the shared /tmp
    for folder in (cwd, runtime / "tmp", runtime / "xdg"):
        folder.mkdir(parents=True, exist_ok=True)
    (runtime / "xdg").chmod(0o700)  # XDG_RUNTIME_DIR must be private
    full_env = {
        **_inherited_env(),
        **OFFLINE_ENV,
        "HOME": str(home),
        "ANTHROPIC_BASE_URL": base_url,
        "ANTHROPIC_API_KEY": "sk-ant-fake",
        "NO_PROXY": "127.0.0.1,localhost",
        "TMPDIR": str(runtime / "tmp"),
        "CLAUDE_CODE_TMPDIR": str(runtime / "tmp"),
        "XDG_RUNTIME_DIR": str(runtime / "xdg"),
        **(env or {}),
    }
    return subprocess.run(
        [str(binary), "-p", prompt, *args],
        cwd=cwd,
        env=full_env,
        stdin=subprocess.DEVNULL,  # with a terminal or pipe left open, -p would wait for more input
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def transcripts(home: Path) -> list[Path]:
    """The session transcripts the CLI wrote: ``~/.claude/projects/<cwd, / as ->/<session id>.jsonl``."""
    return sorted((home / ".claude" / "projects").glob("*/*.jsonl"))

"""The real Claude Code CLI (offline, against a scripted fake model) with CEMS's hooks installed.

Uses the harness in ../shared/tools/claude-code-e2e when it is present; skipped otherwise (or if the CLI
cannot be installed from the npm registry).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import REPO, cems_subprocess

TOOLS = REPO.parent / "shared" / "tools" / "claude-code-e2e"
pytestmark = pytest.mark.slow


def _claude_bin(base: Path) -> Path:
    return base / "node" / "node_modules" / ".bin" / "claude"


@pytest.fixture(scope="module")
def claude_dir(tmp_path_factory) -> Path:
    if not (TOOLS / "run_claude.sh").exists() or shutil.which("npm") is None:
        pytest.skip("Claude Code e2e harness or npm not available")
    base = Path(os.environ.get("CC_E2E_DIR", "/tmp/claude-code-e2e"))
    if not _claude_bin(base).exists():
        proc = subprocess.run(
            ["bash", str(TOOLS / "install.sh")],
            env={**os.environ, "CC_E2E_DIR": str(base)},
            capture_output=True,
            timeout=600,
        )
        if proc.returncode != 0 or not _claude_bin(base).exists():
            pytest.skip("could not install the Claude Code CLI")
    return base


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _run_claude(claude_dir: Path, tmp: Path, env: dict[str, str], prompt: str, command: str) -> list[dict]:
    port = _free_port()
    log = tmp / "requests.jsonl"
    fake = subprocess.Popen(
        [
            sys.executable,
            str(TOOLS / "fake_anthropic.py"),
            "--port",
            str(port),
            "--log",
            str(log),
            "--command",
            command,
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        for _ in range(100):
            with socket.socket() as sock:
                if sock.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.05)
        proc = subprocess.run(
            [
                "bash",
                str(TOOLS / "run_claude.sh"),
                str(tmp / "home"),
                str(tmp / "work"),
                str(port),
                "--allowedTools",
                "Bash",
            ],
            env={**os.environ, **env, "CC_E2E_DIR": str(claude_dir), "PROMPT": prompt},
            capture_output=True,
            timeout=180,
        )
        assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    finally:
        fake.terminate()
        fake.wait(10)
    return [json.loads(line) for line in log.read_text().splitlines() if line.strip()]


def test_rule_blocks_and_memories_reach_the_model(claude_dir, env, tmp_path):
    settings = tmp_path / "home" / ".claude" / "settings.json"
    assert cems_subprocess(["hooks", "install", "--settings", str(settings)], env).returncode == 0
    assert (
        cems_subprocess(
            ["rule", "add", "Bash: git push --force* — force pushes rewrite shared history"], env
        ).returncode
        == 0
    )
    assert (
        cems_subprocess(
            ["remember", "Release branches are cut from main every Tuesday.", "--category", "context"], env
        ).returncode
        == 0
    )
    try:
        requests = _run_claude(
            claude_dir, tmp_path, env, "push my branch to the release branch", "git push --force origin main"
        )
    finally:
        from cems_cli.server.daemon import stop_server

        stop_server(Path(env["CEMS_HOME"]))
    sent = json.dumps(requests)
    assert "<memory-recall>" in sent and "Release branches are cut from main every Tuesday." in sent
    assert "force pushes rewrite shared history" in sent  # the deny reason came back as the tool result
    transcripts = list((tmp_path / "home" / ".claude" / "projects").glob("*/*.jsonl"))
    assert transcripts, "Claude Code wrote no transcript"

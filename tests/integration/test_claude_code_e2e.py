"""The real Claude Code CLI (offline, against a scripted fake model) with CEMS's hooks installed.

The harness is tests/support/claude_code: the pinned CLI is installed from the npm registry once per
machine (cached); the test skips, saying why, only when npm is missing or that install fails.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cems_cli.server.client import call_or_start
from tests.conftest import cems_subprocess
from tests.support.claude_code import FakeAnthropic, claude_code_or_skip, run_claude, transcripts
from tests.support.claude_code.capture import captured_turns

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def claude() -> Path:
    return claude_code_or_skip()


def _cems(args: list[str], env: dict[str, str]) -> None:
    proc = cems_subprocess(args, env)
    assert proc.returncode == 0, f"cems {' '.join(args)}: {proc.stderr.decode()[-2000:]}"


def test_rule_blocks_and_memories_reach_the_model(claude, env, tmp_path):
    home = tmp_path / "home"
    _cems(["hooks", "install", "--settings", str(home / ".claude" / "settings.json")], env)
    _cems(["rule", "add", "Bash: git push --force* — force pushes rewrite shared history"], env)
    _cems(["remember", "Release branches are cut from main every Tuesday.", "--category", "context"], env)
    with FakeAnthropic(command="git push --force origin main") as model:
        try:
            # Hooks start the search server on demand; on a loaded machine a cold start outlasts the
            # prompt's recall budget and recall (rightly) gives up. Warm it, and give recall room to spare.
            assert call_or_start(env["CEMS_HOME"], {"op": "ping"}, 60), "the search server did not start"
            result = run_claude(
                claude,
                model.root_url,
                home=home,
                cwd=tmp_path / "work",
                prompt="push my branch to the release branch",
                args=["--allowedTools", "Bash"],
                env={**env, "CEMS_RECALL_TIME_BUDGET": "4"},
            )
            assert result.returncode == 0, result.stderr[-2000:]
            sessions = transcripts(home)
            assert sessions, "Claude Code wrote no transcript"
            (turn,) = captured_turns(env["CEMS_HOME"], sessions[0].stem)  # the Stop hook fired too
        finally:
            from cems_cli.server.daemon import stop_server

            stop_server(Path(env["CEMS_HOME"]))
    assert not model.errors, "the fake model crashed:\n" + "\n".join(model.errors)
    sent = json.dumps(model.message_bodies)
    # The memory reaches the model once: in the session's profile, and not again in the prompt's recall.
    first = json.dumps(model.message_bodies[0])
    assert "<memory-profile>" in first
    assert first.count("Release branches are cut from main every Tuesday.") == 1
    assert "force pushes rewrite shared history" in sent  # the deny reason came back as the tool result
    (denied,) = model.tool_results
    assert denied.get("is_error") and "force pushes rewrite shared history" in json.dumps(denied)
    assert "done." in result.stdout  # the model's answer after the tool result ended the turn
    assert turn["last_message"].strip() == "done."

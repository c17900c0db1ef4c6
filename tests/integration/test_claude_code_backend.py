"""`CEMS_LLM_BACKEND=claude-code`: capture's extraction through the user's own Claude Code CLI, run headless
(the real CLI, offline, against the scripted fake Anthropic API), and CEMS never learning from those calls.

The harness is tests/support/claude_code (the pinned CLI from the npm registry, cached once per machine); the
test skips, saying why, only when npm is missing or that install fails.
"""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path

import pytest

from cems_cli.capture.observations import NO_OBSERVE_MARKER
from cems_cli.capture.observer import Observer, llm_for
from cems_cli.capture.observer_settings import ObserverSettings
from cems_cli.claude_code_llm import ClaudeCodeClient
from tests.conftest import cems_subprocess
from tests.integration.test_observer_engine import make_idle
from tests.integration.test_observer_llm import llm_memories
from tests.integration.test_observer_synth import write_session
from tests.support.claude_code import FakeAnthropic, claude_code_or_skip
from tests.support.claude_code.run import OFFLINE_ENV

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def claude() -> Path:
    return claude_code_or_skip()


def _answer(body: dict) -> str:
    sent = json.dumps(body.get("messages"))
    if "Transcript excerpt" not in sent:
        return "Fake title"
    observation = {
        "category": "learnings",
        "title": "Staging deploys",
        "text": "In shop-api, staging deploys need DEPLOY_ENV=staging or the release job targets production.",
    }
    return json.dumps({"observations": [observation]})


@pytest.fixture
def claude_env(env, claude, tmp_path, monkeypatch):
    """The environment a user's shell gives the observer: their Claude Code login (here, the fake's) and
    CEMS's hooks installed in their settings."""
    import os

    home = tmp_path / "home"
    (home / ".runtime").mkdir(parents=True)
    for key in [k for k in os.environ if k.startswith(("ANTHROPIC_", "CLAUDE"))]:
        monkeypatch.delenv(key)
    for key, value in {**OFFLINE_ENV, "HOME": str(home), "ANTHROPIC_API_KEY": "sk-ant-fake",
                       "NO_PROXY": "127.0.0.1,localhost", "TMPDIR": str(home / ".runtime")}.items():
        monkeypatch.setenv(key, value)
    for key, value in {"CEMS_LLM_BACKEND": "claude-code", "CEMS_CLAUDE_CODE_PATH": str(claude)}.items():
        monkeypatch.setenv(key, value)
    settings_file = home / ".claude" / "settings.json"
    installed = cems_subprocess(["hooks", "install", "--settings", str(settings_file)], env)
    assert installed.returncode == 0, installed.stderr.decode()
    from cems_cli.config import get_settings

    get_settings.cache_clear()
    return home


def test_extraction_runs_through_the_claude_code_cli_and_is_never_observed(claude_env, tmp_path, monkeypatch):
    from cems_cli.config import load_settings
    from cems_cli.engine.service import MemoryService

    started = time.time()
    root = tmp_path / "projects"
    path = root / "p" / "llm-session-1.jsonl"
    write_session(path, "llm-session-1", 3, seed=7)
    make_idle(path)
    with FakeAnthropic(command=None) as model:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", model.root_url)
        model.side_responder = _answer
        settings = load_settings()
        observer_settings = ObserverSettings(observer_paths=str(root), observer_idle_seconds=300)
        llm = llm_for(observer_settings, settings)
        assert isinstance(llm, ClaudeCodeClient) and llm.model == "haiku"
        with MemoryService(settings) as svc:
            report = Observer(svc, observer_settings, llm).sync()
            memories = llm_memories(svc)
    assert not model.errors, "\n".join(model.errors)
    assert report.errors == [] and report.extracted == 1, report
    assert memories.get(
        "In shop-api, staging deploys need DEPLOY_ENV=staging or the release job targets production."
    ) == "learnings"
    (asked,) = [b for b in model.message_bodies if "Transcript excerpt" in json.dumps(b.get("messages"))]
    assert "haiku" in asked["model"]
    assert NO_OBSERVE_MARKER in json.dumps(asked["messages"])
    assert "long-term memories" in json.dumps(asked.get("system"))  # CEMS's system prompt, not the agent's
    assert not asked.get("tools")  # the model can only answer
    # CEMS never learns from its own calls: no transcript written, and its hooks (installed in this HOME's
    # settings) did nothing for that session, so no turn was spooled for capture. The home is shared with the
    # tests this process ran before (pytest-xdist picks which): only the turns spooled during this one count.
    assert list((claude_env / ".claude").rglob("*.jsonl")) == []
    spool = Path(settings.home) / "spool.db"
    if spool.exists():
        with sqlite3.connect(spool) as conn:
            spooled = conn.execute("SELECT count(*) FROM turns WHERE received_at >= ?", (started,)).fetchone()
            assert spooled[0] == 0


def test_a_cli_that_fails_is_a_failed_extraction_not_a_crash(claude_env, tmp_path, monkeypatch):
    from cems_cli.config import load_settings

    with FakeAnthropic(command=None) as model:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", model.root_url)
        model.side_responder = lambda body: "not json at all"
        llm = llm_for(ObserverSettings(), load_settings())
        assert llm is not None
        assert llm.chat_json("Answer in JSON.", "hello", stage="test-claude-code") is None
    missing = ClaudeCodeClient(str(tmp_path / "no-such-claude"), "haiku", 5.0, tmp_path)
    assert not missing.available
    assert missing.chat_json("Answer in JSON.", "hello", stage="test-claude-code-missing") is None


def test_the_backend_is_chosen_with_cems_config_set(env):
    chosen = cems_subprocess(["config", "set", "llm_backend", "claude-code"], env)
    assert chosen.returncode == 0, chosen.stderr.decode()
    shown = cems_subprocess(["config", "get", "llm_backend"], env)
    assert "claude-code" in shown.stdout.decode()
    wrong = cems_subprocess(["config", "set", "llm_backend", "gpt"], env)
    assert wrong.returncode != 0 and len(wrong.stderr.decode().strip().splitlines()) == 1
    cems_subprocess(["config", "unset", "llm_backend"], env)

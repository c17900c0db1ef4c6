"""The prompt hook's time budget reaches the search: with an LLM endpoint that never answers, the LLM
stages share what is left of the 1.5 s and drop what cannot finish, and the memory is still injected."""

from __future__ import annotations

import time
from pathlib import Path

import pytest


@pytest.fixture
def hook_home(env, tmp_path, monkeypatch, fake_openai):
    """A CEMS_HOME of this test's own (so its search server starts with this LLM configuration) on the
    session's embedded server; the LLM endpoint hangs on every request."""
    from cems_cli.config import get_settings
    from cems_cli.server.daemon import stop_server
    from cems_cli.store.embedded import ensure_server

    server = ensure_server(Path(env["CEMS_HOME"]) / "pg")
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    for key, value in {
        "CEMS_HOME": str(home), "CEMS_DATABASE_URL": server.conninfo(),
        "CEMS_LLM_BASE_URL": fake_openai.base_url, "CEMS_LLM_API_KEY": "sk-test", "CEMS_LLM_TIMEOUT": "2",
    }.items():
        monkeypatch.setenv(key, value)
    get_settings.cache_clear()
    fake_openai.mode = "hang"
    yield home
    stop_server(home)
    get_settings.cache_clear()


def test_a_hanging_llm_cannot_make_the_prompt_wait_past_its_budget(hook_home, env, fake_openai):
    import cems
    from cems_cli.hookhandlers import user_prompt_submit
    from cems_cli.server.client import call_or_start

    with cems.open() as memory:
        memory.remember("Deploys to staging run with make deploy-staging.", category="patterns")
    # The server's first start (model load) is not what this measures.
    assert call_or_start(str(hook_home), {"op": "ping"}, 60.0) is not None
    payload = {"prompt": "how do we deploy to staging?", "cwd": "/tmp", "session_id": "s",
               "hook_event_name": "UserPromptSubmit"}
    started = time.monotonic()
    answer = user_prompt_submit.handle(payload)
    elapsed = time.monotonic() - started
    assert elapsed < 1.5, f"the hook took {elapsed:.2f} s"
    assert answer is not None, "nothing injected: the search did not finish within the budget"
    assert "make deploy-staging" in answer["hookSpecificOutput"]["additionalContext"]
    assert fake_openai.chat_requests, "the LLM stages were asked (and timed out), not skipped"


def test_the_library_recall_honours_its_timeout(hook_home, env):
    import cems

    with cems.open() as memory:
        memory.remember("The session cache lives in Redis.", category="decisions")
        memory.warm_up()
        started = time.monotonic()
        results = memory.recall("where does the session cache live?", timeout=0.8)
        elapsed = time.monotonic() - started
    assert elapsed < 1.0, f"recall took {elapsed:.2f} s with a 0.8 s timeout"
    assert [r.content for r in results] == ["The session cache lives in Redis."]

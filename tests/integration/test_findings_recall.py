"""What a session found out reaches a later session: the transcripts of tests/fixtures/findings go through the
capture engine (the observer; the Stop hook's worker runs the same engine), then later questions go through
the real UserPromptSubmit hook and its search server."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

pytestmark = pytest.mark.real_model  # judges recall: the real model

FIXTURES = Path(__file__).parent.parent / "fixtures" / "findings"
CWD = "/home/dev/acme-api"


@pytest.fixture
def captured(env, tmp_path, monkeypatch):
    """Every fixture session captured (dated in the last days, in order), the project the prompt hook sees."""
    from cems_cli.capture.observer import Observer
    from cems_cli.capture.observer_settings import ObserverSettings
    from cems_cli.config import get_settings
    from cems_cli.engine.service import MemoryService
    from cems_cli.project import project_for_dir

    project = project_for_dir(CWD)
    monkeypatch.setenv("CEMS_PROJECT", project)
    get_settings.cache_clear()
    folder = tmp_path / "projects" / "-home-dev-acme-api"
    folder.mkdir(parents=True)
    today = datetime.now(UTC).date()

    def recent(match: re.Match[str]) -> str:  # March 2..9 → the last eight days, in the same order
        return (today - timedelta(days=10 - int(match.group(1)))).isoformat()

    for source in FIXTURES.glob("*.jsonl"):
        text = re.sub(r"2026-03-(\d\d)", recent, source.read_text())
        (folder / source.name).write_text(text)
    with MemoryService(get_settings()) as svc:
        settings = ObserverSettings(observer_paths=str(tmp_path / "projects"), observer_idle_seconds=0)
        report = Observer(svc, settings).sync()
        assert report.errors == [], report.errors
        stored = svc.list_memories(limit=200)
    yield project, stored
    from cems_cli.server.daemon import stop_server

    stop_server(Path(env["CEMS_HOME"]))


def _recall(question: str) -> str:
    from cems_cli.hookhandlers import user_prompt_submit

    answer = user_prompt_submit.handle(
        {"prompt": question, "cwd": CWD, "session_id": "later-session", "hook_event_name": "UserPromptSubmit"}
    )
    return answer["hookSpecificOutput"]["additionalContext"] if answer else ""


def test_a_later_question_gets_what_an_earlier_session_found_out(captured, monkeypatch):
    monkeypatch.setenv("CEMS_RECALL_TIME_BUDGET", "30")  # a cold server on a busy machine: not the point here
    asked = {
        "How do I change a feature flag for staging?": "deploy/staging/flags.yaml",
        "The e2e job is timing out again, what was it last time?": "npx playwright install chromium",
        "docker build fails on the cache mount, what do I need?": "DOCKER_BUILDKIT=1",
    }
    for question, fact in asked.items():
        block = _recall(question)
        assert fact in block, (question, block)
        assert "Let me know" not in block and "I'll now" not in block


def test_one_memory_per_fact(captured):
    _project, stored = captured
    contents = [m.content for m in stored]
    decisions = [m.content for m in stored if m.category == "decisions"]
    assert decisions == [
        "We'll use Postgres advisory locks instead of Redis locks, so a crashed worker releases its lock "
        "with its connection."
    ]
    # Three attempts in two sessions: one memory, counted, dated and cited by the latest.
    [blocked] = [m for m in stored if "blocked by a rule" in m.content]
    latest = (datetime.now(UTC).date() - timedelta(days=1)).isoformat()
    assert blocked.content.endswith(f"Tried 3 times, last on {latest}.")
    assert blocked.created_at.date().isoformat() == latest
    assert "6a0f1c2e-6666" in (blocked.source_ref or "")
    # Session records: only the session that did something; those that looked, or were only refused, none.
    assert [m.category for m in stored].count("context") == 1
    fillers = ("Done.", "Let me know", "Good question")
    assert not any(filler in text for text in contents for filler in fillers)

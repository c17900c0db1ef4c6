"""LLM extraction through the openai client against a local OpenAI-compatible server: batching, the idle
finalize, and failures (HTTP 500, a hung endpoint) that back off and lose nothing."""

from __future__ import annotations

import json
import re
import time

import pytest

from cems_cli.capture.observations import NO_OBSERVE_MARKER
from cems_cli.capture.observer import Observer
from cems_cli.capture.observer_settings import ObserverSettings
from cems_cli.llm import LLMClient
from tests.integration.test_observer_engine import make_idle, stored
from tests.integration.test_observer_synth import one_pass, write_session

TASK = re.compile(r"User: (Task \d+): (.*?) because", re.S)


@pytest.fixture
def svc(env):
    from cems_cli.config import load_settings
    from cems_cli.engine.service import MemoryService

    with MemoryService(load_settings()) as service:
        yield service


def extractor(body: dict) -> str:
    """A model that answers one decision per task it sees, plus kinds the engine does not take from it."""
    transcript = body["messages"][1]["content"]
    tasks = TASK.findall(transcript)
    observations = [
        {"category": "decisions", "title": task, "text": f"LLM decision for {task}: {what}."}
        for task, what in tasks
    ]
    observations.append({"category": "context", "text": f"LLM summary of {len(tasks)} tasks."})
    observations.append({"category": "nonsense", "text": f"Unknown category is dropped ({len(tasks)})."})
    observations.append({"category": "learnings", "text": "   "})  # empty: dropped
    return json.dumps({"observations": observations})


def make(svc, fake, root, *, idle=300.0, timeout=5.0, **options) -> Observer:
    settings = ObserverSettings(
        observer_paths=str(root),
        observer_idle_seconds=idle,
        observer_backoff_initial=0.3,
        observer_backoff_max=0.6,
        **options,
    )
    return Observer(svc, settings, LLMClient(fake.base_url, "sk-test", "fake-model", timeout))


def backlog(svc) -> int:
    return svc.conn.execute(
        "SELECT count(*) FROM observer_backlog WHERE user_id = %s", (svc.settings.user,)
    ).fetchone()[0]


def extracted(svc) -> list[tuple[str, str]]:
    """What extraction stored: everything but the session's deterministic context record, which is kept
    up to date as turns close whether or not a model is configured."""
    return [(text, category) for text, category in stored(svc) if category != "context"]


def llm_memories(svc) -> dict[str, str]:
    rows = svc.conn.execute(
        "SELECT content, category, tags, source, source_ref FROM memory_documents WHERE user_id = %s",
        (svc.settings.user,),
    ).fetchall()
    for _content, _category, tags, source, source_ref in rows:
        assert source == "observer" and source_ref.startswith("project:shop-api:session:llm-session-1:L")
        assert "session:llm-session-1" in tags
    return {r[0]: r[1] for r in rows}


def test_material_gathers_until_the_session_is_idle_then_one_batch_is_extracted(svc, fake_openai, tmp_path):
    fake_openai.responder = extractor
    root = tmp_path / "projects"
    path = root / "p" / "llm-session-1.jsonl"
    write_session(path, "llm-session-1", 4, seed=101)
    observer = make(svc, fake_openai, root, observer_batch_chars=10**6)
    report = observer.sync()
    assert report.errors == [] and report.backlog == 3  # the 4th request is still open
    assert fake_openai.chat_requests == [] and extracted(svc) == []
    make_idle(path)
    report = observer.sync()
    assert report.errors == [] and report.extracted == 1 and backlog(svc) == 0
    [request] = fake_openai.chat_requests
    prompt = request.body["messages"][1]["content"]
    assert prompt.startswith(NO_OBSERVE_MARKER)  # a Claude Code based endpoint's own transcript is skipped
    memories = llm_memories(svc)
    # The session's record (one context memory) and the model's decisions; its summary and unknown kinds
    # are not taken.
    assert sorted(memories.values()) == ["context"] + ["decisions"] * 4
    assert not any(text.startswith(("LLM summary", "Unknown category")) for text in memories)
    assert "LLM decision for Task 4: " in "".join(memories)


def test_enough_material_is_extracted_while_the_session_goes_on(svc, fake_openai, tmp_path):
    fake_openai.responder = extractor
    root = tmp_path / "projects"
    path = root / "p" / "llm-session-1.jsonl"
    write_session(path, "llm-session-1", 6, seed=102)
    observer = make(svc, fake_openai, root, observer_batch_chars=1000, observer_batch_max_chars=1200)
    report = observer.sync()
    left = svc.conn.execute(
        "SELECT count(*), coalesce(sum(chars), 0) FROM observer_backlog WHERE user_id = %s",
        (svc.settings.user,),
    ).fetchone()
    assert report.errors == [] and report.backlog == 5 and report.extracted >= 2
    # What is left is below the threshold and the session is not idle: it waits for more.
    assert left[0] <= 5 - report.extracted and left[1] < 1000
    assert all(len(r.body["messages"][1]["content"]) < 1200 + 100 for r in fake_openai.chat_requests)
    assert "LLM decision for Task 1: " in "".join(llm_memories(svc))


@pytest.mark.parametrize("failure", ["error", "hang"])
def test_a_failing_endpoint_backs_off_and_nothing_is_lost(svc, fake_openai, tmp_path, failure):
    fake_openai.responder = extractor
    fake_openai.mode = failure
    root = tmp_path / "projects"
    path = root / "p" / "llm-session-1.jsonl"
    write_session(path, "llm-session-1", 3, seed=103)
    observer = make(svc, fake_openai, root, idle=0, timeout=0.5)
    started = time.monotonic()
    report = observer.sync()
    assert time.monotonic() - started < 10  # a hung endpoint costs one timeout, not forever
    assert report.llm_failures == 1 and report.extracted == 0
    assert extracted(svc) == [] and backlog(svc) == 3
    status = observer.status()
    assert "LLM extraction failed" in status["last_error"] and status["llm_retry_at"]
    asked = len(fake_openai.chat_requests)
    observer.sync()  # within the backoff: the endpoint is left alone
    assert len(fake_openai.chat_requests) == asked
    fake_openai.mode = "ok"
    time.sleep(0.35)
    report = observer.sync()
    assert report.errors == [] and report.extracted == 1 and backlog(svc) == 0
    assert "LLM decision for Task 3: " in "".join(llm_memories(svc))
    assert observer.status()["llm_retry_at"] is None


def test_a_restarted_observer_extracts_what_a_failed_one_left(svc, fake_openai, tmp_path):
    fake_openai.mode = "error"
    root = tmp_path / "projects"
    path = root / "p" / "llm-session-1.jsonl"
    write_session(path, "llm-session-1", 2, seed=104)
    make(svc, fake_openai, root, idle=0).sync()
    assert backlog(svc) == 2 and extracted(svc) == []
    fake_openai.mode = "ok"
    fake_openai.responder = extractor
    report = make(svc, fake_openai, root, idle=0).sync()  # a new process: no backoff carried over
    assert report.extracted == 1 and backlog(svc) == 0
    assert "LLM decision for Task 2: " in "".join(llm_memories(svc))


def test_material_the_model_never_answers_is_stored_as_digests_after_the_attempt_limit(
    svc, fake_openai, tmp_path
):
    fake_openai.mode = "invalid_json"
    root = tmp_path / "projects"
    path = root / "p" / "llm-session-1.jsonl"
    write_session(path, "llm-session-1", 2, seed=105)
    observer = make(svc, fake_openai, root, idle=0, observer_llm_max_attempts=2)
    observer.sync()
    assert backlog(svc) == 2 and extracted(svc) == []
    time.sleep(0.35)
    report = observer.sync()
    assert report.llm_failures == 1 and backlog(svc) == 0
    assert stored(svc) == one_pass(path)

"""hooks/stop.py as Claude Code runs it: the turn is recorded in the spool, then the detached capture worker
runs the capture engine (the observer's) on the transcript: the session's context record, learnings,
patterns (or, with an LLM, what the model extracts), stored once whichever trigger reads the turn first."""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path

import pytest

from tests.integration.test_post_tool_use_hook import (
    AWS_KEY,
    GITHUB_TOKEN,
    PRIVATE_TEXT,
    assert_silent,
    capture_environment,
    git_project,
    run_hook,
    spool_bytes,
    stored_rows_containing,
)
from tests.support.fake_openai import Reply
from tests.support.paths import PAYLOADS
from tests.support.transcripts import FINAL, SESSION, Transcript, redis_turn

REPO = Path(__file__).resolve().parents[2]
STOP = REPO / "hooks" / "stop.py"
WORKER_TIMEOUT = 120.0


@pytest.fixture
def capture_env(env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    return capture_environment(env, tmp_path, monkeypatch)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return Path(git_project(tmp_path / "acme-api"))


@pytest.fixture
def transcript(tmp_path: Path, project: Path) -> Transcript:
    folder = tmp_path / ".claude" / "projects" / "-tmp-acme-api"
    folder.mkdir(parents=True)
    return Transcript(folder / f"{SESSION}.jsonl", cwd=str(project))


def stop_payload(transcript: Transcript, message: str = FINAL, **changes) -> dict:
    payload = json.loads((PAYLOADS / "Stop.json").read_text())
    payload.update(transcript_path=str(transcript.path), cwd=transcript.cwd, last_assistant_message=message)
    return {**payload, **changes}


def stop(env: dict[str, str], payload: dict | bytes) -> float:
    """Run the Stop hook as Claude Code does (in the session's cwd); returns how long it took (seconds)."""
    started = time.monotonic()
    cwd = payload.get("cwd") if isinstance(payload, dict) else None
    extra = {k: v for k, v in env.items() if k != "CEMS_HOME"}
    proc = run_hook(
        env["CEMS_HOME"], payload, hook=STOP, cwd=cwd if cwd and Path(cwd).is_dir() else None, **extra
    )
    assert_silent(proc)
    return time.monotonic() - started


def turns(home: str | Path) -> list[dict]:
    path = Path(home) / "spool.db"
    if not path.exists():
        return []
    with sqlite3.connect(path) as conn:
        conn.row_factory = sqlite3.Row
        return [dict(r) for r in conn.execute("SELECT * FROM turns ORDER BY received_at, rowid")]


def wait_for_worker(home: str | Path, count: int) -> list[dict]:
    """Until the detached worker has processed `count` turns."""
    deadline = time.monotonic() + WORKER_TIMEOUT
    while time.monotonic() < deadline:
        recorded = turns(home)
        if len(recorded) >= count and all(t["processed_at"] for t in recorded):
            return recorded
        time.sleep(0.2)
    log = Path(home) / "logs" / "hooks.log"
    raise AssertionError(f"worker did not finish: {turns(home)}\n{log.read_text() if log.exists() else ''}")


def memories(user: str, category: str | None = None) -> list[dict]:
    from cems_cli.config import get_settings
    from cems_cli.engine.service import MemoryService

    with MemoryService(get_settings()) as service:
        rows = service.conn.execute(
            "SELECT content, category, source, source_ref, tags FROM memory_documents "
            "WHERE user_id = %s AND NOT archived AND (%s::text IS NULL OR category = %s) ORDER BY created_at",
            (user, category, category),
        ).fetchall()
    return [dict(zip(("content", "category", "source", "source_ref", "tags"), r, strict=True)) for r in rows]


# --- doing nothing when it should -----------------------------------------------------------------------


def test_stop_hook_active_records_nothing(tmp_path):
    home = tmp_path / "home"
    payload = json.loads((PAYLOADS / "Stop.json").read_text())
    stop({"CEMS_HOME": str(home)}, {**payload, "stop_hook_active": True})
    assert turns(home) == [] and not (home / "spool.db").exists()


@pytest.mark.parametrize(
    "stdin",
    [
        b"",
        b"not json",
        b"[1, 2]",
        b"{}",
        b'{"hook_event_name": "Stop"}',
        b"{\xff\xfe",
        b'{"hook_event_name": "SubagentStop", "session_id": "s", "last_assistant_message": "x"}',
        b"{" + b" " * (20 * 1024 * 1024),
    ],
    ids=["empty", "not json", "array", "no fields", "no session", "invalid utf-8", "subagent", "20 MB"],
)
def test_bad_or_foreign_input_exits_0_silently_and_records_nothing(tmp_path, stdin):
    home = tmp_path / "home"
    stop({"CEMS_HOME": str(home)}, stdin)
    assert turns(home) == []


def test_cems_disable_turns_the_hook_off(tmp_path):
    home = tmp_path / "home"
    stop({"CEMS_HOME": str(home), "CEMS_DISABLE": "1"}, (PAYLOADS / "Stop.json").read_bytes())
    assert turns(home) == []


# --- what a turn becomes --------------------------------------------------------------------------------


def test_a_turn_becomes_the_sessions_record_a_learning_and_a_pattern(capture_env, transcript, cli):
    redis_turn(transcript)
    took = stop(capture_env, stop_payload(transcript))
    assert took < 10.0  # records and hands off; the worker does the slow part
    assert len(turns(capture_env["CEMS_HOME"])) == 1  # recorded before the hook returned
    [turn] = wait_for_worker(capture_env["CEMS_HOME"], 1)
    assert turn["outcome"] == "engine" and turn["end_offset"] == transcript.path.stat().st_size

    stored = memories(capture_env["CEMS_USER"])
    by_category = {m["category"]: m for m in stored}
    assert sorted(by_category) == ["context", "learnings", "patterns"] and len(stored) == 3
    for memory in stored:
        assert memory["source"] == "session" and memory["tags"][0] == f"session:{SESSION}"
        assert memory["source_ref"].startswith(f"project:acme/api:session:{SESSION}:L")
    context = by_category["context"]["content"]
    assert context.startswith(f"Claude Code session {SESSION[:8]} in acme/api on branch fix/optional-redis")
    assert "Asked: The API returns 500 when REDIS_URL is unset." in context
    assert "Changed: src/acme/config.py." in context
    assert 'Ran: `grep -rn "REDIS_URL" src/`; `pytest -q`.' in context
    assert "Outcome" not in context and "Still failing" not in context  # the failure was fixed
    assert by_category["learnings"]["content"] == (
        "`pytest -q` failed in acme/api with \"KeyError: 'REDIS_URL'\"; it passed after changes to "
        "src/acme/config.py."
    )
    assert by_category["patterns"]["content"] == "In project acme/api the tests run with `pytest -q`."

    searched = cli("search", "why did pytest fail with KeyError REDIS_URL", "--json")
    assert searched.code == 0, searched.stderr
    found = searched.json()["results"]
    assert found and found[0]["category"] == "learnings", found

    # The same Stop delivered again is the same turn: nothing new recorded, nothing new stored.
    stop(capture_env, stop_payload(transcript))
    assert len(turns(capture_env["CEMS_HOME"])) == 1
    assert len(memories(capture_env["CEMS_USER"])) == 3


def test_a_blocked_push_and_a_failing_command_are_recorded_as_what_they_were(capture_env, transcript):
    transcript.prompt("Push my branch and check that nosuchmod imports.")
    reason = "force pushes rewrite shared history (pattern 'git push*')"
    transcript.denied("git push --force origin main", reason)
    transcript.bash(
        "python -c 'import nosuchmod'",
        "Exit code 1\nTraceback (most recent call last):\nModuleNotFoundError: No module named 'nosuchmod'",
        True,
    )
    transcript.say("Done.")
    stop(capture_env, stop_payload(transcript, "Done."))
    wait_for_worker(capture_env["CEMS_HOME"], 1)
    # Nothing ran, nothing was decided: the record, and what the rule forbids (and why).
    [blocked] = memories(capture_env["CEMS_USER"], "learnings")
    assert blocked["content"] == (
        "`git push --force origin main` is blocked by a rule in acme/api: force pushes rewrite shared history"
    )
    [context] = memories(capture_env["CEMS_USER"], "context")
    text = context["content"]
    assert "Blocked by a rule: `git push --force origin main` (force pushes rewrite shared history)." in text
    failing = "python -c 'import nosuchmod': ModuleNotFoundError: No module named 'nosuchmod'"
    assert f"Still failing: {failing}." in text
    assert "Ran:" not in text and "Done." not in text


def test_each_turn_updates_the_one_context_memory_of_its_session(capture_env, transcript):
    redis_turn(transcript)
    stop(capture_env, stop_payload(transcript))
    wait_for_worker(capture_env["CEMS_HOME"], 1)
    [before] = memories(capture_env["CEMS_USER"], "context")
    transcript.prompt("Also document REDIS_URL in the README.")
    transcript.edit("README.md")
    transcript.say("Documented.")
    stop(capture_env, stop_payload(transcript, "README.md now documents REDIS_URL."))
    wait_for_worker(capture_env["CEMS_HOME"], 2)
    [after] = memories(capture_env["CEMS_USER"], "context")
    assert "Changed: src/acme/config.py." in before["content"]
    assert "Changed: src/acme/config.py, README.md." in after["content"]
    assert "Asked: The API returns 500 when REDIS_URL is unset." in after["content"]
    assert "/ Also document REDIS_URL in the README." in after["content"]


def test_the_worker_does_not_import_modules_from_the_agents_directory(capture_env, transcript, project):
    """The worker starts in the session's cwd; a project's own json.py or typing.py must not be imported."""
    marker = project / "SHADOWED"
    for name in ("json", "typing", "sqlite3", "psycopg"):
        (project / f"{name}.py").write_text(f"open({str(marker)!r}, 'a').write({name!r})\n")
    redis_turn(transcript)
    stop(capture_env, stop_payload(transcript))
    [turn] = wait_for_worker(capture_env["CEMS_HOME"], 1)
    assert turn["outcome"] == "engine" and not marker.exists()


def test_a_missing_transcript_stores_nothing_and_the_turn_is_done(capture_env, transcript):
    payload = stop_payload(transcript, transcript_path=str(transcript.path.with_name("gone.jsonl")))
    stop(capture_env, payload)
    [turn] = wait_for_worker(capture_env["CEMS_HOME"], 1)
    assert turn["end_offset"] is None and turn["outcome"] == "empty"
    assert memories(capture_env["CEMS_USER"]) == []  # the final message alone is no record of work


def test_the_stop_trigger_and_the_observer_store_a_turn_once(capture_env, transcript):
    """Both triggers on one transcript: whichever reads a turn first stores it, the other stores nothing."""
    from cems_cli.capture.observer import Observer
    from cems_cli.capture.observer_settings import ObserverSettings
    from cems_cli.config import get_settings
    from cems_cli.engine.service import MemoryService

    redis_turn(transcript)
    stop(capture_env, stop_payload(transcript))
    wait_for_worker(capture_env["CEMS_HOME"], 1)
    after_stop = memories(capture_env["CEMS_USER"])
    settings = ObserverSettings(observer_paths=str(transcript.path.parent.parent), observer_idle_seconds=0)
    with MemoryService(get_settings()) as service:
        report = Observer(service, settings).sync()
    assert report.errors == [] and report.files == 1
    assert (report.observations, report.duplicates, report.chunks) == (0, 0, 0)
    assert memories(capture_env["CEMS_USER"]) == after_stop
    # And the other way round: a turn the observer read first is "seen" by the Stop trigger.
    transcript.prompt("Also document REDIS_URL in the README.")
    transcript.edit("README.md")
    transcript.say("Documented.")
    with MemoryService(get_settings()) as service:
        assert Observer(service, settings).sync().chunks == 1
    between = memories(capture_env["CEMS_USER"])
    stop(capture_env, stop_payload(transcript, "Documented."))
    [_, second] = wait_for_worker(capture_env["CEMS_HOME"], 2)
    assert second["outcome"] == "seen" and memories(capture_env["CEMS_USER"]) == between


def test_secrets_and_private_text_never_reach_the_spool_or_the_database(capture_env, transcript):
    transcript.prompt(f"Use <private>{PRIVATE_TEXT}</private> for the deploy")
    transcript.bash(f"AWS_ACCESS_KEY_ID={AWS_KEY} ./deploy.sh", "deployed")
    message = f"Deployed with token {GITHUB_TOKEN}. <private>{PRIVATE_TEXT}</private> Done."
    stop(capture_env, stop_payload(transcript, message))
    wait_for_worker(capture_env["CEMS_HOME"], 1)
    [digest] = memories(capture_env["CEMS_USER"], "context")
    assert "./deploy.sh" in digest["content"] and "[REDACTED:" in digest["content"]
    for secret in (AWS_KEY, GITHUB_TOKEN, PRIVATE_TEXT):
        assert secret.encode() not in spool_bytes(Path(capture_env["CEMS_HOME"])), secret
        assert not stored_rows_containing(capture_env["CEMS_USER"], secret), secret


# --- with an LLM ----------------------------------------------------------------------------------------


def llm_env(capture_env: dict[str, str], fake_openai, **extra: str) -> dict[str, str]:
    return {**capture_env, "CEMS_LLM_BASE_URL": fake_openai.base_url, "CEMS_LLM_MODEL": "fake-model", **extra}


def test_with_an_llm_the_turn_becomes_learnings_and_decisions(capture_env, transcript, fake_openai):
    fake_openai.queue(
        json.dumps(
            {
                "observations": [
                    {
                        "category": "learnings",
                        "text": "In acme/api, Settings read REDIS_URL with os.environ[...], so an unset "
                        "variable raised KeyError and the API answered 500.",
                    },
                    {
                        "category": "decisions",
                        "text": "In acme/api the Redis cache is optional: Settings.redis_url defaults to "
                        f"None and the cache falls back to an in-process dict. Key {GITHUB_TOKEN}",
                    },
                ]
            }
        )
    )
    redis_turn(transcript)
    stop(llm_env(capture_env, fake_openai), stop_payload(transcript))
    [turn] = wait_for_worker(capture_env["CEMS_HOME"], 1)
    assert turn["outcome"] == "engine"
    stored = memories(capture_env["CEMS_USER"])
    # The model's memories replace the deterministic ones; the session's record is kept either way.
    assert sorted(m["category"] for m in stored) == ["context", "decisions", "learnings"]
    assert all(m["source"] == "session" for m in stored)
    assert all(m["source_ref"].startswith(f"project:acme/api:session:{SESSION}:L") for m in stored)
    assert any("falls back to an in-process dict" in m["content"] for m in stored)
    assert not any(GITHUB_TOKEN in m["content"] for m in stored)  # the model's answer is redacted too

    [request] = fake_openai.chat_requests
    sent = request.body["messages"][1]["content"]
    assert sent.startswith("<cems:no-observe/>\nTranscript excerpt:") and "Tool Bash: pytest -q" in sent


@pytest.mark.parametrize("failure", ["error", "hang"])
def test_an_llm_failure_falls_back_to_the_deterministic_memories(
    capture_env, transcript, fake_openai, failure
):
    fake_openai.queue(Reply.error(500) if failure == "error" else Reply.hang())
    redis_turn(transcript)
    stop(llm_env(capture_env, fake_openai, CEMS_OBSERVER_LLM_TIMEOUT="1"), stop_payload(transcript))
    [turn] = wait_for_worker(capture_env["CEMS_HOME"], 1)
    assert turn["outcome"] == "engine"
    stored = memories(capture_env["CEMS_USER"])
    assert sorted(m["category"] for m in stored) == ["context", "learnings", "patterns"]
    assert len(fake_openai.chat_requests) == 1


def test_the_hook_fails_open_when_the_spool_cannot_be_written(tmp_path):
    home = tmp_path / "home"
    home.write_text("a file where the data folder should be")
    proc = run_hook(home, (PAYLOADS / "Stop.json").read_bytes(), hook=STOP)
    assert_silent(proc)
    assert home.read_text() == "a file where the data folder should be"


# --- the worker when things go wrong --------------------------------------------------------------------


def record_turn(home: str, session: str, message: str, transcript: Path | None = None) -> None:
    from cems_cli.capture import spool

    conn = spool.connect(spool.spool_path(home))
    try:
        spool.add_turn(
            conn,
            turn_key=f"{session}-{message}",
            session_id=session,
            transcript_path=str(transcript) if transcript else None,
            cwd=None,
            last_message=message,
            end_offset=None,
        )
    finally:
        conn.close()


def test_a_turn_that_keeps_failing_is_set_aside_and_the_others_go_on(capture_env, tmp_path, monkeypatch):
    from cems_cli.capture import spool
    from cems_cli.capture.observer import Observer
    from cems_cli.config import get_settings

    paths = {}
    for session in ("bad", "good"):
        written = Transcript(tmp_path / f"{session}.jsonl", cwd=str(tmp_path), session=session)
        written.prompt("Rename the settings module.")
        written.bash("git mv settings.py config.py", "")
        written.say("Renamed the settings module.")
        paths[session] = written.path
    record_turn(capture_env["CEMS_HOME"], "bad", "this turn breaks the engine", paths["bad"])
    record_turn(capture_env["CEMS_HOME"], "good", "Renamed the settings module.", paths["good"])
    real_process = Observer._process

    def process(self, path, row, report):
        if path.name == "bad.jsonl":
            raise ValueError("a bug met by one turn")
        return real_process(self, path, row, report)

    monkeypatch.setattr(Observer, "_process", process)
    first = process_pending_now(get_settings())
    assert (first.turns, first.turn_memories_stored, first.turns_failed) == (1, 1, 0)
    for _ in range(spool.MAX_ATTEMPTS - 1):
        process_pending_now(get_settings())
    by_session = {t["session_id"]: t for t in turns(capture_env["CEMS_HOME"])}
    assert (by_session["bad"]["outcome"], by_session["bad"]["attempts"]) == ("failed", spool.MAX_ATTEMPTS)
    assert "a bug met by one turn" in by_session["bad"]["last_error"]
    assert by_session["good"]["outcome"] == "engine"
    [context] = memories(capture_env["CEMS_USER"])
    assert "Ran: `git mv settings.py config.py`." in context["content"]


def test_an_unreachable_database_leaves_the_work_pending(capture_env):
    from cems_cli.config import load_settings
    from cems_cli.store.db import StoreError

    transcript = Transcript(Path(capture_env["CEMS_HOME"]).parent / "s.jsonl", session="s")
    transcript.prompt("Anything.")
    record_turn(capture_env["CEMS_HOME"], "s", "Done.", transcript.path)
    settings = load_settings(database_url="host=/nonexistent-cems-socket-dir port=1 user=x connect_timeout=1")
    with pytest.raises(StoreError):
        process_pending_now(settings)
    [turn] = turns(capture_env["CEMS_HOME"])
    assert (turn["processed_at"], turn["attempts"]) == (None, 0)


def process_pending_now(settings):
    from cems_cli.capture.worker import process_pending

    return process_pending(settings, wait=True)


def test_a_turn_spooled_while_the_worker_finishes_is_not_stranded(capture_env, monkeypatch):
    """A Stop hook that finds the lock held records its turn and starts no worker: the running worker must
    notice the turn after it lets go of the lock."""
    import fcntl

    from cems_cli.capture import spool
    from cems_cli.config import get_settings
    from cems_cli.hookhandlers.stop import worker_running

    home = capture_env["CEMS_HOME"]
    record_turn(home, "s1", "First turn.")
    real_checkpoint = spool.checkpoint
    raced: list[bool] = []

    def checkpoint_then_a_stop_arrives(conn):
        real_checkpoint(conn)  # the last thing a run does while it holds the lock
        if not raced:
            raced.append(worker_running(home))
            record_turn(home, "s2", "Second turn.")

    monkeypatch.setattr(spool, "checkpoint", checkpoint_then_a_stop_arrives)
    summary = process_pending_now(get_settings())
    assert raced == [True]  # the hook would have left the turn to this worker
    assert summary.turns == 2 and all(t["outcome"] == "empty" for t in turns(home))
    assert not worker_running(home)
    with open(Path(home) / spool.LOCK_FILE, "a+") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        assert worker_running(home)

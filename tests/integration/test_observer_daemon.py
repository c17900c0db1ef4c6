"""`cems observe` as users run it, in real processes: foreground with appends, --daemon/status/stop, one
instance per CEMS_HOME, and restarts that resume where the last run stopped."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cems_cli.capture.observer_daemon import holder
from tests.conftest import REPO, cems_subprocess
from tests.integration.test_observer_engine import make_idle, stored
from tests.integration.test_observer_synth import SessionWriter, dump, one_pass


@pytest.fixture
def svc(env):
    from cems_cli.config import load_settings
    from cems_cli.engine.service import MemoryService

    with MemoryService(load_settings()) as service:
        yield service


@pytest.fixture
def observer_env(env, tmp_path) -> dict[str, str]:
    return {
        **env,
        "CEMS_OBSERVER_PATHS": str(tmp_path / "projects"),
        "CEMS_OBSERVER_IDLE_SECONDS": "1",
        "CEMS_OBSERVER_TICK_SECONDS": "0.5",
    }


def spawn(environment: dict[str, str], *args: str) -> subprocess.Popen[bytes]:
    full = {k: v for k, v in os.environ.items() if not k.startswith("CEMS_")} | environment
    return subprocess.Popen(
        [sys.executable, "-m", "cems_cli.cli.app", "observe", *args],
        env=full,
        cwd=str(REPO),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def wait_for(condition, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def test_foreground_observer_stores_what_is_appended_while_it_runs(svc, observer_env, tmp_path):
    home = Path(observer_env["CEMS_HOME"])
    path = tmp_path / "projects" / "-home-dev-shop-api" / "live-session.jsonl"
    path.parent.mkdir(parents=True)
    process = spawn(observer_env)
    try:
        wait_for(lambda: holder(home) == process.pid, 60, "the observer to start")
        writer = SessionWriter("live-session-0001", seed=201)
        for _burst in range(3):
            for _turn in range(2):
                for record in writer.turn_lines():
                    with open(path, "ab") as handle:  # one write per line, as Claude Code does
                        handle.write(dump(record))
                    time.sleep(0.02)
            time.sleep(0.5)
        expected = one_pass(path)
        wait_for(lambda: stored(svc) == expected, 90, "every observation of the session")

        second = cems_subprocess(["observe", "--once"], observer_env)
        assert second.returncode == 1
        assert f"already running (pid {process.pid})" in second.stderr.decode()

        status = cems_subprocess(["observe", "status", "--json"], observer_env)
        info = json.loads(status.stdout)
        assert (info["running"], info["pid"], info["files_watched"]) == (True, process.pid, 1)
        assert (info["bytes_behind"], info["observations"], info["last_error"]) == (0, len(expected), None)
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=30)
    assert process.returncode == 0, process.stderr.read().decode()
    assert holder(home) is None


def test_daemon_detaches_refuses_a_second_instance_and_stops(observer_env):
    home = Path(observer_env["CEMS_HOME"])
    started = cems_subprocess(["observe", "--daemon", "--json"], observer_env)
    assert started.returncode == 0, started.stderr.decode()
    pid = json.loads(started.stdout)["pid"]
    try:
        assert holder(home) == pid
        again = cems_subprocess(["observe", "--daemon"], observer_env)
        assert again.returncode == 1 and f"pid {pid}" in again.stderr.decode()
        status = json.loads(cems_subprocess(["observe", "status", "--json"], observer_env).stdout)
        assert status["running"] is True and status["pid"] == pid
        # Asked from a shell with other settings, status still tells what the daemon watches.
        elsewhere = {
            **observer_env,
            "CEMS_OBSERVER_PATHS": "/nonexistent/elsewhere",
            "CEMS_OBSERVER_IDLE_SECONDS": "9",
        }
        status = json.loads(cems_subprocess(["observe", "status", "--json"], elsewhere).stdout)
        assert status["roots"] == [observer_env["CEMS_OBSERVER_PATHS"]] and status["roots_from"] == "daemon"
        assert status["idle_seconds"] == 1.0
        text = cems_subprocess(["observe", "status"], elsewhere).stdout.decode()
        assert observer_env["CEMS_OBSERVER_PATHS"] in text and "/nonexistent/elsewhere" not in text
        stopped = cems_subprocess(["observe", "stop", "--json"], observer_env)
        assert json.loads(stopped.stdout) == {"running": False, "stopped": True, "pid": pid, "forced": False}
        assert holder(home) is None
        status = json.loads(cems_subprocess(["observe", "status", "--json"], elsewhere).stdout)
        assert status["running"] is False and status["pid"] is None
        assert status["roots"] == ["/nonexistent/elsewhere"] and status["roots_from"] == "settings"
        assert "observer: pid" in (home / "observer.log").read_text()
    finally:
        if holder(home) == pid:
            os.kill(pid, signal.SIGKILL)


def test_each_run_resumes_where_the_last_one_stopped(svc, observer_env, tmp_path):
    environment = {**observer_env, "CEMS_OBSERVER_IDLE_SECONDS": "300"}
    path = tmp_path / "projects" / "p" / "resumed-session.jsonl"
    path.parent.mkdir(parents=True)
    writer = SessionWriter("resumed-session", seed=301)
    reports = []
    for turns in (3, 2, 0):
        with open(path, "ab") as handle:
            for _ in range(turns):
                for record in writer.turn_lines():
                    handle.write(dump(record))
        if turns == 0:
            make_idle(path)
        run = cems_subprocess(["observe", "--once", "--json"], environment)
        assert run.returncode == 0, run.stderr.decode()
        reports.append(json.loads(run.stdout))
    assert [r["bytes_read"] for r in reports][2] == 0
    assert sum(r["bytes_read"] for r in reports) == path.stat().st_size
    # Duplicates are only the data's own repeats (a pattern seen in several turns), never a turn twice.
    assert sum(r["duplicates"] for r in reports) == len(one_pass(path, unique=False)) - len(one_pass(path))
    assert stored(svc) == one_pass(path)


def test_status_ignores_a_state_file_it_cannot_read(tmp_path):
    from cems_cli.capture.observer_daemon import STATE_FILE, _running_state

    me = os.getpid()
    for text in ("not json", "[]", json.dumps({"pid": me}), json.dumps({"pid": me, "roots": "/x"})):
        (tmp_path / STATE_FILE).write_text(text)
        assert _running_state(tmp_path, me) is None
    (tmp_path / STATE_FILE).write_text(json.dumps({"pid": me, "roots": ["/x"]}))
    expected = {"roots": ["/x"], "idle_seconds": None, "llm": None, "started_at": None}
    assert _running_state(tmp_path, me) == expected
    assert _running_state(tmp_path, me + 1) is None  # written by another process

"""A pid file whose PID now belongs to an unrelated process (a crash, then PID reuse or a reboot): commands
recover instead of failing to reach a server that is not there, and nothing ever signals that process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from cems_cli.store.embedded import SERVER_USER, data_dir, ensure_server, read_postmaster, stop_server
from tests.conftest import FAST_EMBEDDER, cems_subprocess

IS_ROOT = os.geteuid() == 0


@pytest.fixture
def bystander() -> Iterator[subprocess.Popen[bytes]]:
    """An unrelated process of the user the embedded server runs as (as root: its system user), so a
    signal sent to it by CEMS or by pg_ctl would reach it."""
    extra = {"user": SERVER_USER} if IS_ROOT else {}
    process = subprocess.Popen(["sleep", "60"], **extra)  # type: ignore[call-overload]
    try:
        _wait_exec(process.pid, b"sleep")
        yield process
    finally:
        process.kill()
        process.wait()


def _wait_exec(pid: int, word: bytes) -> None:
    """Until the child runs its own program (right after fork it still shows the parent's command line)."""
    import time

    deadline = time.monotonic() + 10
    while word not in Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0"):
        assert time.monotonic() < deadline, "the child never started"
        time.sleep(0.01)


def _with_pid(text: str, pid: int) -> str:
    lines = text.splitlines()
    return "\n".join([str(pid), *lines[1:]]) + "\n"


def _plant(path: Path, text: str, like: Path) -> None:
    path.write_text(text)
    info = like.parent.stat()
    if IS_ROOT:
        os.chown(path, info.st_uid, info.st_gid)  # as the server's user left it


def test_a_reused_postmaster_pid_is_not_a_server_and_is_never_signalled(tmp_path, bystander):
    home = tmp_path / "home"
    pgdata = home / "pg"
    env = {"CEMS_HOME": str(home), "CEMS_USER": "stale-pid", "CEMS_EMBEDDING_BACKEND": FAST_EMBEDDER}
    try:
        state = ensure_server(pgdata)
        cluster = data_dir(pgdata)
        pid_text = (cluster / "postmaster.pid").read_text()
        assert state.socket_dir is not None
        socket_lock = state.socket_dir / ".s.PGSQL.5432.lock"
        lock_text = socket_lock.read_text()
        stop_server(pgdata)
        # The server died without cleaning up (SIGKILL, power cut) and its PID went to another process.
        _plant(cluster / "postmaster.pid", _with_pid(pid_text, bystander.pid), cluster / "postmaster.pid")
        _plant(socket_lock, _with_pid(lock_text, bystander.pid), socket_lock)

        assert read_postmaster(pgdata) is None
        status = cems_subprocess(["db", "status", "--json"], env)
        assert json.loads(status.stdout)["running"] is False
        stopped = cems_subprocess(["db", "stop", "--json"], env)
        assert stopped.returncode == 0, stopped.stderr.decode()
        assert json.loads(stopped.stdout)["stopped"] is False
        assert bystander.poll() is None  # not signalled

        remembered = cems_subprocess(["remember", "A stale pid file blocks no server.", "--json"], env)
        assert remembered.returncode == 0, remembered.stderr.decode()
        running = read_postmaster(pgdata)
        assert running is not None and running.pid != bystander.pid
        assert bystander.poll() is None
    finally:
        stop_server(pgdata)
    assert bystander.poll() is None


def test_a_reused_search_server_pid_is_not_signalled(tmp_path):
    """The PID went to a process of ours that even looks like a search server (another CEMS_HOME's, say):
    without the server's lock held it is no server of this home; with the lock held (a new server loading
    its model), the start time recorded beside the PID tells them apart."""
    import fcntl

    from cems_cli.plumbing.procinfo import boot_id
    from cems_cli.server.daemon import server_pid
    from cems_cli.server.daemon import stop_server as stop_search_server

    run = tmp_path / "run"
    run.mkdir(mode=0o700)
    argv = [sys.executable, "-c", "import time; time.sleep(60)", "cems_cli.server.daemon"]
    lookalike = subprocess.Popen(argv)
    try:
        _wait_exec(lookalike.pid, b"cems_cli.server.daemon")
        (run / "server.pid").write_text(f"{lookalike.pid}\n")  # as an earlier version wrote it
        assert server_pid(tmp_path) is None
        assert stop_search_server(tmp_path, timeout=1) is False
        with open(run / "server.lock", "a+") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # a live server holds it (here: this test)
            (run / "server.pid").write_text(f"{lookalike.pid} 1@{boot_id()}\n")  # started at boot: not it
            assert server_pid(tmp_path) is None
            assert stop_search_server(tmp_path, timeout=1) is False
        assert lookalike.poll() is None
    finally:
        lookalike.kill()
        lookalike.wait()


def test_the_search_server_pid_file_names_the_running_server(env, tmp_path):
    """The real thing is still recognised (and stopped) by the identity it recorded."""
    from cems_cli.server.daemon import server_pid
    from cems_cli.server.daemon import stop_server as stop_search_server

    home = Path(env["CEMS_HOME"])
    started = cems_subprocess(["serve", "--daemon", "--json"], env)
    assert started.returncode == 0, started.stderr.decode()
    pid = json.loads(started.stdout)["pid"]
    try:
        words = (home / "run" / "server.pid").read_text().split()
        assert words[0] == str(pid) and len(words) == 2 and "@" in words[1]
        assert server_pid(home) == pid
    finally:
        assert stop_search_server(home) is True
    # Not `is None`: the home is the session's, and a server an earlier test's hook spawned with a tiny budget
    # may still be starting; it takes the lock as soon as this one lets go (seen once on a loaded CI run).
    assert server_pid(home) != pid

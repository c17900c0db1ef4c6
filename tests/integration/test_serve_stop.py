"""`cems serve --stop` tells the truth: it stops the serving search server and any other started for the
same home (a hook spawns one whenever no server answers; it loads for seconds, then takes the lock the
moment it is free), waits until none runs, and exits non-zero when one still does."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import REPO, cems_subprocess

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="finding servers needs /proc (Linux)")

# A search server still loading when the serving one stops: it becomes the server once its import is done.
_QUEUED = (
    "import sys, time; time.sleep(3); sys.argv[1:] = []\n"
    "from cems_cli.server.daemon import main; raise SystemExit(main())"
)


def _start(code: str, home: Path) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CEMS_")}
    env.update(CEMS_HOME=str(home), CEMS_USER="serve-stop-test")
    process = subprocess.Popen([sys.executable, "-c", code, "cems_cli.server.daemon"], env=env, cwd=REPO)
    deadline = time.monotonic() + 10
    while b"cems_cli.server.daemon" not in Path(f"/proc/{process.pid}/cmdline").read_bytes().split(b"\0"):
        assert time.monotonic() < deadline, "the child never started"
        time.sleep(0.01)
    return process


def _ignores_sigterm(pid: int) -> bool:
    status = Path(f"/proc/{pid}/status").read_text()
    mask = next(int(line.split()[1], 16) for line in status.splitlines() if line.startswith("SigIgn:"))
    return bool(mask & (1 << (signal.SIGTERM - 1)))


def test_stop_takes_the_queued_server_too_and_says_so(env):
    from cems_cli.server.daemon import server_pid

    home = Path(env["CEMS_HOME"])
    started = cems_subprocess(["serve", "--daemon", "--json"], env)
    assert started.returncode == 0, started.stderr.decode()
    serving = json.loads(started.stdout)["pid"]
    queued = _start(_QUEUED, home)
    try:
        stopped = cems_subprocess(["serve", "--stop", "--json"], env)
        assert stopped.returncode == 0, stopped.stderr.decode()
        report = json.loads(stopped.stdout)
        assert report["stopped"] is True and report["running"] is False
        assert serving in report["pids"] and queued.pid in report["pids"]
        # Before, the queued one was never signalled: it took the lock and served for 30 minutes.
        assert queued.wait(timeout=15) == -signal.SIGTERM
        assert server_pid(home) is None
        again = cems_subprocess(["serve", "--stop"], env)
        assert again.returncode == 0 and again.stdout.decode().strip() == "not running"
    finally:
        queued.kill()
        queued.wait()


def test_a_server_that_ignores_sigterm_is_killed(tmp_path):
    from cems_cli.server.daemon import server_processes, stop_servers

    ignores = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(60)"
    stubborn = _start(ignores, tmp_path)
    other_home = _start("import time; time.sleep(60)", tmp_path / "elsewhere")
    try:
        # The command line shows at exec, the handler only once the interpreter has started: on a loaded
        # machine a SIGTERM between the two ended the child before it could ignore anything.
        deadline = time.monotonic() + 10
        while not _ignores_sigterm(stubborn.pid):
            assert time.monotonic() < deadline, "the child never ignored SIGTERM"
            time.sleep(0.01)
        assert server_processes(tmp_path) == [stubborn.pid]  # not the one of another home
        report = stop_servers(tmp_path, timeout=10, kill_after=0.5)
        assert report.stopped == report.forced == [stubborn.pid] and not report.still_running
        assert stubborn.wait(timeout=5) == -signal.SIGKILL
        assert other_home.poll() is None
    finally:
        for process in (stubborn, other_home):
            process.kill()
            process.wait()


def test_a_server_still_running_is_reported_with_a_non_zero_exit(cli, monkeypatch):
    from cems_cli.server import daemon

    monkeypatch.setattr(daemon, "stop_servers", lambda home: daemon.Stopped(stopped=[11], still_running=[12]))
    result = cli("serve", "--stop")
    assert result.code == 1
    assert "stopped the search server (pid 11)" in result.stdout
    assert "error: a search server still runs: pid 12" in result.stderr
    result = cli("serve", "--stop", "--json")
    assert result.code == 1 and result.json()["still_running"] == [12] and result.json()["running"] is True


def test_only_a_serving_cems_serve_counts_as_a_server():
    from cems_cli.server.daemon import _is_cli_server

    assert _is_cli_server([b"/v/bin/python", b"/v/bin/cems", b"serve", b"--idle-timeout", b"5"])
    assert _is_cli_server([b"python", b"-m", b"cems_cli.cli.app", b"serve"])
    assert not _is_cli_server([b"/v/bin/cems", b"serve", b"--stop"])  # asking, not serving
    assert not _is_cli_server([b"python", b"-m", b"pytest", b"/src/cems/tests", b"-k", b"serve"])

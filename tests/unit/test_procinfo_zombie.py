"""A child that exited but was not reaped is not alive: waiting for a stopped server must not wait for its
zombie (a long-lived parent such as the CLI run in-process, or a test runner, keeps it until it reaps)."""

from __future__ import annotations

import os
import sys
import time

import pytest

from cems_cli.plumbing import procinfo, procs


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs /proc")
def test_an_unreaped_child_is_not_alive():
    pid = os.posix_spawn("/bin/true", ["/bin/true"], dict(os.environ))
    try:
        deadline = time.monotonic() + 10
        while procinfo.alive(pid) and time.monotonic() < deadline:
            time.sleep(0.02)
        os.kill(pid, 0)  # still there for the kernel: a zombie
        assert not procinfo.alive(pid)
    finally:
        os.waitpid(pid, 0)


def test_a_long_lived_caller_reaps_what_it_spawned():
    assert "threading" in sys.modules  # pytest's: a long-lived caller
    pid = procs.spawn_python("json.tool")
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return  # reaped: gone for the kernel too
        time.sleep(0.05)
    raise AssertionError(f"child {pid} was never reaped")

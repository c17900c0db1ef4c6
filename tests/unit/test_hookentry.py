"""`plumbing.hookentry`: the quick exit of the PreToolUse hook skips the interpreter's teardown only when
nothing is left for it to do."""

from __future__ import annotations

import subprocess
import sys
import threading

import pytest

from cems_cli.plumbing import hookentry


class _Exited(Exception):
    pass


def _run(code: str) -> subprocess.CompletedProcess[str]:
    # In a child: the test process has pytest's threads and atexit clean-ups, which rightly force the
    # ordinary exit.
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)


# An object whose finaliser runs in the interpreter's teardown, and only there.
_TORN_DOWN = "class T:\n    def __del__(self): print('torn down')\nt = T()\n"


def test_quick_exit_skips_the_teardown_when_nothing_needs_it():
    done = _run(_TORN_DOWN + "from cems_cli.plumbing.hookentry import _exit\n_exit(0)")
    assert done.returncode == 0 and done.stdout == ""
    done = _run(_TORN_DOWN + "import sys\nsys.exit(0)")
    assert done.stdout == "torn down\n"  # the ordinary exit, for comparison


@pytest.fixture
def exits(monkeypatch):
    calls: list[tuple[str, int]] = []

    def fake_os_exit(code: int) -> None:
        calls.append(("os._exit", code))
        raise _Exited

    monkeypatch.setattr("os._exit", fake_os_exit)
    return calls


def test_a_running_thread_gets_the_ordinary_exit(exits):
    release = threading.Event()
    worker = threading.Thread(target=release.wait)
    worker.start()
    try:
        with pytest.raises(SystemExit) as raised:
            hookentry._exit(0)
        assert raised.value.code == 0 and exits == []
    finally:
        release.set()
        worker.join()


def test_an_atexit_clean_up_gets_the_ordinary_exit():
    code = ("import atexit, sys; atexit.register(lambda: print('cleaned up')); "
            "from cems_cli.plumbing.hookentry import _exit; print('answer', end=' ', flush=False); _exit(3)")
    done = _run(code)
    assert done.returncode == 3 and done.stdout == "answer cleaned up\n"


def test_the_quick_exit_flushes_the_answer():
    code = ("import sys; from cems_cli.plumbing.hookentry import _exit; "
            "sys.stdout.write('{\"answer\": 1}'); _exit(0)")
    done = _run(code)
    assert done.returncode == 0 and done.stdout == '{"answer": 1}'

"""What `cems ui` stands on: the change log (sql/025), the rule firing counts the PreToolUse hook
keeps, hooks that import no web package, and the `cems ui` command itself (prints its address, stops when
idle, names a taken port)."""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.integration.test_pre_tool_use_hook import bash, run_hook, set_rules

REPO = Path(__file__).resolve().parents[2]


# --- changes ----------------------------------------------------------------------------------------------

def test_writes_are_logged_as_ids_and_nothing_is_sent(env):
    import cems
    from cems_cli.store.changes import Change, ChangeReader
    from cems_cli.store.db import connect

    with cems.open() as memory, connect(memory.settings) as listener, connect(memory.settings) as polling:
        # The channel the store once sent every memory's id on: nothing comes on it any more.
        listener.execute("LISTEN cems_memories")
        reader = ChangeReader(polling)
        secret_text = "The deploy key rotation happens on Fridays"
        memory_id = memory.remember(secret_text, category="decisions").id
        assert reader.poll() == [Change("insert", memory_id)]
        memory.search("deploy key rotation")  # an access: counted, not a change
        assert reader.poll() == []
        memory.pin(memory_id)
        memory.forget(memory_id)
        memory.restore(memory_id)
        assert reader.poll() == [Change("update", memory_id)]  # one per id, whatever happened to it
        memory.forget(memory_id, purge=True)
        assert reader.poll() == [Change("delete", memory_id)]
        rows = [{"content": f"bulk memory number {i}", "category": "general"} for i in range(120)]
        memory.import_records(rows)
        assert reader.poll() == [Change("bulk", None)]
        assert reader.poll() == []  # what was read is not read again
        assert list(listener.notifies(timeout=0.5, stop_after=1)) == []


def test_a_change_committed_after_a_later_one_is_still_read(env):
    """The reader's cursor is a snapshot's oldest running transaction, not the last change it saw: a write
    that commits after a later-begun one has (its change numbered first) is read all the same."""
    import cems
    from cems_cli.store.changes import Change, ChangeReader
    from cems_cli.store.db import connect

    with cems.open() as memory, connect(memory.settings) as slow, connect(memory.settings) as polling:
        reader = ChangeReader(polling)
        with slow.transaction():
            early = memory.remember("written first, committed second", category="general").id  # (autocommit)
            slow.execute("UPDATE memory_documents SET pinned = true WHERE id = %s", (early,))
            later = memory.remember("written second, committed first", category="general").id
            assert reader.poll() == [Change("insert", early), Change("insert", later)]
        assert reader.poll() == [Change("update", early)]


def test_changes_stream_until_stopped(env):
    import cems

    with cems.open() as memory, cems.open() as writer:
        stop = threading.Event()
        seen: list[tuple[str, str | None]] = []

        def listen() -> None:
            for change in memory.changes(stop):
                seen.append((change.op, change.id))
                stop.set()

        thread = threading.Thread(target=listen)
        thread.start()
        time.sleep(1.0)  # the reader has its cursor (the connection opens and migrates first)
        made = writer.remember("A memory stored by another connection", category="general").id
        thread.join(timeout=10)
        assert seen == [("insert", made)]


# --- rule firings -------------------------------------------------------------------------------------------

def test_the_hook_counts_each_rule_that_fires_and_nothing_else(tmp_path):
    from cems_cli.rules.hits import FILE_NAME, counts
    from cems_cli.rules.model import make_rule

    home = tmp_path / "home"
    home.mkdir()
    set_rules(home, make_rule("git push --force*", "Bash", reason="history", id="r1"),
              make_rule("terraform apply*", "Bash", action="ask", id="r2"))
    run_hook(home, bash("git status"))
    assert not (home / FILE_NAME).exists()  # a call no rule concerns writes nothing
    for command in ("git push --force", "git push --force origin", "terraform apply"):
        assert run_hook(home, bash(command)).answer is not None
    assert counts(str(home)) == {"r1": {"block": 2}, "r2": {"ask": 1}}
    assert stat.S_IMODE((home / FILE_NAME).stat().st_mode) == 0o600


def test_rule_counts_skip_garbage_lines(tmp_path):
    from cems_cli.rules.hits import FILE_NAME, counts, record

    (tmp_path / FILE_NAME).write_text("junk\n1 explode r9\n\n")
    record(str(tmp_path), "r1", "warn", 5.0)
    assert counts(str(tmp_path)) == {"r1": {"warn": 1}}
    assert counts(str(tmp_path / "missing")) == {}


def test_a_fifo_in_place_of_the_log_neither_hangs_the_hook_nor_lifts_the_block(tmp_path):
    """Opening a FIFO for writing waits for a reader: a hook stuck there times out and the agent's tool
    runs, so whoever can make `rule-hits.log` a FIFO (the agent, through a path the guard misses) would
    lift every block. The count is skipped instead, and the answer is given at once."""
    from cems_cli.rules.hits import FILE_NAME, counts, record
    from cems_cli.rules.model import make_rule
    from tests.integration.test_pre_tool_use_hook import HOOK, hook_env

    home = tmp_path / "home"
    home.mkdir()
    set_rules(home, make_rule("git push --force*", "Bash", reason="history", id="r1"))
    os.mkfifo(home / FILE_NAME, 0o600)
    started = time.monotonic()
    proc = subprocess.run([sys.executable, str(HOOK)], input=json.dumps(bash("git push --force")).encode(),
                          capture_output=True, env=hook_env(home), cwd=str(tmp_path), timeout=20)
    assert json.loads(proc.stdout)["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert time.monotonic() - started < 10
    record(str(home), "r1", "block", 5.0)  # and the library's own calls return too
    assert counts(str(home)) == {}  # the viewer's rules page would wait for a writer
    assert stat.S_ISFIFO((home / FILE_NAME).lstat().st_mode)


# --- no web package in the hooks or the CLI's start ------------------------------------------------------

def test_hooks_and_the_cli_import_no_web_package():
    code = (
        "import sys\n"
        "import cems_cli.hookhandlers.pre_tool_use, cems_cli.hookhandlers.post_tool_use\n"
        "import cems_cli.hookhandlers.user_prompt_submit, cems_cli.hookhandlers.session_start\n"
        "import cems_cli.hookhandlers.stop, cems_cli.cli.app\n"
        "web = sorted(m for m in sys.modules if m.split('.')[0] in "
        "('starlette', 'uvicorn', 'jinja2', 'sse_starlette', 'cems_cli.ui') or m.startswith('cems_cli.ui'))\n"
        "print(web)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=REPO)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


# --- the command ---------------------------------------------------------------------------------------

def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _start(env: dict[str, str], *args: str, **extra: str) -> subprocess.Popen[str]:
    full = {k: v for k, v in os.environ.items() if not k.startswith("CEMS_")}
    full.update(env, **extra)
    return subprocess.Popen([sys.executable, "-m", "cems_cli.cli.app", "ui", *args], env=full, cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=_as_in_a_terminal)


def _as_in_a_terminal() -> None:
    # A test run started in the background (CI, `make test &`) ignores SIGINT, and a child inherits that:
    # the viewer, like any program there, would then never see Ctrl-C. In a terminal it is the default.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _first_line(proc: subprocess.Popen[str], timeout: float = 60.0) -> str:
    assert proc.stdout is not None
    ready, _, _ = select.select([proc.stdout], [], [], timeout)
    assert ready, "cems ui printed nothing"
    return proc.stdout.readline()


def test_cems_ui_prints_a_token_url_serves_it_and_stops_when_idle(env):
    import urllib.error
    import urllib.request

    port = _free_port()
    proc = _start(env, "--no-browser", "--port", str(port), CEMS_UI_IDLE_SECONDS="3")
    try:
        line = _first_line(proc)
        assert line.startswith(f"CEMS viewer on http://127.0.0.1:{port}/?token="), line
        url = line.split()[-1]
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/memories", timeout=10)
        assert refused.value.code == 401

        class Keep(urllib.request.HTTPRedirectHandler):
            def redirect_request(self, *args, **kwargs):  # type: ignore[no-untyped-def]
                return None

        with pytest.raises(urllib.error.HTTPError) as redirected:
            urllib.request.build_opener(Keep).open(url, timeout=10)
        assert redirected.value.code == 303 and "HttpOnly" in redirected.value.headers["set-cookie"]
        assert proc.wait(timeout=30) == 0  # idle for 3 s: it stopped by itself
        assert "stopping: idle" in proc.stdout.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def _wait_until_serving(port: int, timeout: float = 60.0) -> None:
    import urllib.error
    import urllib.request

    deadline = time.monotonic() + timeout
    while True:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5)
            return
        except urllib.error.HTTPError:
            return  # answered (401 without the token): serving
        except OSError:
            assert time.monotonic() < deadline, "cems ui never answered"
            time.sleep(0.1)


def test_cems_ui_stops_on_ctrl_c_and_names_a_taken_port(env):
    port = _free_port()
    proc = _start(env, "--no-browser", "--port", str(port))
    try:
        _first_line(proc)
        _wait_until_serving(port)  # the address is printed before the server takes over SIGINT
        second = _start(env, "--no-browser", "--port", str(port))
        out, err = second.communicate(timeout=60)
        assert second.returncode == 2 and err.count("\n") == 1, err  # one line, as for any bad input
        assert f"cannot listen on 127.0.0.1:{port}" in err and "--port" in err
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=30) == 130  # stopped by Ctrl-C, as a shell reports it
        assert proc.stderr is not None and "Traceback" not in proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_cems_ui_refuses_a_bad_port_and_idle_value(env):
    bad_port = _start(env, "--no-browser", "--port", "70000")
    _, err = bad_port.communicate(timeout=60)
    assert bad_port.returncode == 2 and "--port" in err
    bad_idle = _start(env, "--no-browser", "--port", str(_free_port()), CEMS_UI_IDLE_SECONDS="soon")
    _, err = bad_idle.communicate(timeout=60)
    assert bad_idle.returncode == 2 and "CEMS_UI_IDLE_SECONDS" in err


def test_cems_ui_without_the_web_extra_names_the_install_line(cli, monkeypatch):
    monkeypatch.setitem(sys.modules, "uvicorn", None)  # what an install without the extra looks like
    result = cli("ui", "--no-browser")
    assert result.code == 1
    assert "pip install 'cems[ui]'" in result.stderr and "missing: uvicorn" in result.stderr
    assert result.stderr.count("\n") == 1


def test_the_browser_is_opened_on_a_private_page_never_on_the_token(env, tmp_path):
    """$BROWSER gets the launch page's path; the page (0600, in the private run folder) holds the token in
    a sign-in form and is gone when the viewer stops."""
    seen = tmp_path / "browser-args"
    fake = tmp_path / "fake-browser"
    fake.write_text(f"#!/bin/sh\necho \"$@\" > {seen}\ncat \"${{1#file://}}\" >> {seen}\n")
    fake.chmod(0o700)
    port = _free_port()
    proc = _start(env, "--port", str(port), BROWSER=str(fake), CEMS_UI_IDLE_SECONDS="4")
    try:
        token = _first_line(proc).split("token=")[1].strip()
        deadline = time.monotonic() + 20
        while not (seen.exists() and token in seen.read_text()) and time.monotonic() < deadline:
            time.sleep(0.1)
        argument, page = seen.read_text().split("\n", 1)
        assert token not in argument and argument.startswith("file://")
        # The page POSTs the token to /signin: it is in a form field, in no address.
        assert f'name="token" value="{token}"' in page and "/signin" in page and "?token=" not in page
        launch = Path(argument.removeprefix("file://"))
        assert stat.S_IMODE(launch.stat().st_mode) == 0o600
        assert stat.S_IMODE(launch.parent.stat().st_mode) == 0o700
        assert proc.wait(timeout=30) == 0
        assert not launch.exists()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()

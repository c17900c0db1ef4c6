"""`cems ui`: serve the viewer on 127.0.0.1, print its address with a fresh token, open the browser, and
stop on Ctrl-C or after CEMS_UI_IDLE_SECONDS (default 30 minutes, like `cems serve`) without a request."""

from __future__ import annotations

import contextlib
import os
import secrets
import socket
import threading
import time
from collections.abc import Callable
from pathlib import Path

from cems_cli.api import Memory, UserError

DEFAULT_IDLE_SECONDS = 1800.0
# Per-user default port: 10000 + uid mod 20000, under Linux's ephemeral range (32768+), so two users of one
# machine get different ports and the same user always gets the same one (uid 1000 → 11000).
PORT_BASE, PORT_SPAN = 10000, 20000


WEB_PACKAGES = ("starlette", "uvicorn", "jinja2", "sse_starlette")


def missing_packages() -> list[str]:
    """The `ui` extra's packages this Python cannot import (the command names the install line)."""
    import importlib

    missing = []
    for name in WEB_PACKAGES:
        try:
            importlib.import_module(name)
        except ImportError:
            missing.append(name)
    return missing


def default_port(uid: int | None = None) -> int:
    return PORT_BASE + (os.getuid() if uid is None else uid) % PORT_SPAN


def idle_seconds() -> float:
    raw = os.environ.get("CEMS_UI_IDLE_SECONDS", "").strip()
    if not raw:
        return DEFAULT_IDLE_SECONDS
    try:
        value = float(raw)
    except ValueError:
        raise UserError(f"CEMS_UI_IDLE_SECONDS must be a number of seconds, not {raw[:40]!r}") from None
    if value <= 0:
        raise UserError("CEMS_UI_IDLE_SECONDS must be more than 0")
    return value


def bind(port: int) -> socket.socket:
    """The listening socket on 127.0.0.1 only; a one-line UserError when the port is taken."""
    if not 0 <= port <= 65535:  # 0: any free port (tests)
        raise UserError(f"--port must be between 1 and 65535, not {port}")
    # IPPROTO_TCP, not 0: asyncio sets TCP_NODELAY on the connections only of a socket that names it, and
    # without it every page waited ~40 ms for a delayed ACK (measured: 45 ms → 3 ms a request).
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(("127.0.0.1", port))
    except OSError as error:
        sock.close()
        raise UserError(f"cannot listen on 127.0.0.1:{port} ({error.strerror}): is `cems ui` already "
                        "running? Pass --port to choose another") from None
    sock.listen(64)
    sock.set_inheritable(False)
    return sock


def launch_file(home: Path, port: int, token: str) -> Path:
    """An owner-only page that signs the browser in: the browser is given this file's path, so the token
    never appears in a command line another local user can read (`ps`), and the page POSTs it to /signin,
    so it never appears in an address the browser keeps in its history either (security.py)."""
    from html import escape

    from cems_cli.plumbing.private_dir import private_dir
    from cems_cli.ui.security import SIGN_IN_PATH

    run = private_dir(home / "run", os.geteuid(), os.getegid(), purpose="the viewer's launch page",
                      tighten=True)
    path = run / "ui-open.html"
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW
    fd = os.open(path, flags, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        action = escape(f"http://127.0.0.1:{port}{SIGN_IN_PATH}", quote=True)
        out.write('<!doctype html><meta charset="utf-8"><meta name="referrer" content="no-referrer">'
                  f'<title>CEMS</title><form method="post" action="{action}">'
                  f'<input type="hidden" name="token" value="{escape(token, quote=True)}">'
                  '<button>Open CEMS</button></form><script>document.forms[0].submit()</script>\n')
    os.chmod(path, 0o600)
    return path


def open_browser(target: str) -> bool:
    """The user's browser on `target` ($BROWSER, else xdg-open or macOS `open`), through procs.run."""
    import shlex
    import shutil

    from cems_cli.plumbing.procs import run

    chosen = os.environ.get("BROWSER", "").split(os.pathsep)[0].strip()
    argv = shlex.split(chosen) if chosen else []
    if not argv:
        opener = shutil.which("xdg-open") or shutil.which("open")
        if opener is None:
            return False
        argv = [opener]
    try:
        return run([*argv, target], timeout=20).returncode == 0
    except Exception:  # a browser that cannot start: the printed address still works
        return False


def serve(memory: Memory, *, port: int, browser: bool, say: Callable[[str], None],
          idle: float | None = None) -> None:
    import uvicorn

    from cems_cli.ui.app import create_app

    memory.status()  # the store answers before the address is printed (a one-line error otherwise)
    limit = idle_seconds() if idle is None else idle
    sock = bind(port)
    token = secrets.token_urlsafe(32)
    app = create_app(memory, token=token, port=port)
    viewer = app.state.viewer
    url = f"http://127.0.0.1:{port}/?token={token}"
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on",
                                           timeout_graceful_shutdown=2))
    say(f"CEMS viewer on {url}")
    say(f"Ctrl-C stops it; it stops by itself after {limit / 60:g} minutes without a request.")

    def watch() -> None:
        # Warm the model beside the first page (a list needs none; the first search would wait for it).
        with contextlib.suppress(Exception):
            viewer.run(memory.warm_up)
        while not server.should_exit:
            time.sleep(min(1.0, limit))
            if time.monotonic() - viewer.last_request > limit:
                say("stopping: idle")
                server.should_exit = True

    threading.Thread(target=watch, name="cems-ui-idle", daemon=True).start()
    page = launch_file(memory.settings.home, port, token) if browser else None
    if page is not None:
        threading.Thread(target=open_browser, args=(page.as_uri(),), daemon=True).start()
    try:
        server.run(sockets=[sock])
    finally:
        sock.close()
        if page is not None:  # its token dies with this server; the file goes with it
            with contextlib.suppress(OSError):
                page.unlink()

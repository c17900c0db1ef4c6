"""Client side of the search server: stdlib only, because hooks import it on every prompt.

One request per connection: a JSON object on one line, answered by a JSON object on one line.
"""

from __future__ import annotations

import hashlib
import os
import socket
import subprocess
import sys
import time

SOCKET_NAME = "cems.sock"
_MAX_SOCKET_PATH = 100  # sun_path is 108 bytes on Linux; keep a margin


def socket_path(home: str) -> str:
    """`$CEMS_HOME/run/cems.sock`, or a short path under /tmp when that would be too long for a socket."""
    path = os.path.join(home, "run", SOCKET_NAME)
    if len(path.encode()) <= _MAX_SOCKET_PATH:
        return path
    digest = hashlib.sha1(os.path.abspath(home).encode()).hexdigest()[:16]
    return os.path.join("/tmp", f"cems-{os.getuid()}-{digest}.sock")


def call(home: str, request: dict, timeout: float) -> dict | None:
    """Send one request; None if the server is not there, too slow, or answered nonsense."""
    from cems_cli.hookio import json_dumps, json_loads

    path = socket_path(home)
    if timeout <= 0 or not os.path.exists(path):
        return None
    deadline = time.monotonic() + timeout
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(timeout)
            sock.connect(path)
            sock.sendall(json_dumps(request).encode("utf-8") + b"\n")
            chunks: list[bytes] = []
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return None
                sock.settimeout(remaining)
                chunk = sock.recv(65536)
                if not chunk:
                    break
                chunks.append(chunk)
                if chunk.endswith(b"\n"):
                    break
    except OSError:
        return None
    try:
        answer = json_loads(b"".join(chunks).decode("utf-8", errors="replace"))
    except ValueError:
        return None
    return answer if isinstance(answer, dict) else None


def spawn(home: str) -> None:
    """Start the server in the background (it refuses politely if one already runs)."""
    env = dict(os.environ)
    env["CEMS_HOME"] = home
    try:
        subprocess.Popen(
            [sys.executable, "-m", "cems_cli.server.daemon"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            close_fds=True,
            env=env,
        )
    except OSError:
        pass


def call_or_start(home: str, request: dict, budget: float) -> dict | None:
    """Ask the server; if it is down, start it and keep asking until `budget` seconds have passed."""
    deadline = time.monotonic() + budget
    answer = call(home, request, budget)
    if answer is not None:
        return answer
    if not os.path.exists(socket_path(home)) or call(home, {"op": "ping"}, 0.2) is None:
        spawn(home)
    while (remaining := deadline - time.monotonic()) > 0.05:
        time.sleep(min(0.1, remaining))
        if os.path.exists(socket_path(home)):
            answer = call(home, request, deadline - time.monotonic())
            if answer is not None:
                return answer
    return None

"""Client side of the search server: stdlib only, because hooks import it on every prompt.

One request per connection: a JSON object on one line, answered by a JSON object on one line.

The socket is private (assume a hostile second user on the machine): it lives in a folder CEMS creates 0700
and the client connects only when that folder is still ours and closed to others, then asks the kernel who
is listening (SO_PEERCRED) and talks only to a server of its own uid. Anything else counts as "no server":
the hooks fall back to what they do when none runs.
"""

from __future__ import annotations

# The C module under `socket`, not `socket` itself: socket.py imports selectors, enum members for every
# constant and more, ~5 ms of every prompt hook's start measured here, for what four calls need.
import _socket
import os
import sys
import time

SOCKET_NAME = "cems.sock"
SERVER_MODULE = "cems_cli.server.daemon"
_MAX_SOCKET_PATH = 100  # sun_path is 108 bytes on Linux; keep a margin


def socket_dir(home: str) -> str:
    """`$CEMS_HOME/run`, or a short private folder of this user (plumbing/private_dir.short_dir) when a
    socket path in it would be too long."""
    run = os.path.join(home, "run")
    if len(os.fsencode(os.path.join(run, SOCKET_NAME))) <= _MAX_SOCKET_PATH:
        return run
    from cems_cli.plumbing.private_dir import short_dir

    return str(short_dir("search-server\0" + os.path.abspath(home)))


def socket_path(home: str) -> str:
    return os.path.join(socket_dir(home), SOCKET_NAME)


def peer_uid(sock: _socket.socket) -> int | None:
    """The uid of the process at the other end of a connected Unix socket (None where the platform has
    no SO_PEERCRED: there the private folder is the only guard)."""
    option = getattr(_socket, "SO_PEERCRED", None)
    if option is None:
        return None
    # struct ucred {pid_t pid; uid_t uid; gid_t gid;}: three native ints, the uid second.
    raw = sock.getsockopt(_socket.SOL_SOCKET, option, 12)
    return int.from_bytes(raw[4:8], sys.byteorder, signed=True)


def _trusted_server(sock: _socket.socket) -> bool:
    uid = peer_uid(sock)
    return uid is None or uid == os.geteuid()


def call(home: str, request: dict, timeout: float) -> dict | None:
    """Send one request; None if the server is not there, not ours, too slow, or answered nonsense."""
    from cems_cli.plumbing.hookio import json_dumps, json_loads
    from cems_cli.plumbing.private_dir import problem

    path = socket_path(home)
    if timeout <= 0 or not os.path.exists(path):
        return None
    if problem(os.path.dirname(path), os.geteuid()) is not None:
        return None  # someone else's folder, or one others could write to: the socket may be a squatter's
    deadline = time.monotonic() + timeout
    try:
        sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    except OSError:
        return None
    try:
        sock.settimeout(timeout)
        while True:
            try:
                sock.connect(path)
                break
            except BlockingIOError:
                # The server's queue of connections not yet accepted is full (a burst of hooks, a loaded
                # machine): a Unix socket's connect fails at once then, whatever the timeout. Try again.
                if time.monotonic() >= deadline:
                    return None
                time.sleep(0.002)
        if not _trusted_server(sock):
            return None  # never send a prompt to, nor inject what comes from, another user's process
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
    finally:
        sock.close()
    try:
        answer = json_loads(b"".join(chunks).decode("utf-8", errors="replace"))
    except ValueError:
        return None
    return answer if isinstance(answer, dict) else None


def spawn(home: str) -> None:
    """Start the server in the background (it refuses politely if one already runs), isolated from the
    folder the hook runs in (cems_cli.plumbing.procs: that folder is the agent's repository)."""
    from cems_cli.plumbing.procs import child_env, spawn_python

    try:
        spawn_python(SERVER_MODULE, env=child_env({"CEMS_HOME": os.path.abspath(home)}))
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

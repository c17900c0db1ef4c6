"""A burst of hooks fills the search server's queue of connections not yet accepted; a Unix socket's connect
then fails at once (EAGAIN), whatever its timeout. The client tries again until its deadline."""

from __future__ import annotations

import json
import os
import socket
import threading
import time

from cems_cli.server.client import call, socket_path


def test_a_full_queue_delays_the_answer_and_loses_it_never(tmp_path):
    home = str(tmp_path)
    path = socket_path(home)
    os.makedirs(os.path.dirname(path), mode=0o700)
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen(1)
    server.settimeout(5.0)
    # Queued and never answered: the queue is full (a backlog of 1 holds two on Linux).
    waiting = []
    for _ in range(8):
        other = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        other.setblocking(False)
        try:
            other.connect(path)
        except BlockingIOError:
            other.close()
            break
        waiting.append(other)
    else:
        raise AssertionError("the queue never filled")

    def serve() -> None:
        time.sleep(0.3)
        for _ in waiting:
            server.accept()[0].close()
        try:
            connection, _ = server.accept()
        except TimeoutError:
            return  # the client gave up: the test has failed already
        with connection:
            connection.recv(65536)
            connection.sendall(json.dumps({"ok": True}).encode() + b"\n")

    thread = threading.Thread(target=serve)
    thread.start()
    try:
        assert call(home, {"op": "ping"}, 10.0) == {"ok": True}
    finally:
        thread.join()
        server.close()
        for other in waiting:
            other.close()


def test_a_full_queue_past_the_deadline_is_no_server(tmp_path):
    home = str(tmp_path)
    path = socket_path(home)
    os.makedirs(os.path.dirname(path), mode=0o700)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as server:
        server.bind(path)
        server.listen(0)
        waiting = []
        while True:
            other = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            other.setblocking(False)
            try:
                other.connect(path)
            except BlockingIOError:
                other.close()
                break
            waiting.append(other)
        started = time.monotonic()
        assert call(home, {"op": "ping"}, 0.3) is None
        assert time.monotonic() - started < 2.0
        for other in waiting:
            other.close()

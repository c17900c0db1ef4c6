"""The warm search server (`cems serve`) is private to its user: its socket lives in a folder CEMS creates
0700 and checks, for any CEMS_HOME length; the client talks only to a server of its own uid (SO_PEERCRED) and
the server only to clients of its uid. Two real OS users: tests/integration/test_two_users.py."""

from __future__ import annotations

import json
import os
import socket
import stat
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from cems_cli.server import client
from tests.conftest import cems_subprocess


class FakeServer:
    """Answers every connection with one JSON line, as a search server (or a squatter posing as one) would."""

    def __init__(self, path: str) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(path)
        self.sock.listen(8)
        self.received: list[bytes] = []
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                conn.settimeout(2)
                try:
                    self.received.append(conn.recv(65536))
                    conn.sendall(b'{"results": [{"content": "injected by a squatter"}], "pid": 1}\n')
                except OSError:
                    pass

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def fake_at() -> Iterator:
    servers: list[FakeServer] = []

    def start(path: str) -> FakeServer:
        servers.append(FakeServer(path))
        return servers[-1]

    yield start
    for server in servers:
        server.close()


def _home(tmp_path: Path, name: str = "home") -> Path:
    home = tmp_path / name
    home.mkdir(mode=0o700)
    return home


def test_the_client_talks_to_its_own_server_in_a_private_folder(tmp_path, fake_at):
    home = _home(tmp_path)
    from cems_cli.server.daemon import prepare_socket_dir

    folder = prepare_socket_dir(home)
    assert folder == home / "run" and stat.S_IMODE(folder.stat().st_mode) == 0o700
    server = fake_at(client.socket_path(str(home)))
    assert client.call(str(home), {"op": "ping"}, 2.0) == {
        "results": [{"content": "injected by a squatter"}], "pid": 1
    }
    assert server.received  # sanity: the same set-up with a foreign server or open folder is refused below


def test_a_socket_in_a_folder_others_can_write_to_is_never_used(tmp_path, fake_at):
    home = _home(tmp_path)
    run = home / "run"
    run.mkdir()
    run.chmod(0o777)  # anyone could have bound (or swapped in) the socket
    server = fake_at(client.socket_path(str(home)))
    assert client.call(str(home), {"op": "search", "query": "my private prompt"}, 1.0) is None
    assert server.received == []  # the prompt never left


def test_a_server_of_another_uid_is_refused(tmp_path, fake_at, monkeypatch):
    home = _home(tmp_path)
    from cems_cli.server.daemon import prepare_socket_dir

    prepare_socket_dir(home)
    server = fake_at(client.socket_path(str(home)))
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:  # the kernel's answer, first
        sock.connect(client.socket_path(str(home)))
        assert client.peer_uid(sock) == os.geteuid()
    monkeypatch.setattr(client, "peer_uid", lambda sock: os.geteuid() + 1)  # as root's or another user's
    assert client.call(str(home), {"op": "search", "query": "my private prompt"}, 1.0) is None
    assert all(b"private prompt" not in data for data in server.received)


def test_the_server_drops_clients_of_another_uid(tmp_path, monkeypatch):
    from cems_cli.server import daemon

    class Service:  # `ping` needs no database
        pass

    path = str(_home(tmp_path) / "s.sock")
    server = daemon.SearchServer(path, Service())
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        home = str(tmp_path / "home")
        monkeypatch.setattr(client, "socket_path", lambda _home: path)
        assert client.call(home, {"op": "ping"}, 2.0) == {"ok": True, "pid": os.getpid()}
        monkeypatch.setattr(daemon, "peer_uid", lambda sock: os.geteuid() + 1)
        assert client.call(home, {"op": "ping"}, 2.0) is None  # connection closed without an answer
    finally:
        server.shutdown()
        server.server_close()


def test_an_existing_run_folder_is_checked(tmp_path):
    from cems_cli.plumbing.private_dir import NotPrivate
    from cems_cli.server.daemon import prepare_socket_dir

    readable = _home(tmp_path, "readable")
    (readable / "run").mkdir()
    (readable / "run").chmod(0o755)  # an earlier version under a 022 umask: others could read, not write
    assert stat.S_IMODE(prepare_socket_dir(readable).stat().st_mode) == 0o700

    writable = _home(tmp_path, "writable")
    (writable / "run").mkdir()
    (writable / "run").chmod(0o773)
    with pytest.raises(NotPrivate, match="open to other users"):
        prepare_socket_dir(writable)

    linked = _home(tmp_path, "linked")
    (linked / "run").symlink_to(writable / "run")
    with pytest.raises(NotPrivate, match="not a plain folder"):
        prepare_socket_dir(linked)


def test_cems_serve_refuses_an_open_folder_with_a_clear_message(tmp_path):
    home = _home(tmp_path)
    (home / "run").mkdir()
    (home / "run").chmod(0o777)
    result = cems_subprocess(["serve", "--daemon"], {"CEMS_HOME": str(home), "CEMS_USER": "u"}, timeout=60)
    assert result.returncode == 1
    message = result.stderr.decode()
    assert "open to other users" in message and "refusing to use it for the search server's socket" in message
    assert len(message.strip().splitlines()) == 1


@pytest.mark.skipif(not hasattr(socket, "SO_PEERCRED"), reason="Linux only")
def test_a_long_home_gets_a_short_private_socket_folder(tmp_path, env):
    """A CEMS_HOME too deep for a socket path: a short folder of this user (under $XDG_RUNTIME_DIR or the
    temporary folder), 0700 and checked, never a predictable name in a folder everyone writes to."""
    from cems_cli.store.embedded import ensure_server

    home = tmp_path / ("h" * 60) / ("o" * 60) / "home"
    database = ensure_server(Path(env["CEMS_HOME"]) / "pg").conninfo()  # the session's: no new cluster
    served = {**env, "CEMS_HOME": str(home), "CEMS_DATABASE_URL": database}
    started = cems_subprocess(["serve", "--daemon", "--json"], served)
    try:
        assert started.returncode == 0, started.stderr.decode()
        path = Path(client.socket_path(str(home)))
        assert len(os.fsencode(str(path))) <= 100
        assert not str(path).startswith(str(home))
        for folder in (path.parent, path.parent.parent):  # the socket's folder, and its per-user parent
            info = os.lstat(folder)
            assert stat.S_ISDIR(info.st_mode) and info.st_uid == os.geteuid(), folder
            assert not info.st_mode & (0o066 if folder == path.parent.parent else 0o077), oct(info.st_mode)
        assert stat.S_ISSOCK(os.lstat(path).st_mode)
        answer = client.call(str(home), {"op": "ping"}, 5.0)
        assert answer is not None and answer["pid"] == json.loads(started.stdout)["pid"]
    finally:
        stopped = cems_subprocess(["serve", "--stop"], served)
        assert stopped.returncode == 0, stopped.stderr.decode()

"""Two real OS users on one machine: the second one gets nothing out of the first one's CEMS.

Runs as root only (CI does): a throwaway user is created with useradd, tries, and is removed. It must not
connect to the embedded PostgreSQL's socket, read any file under CEMS_HOME (even where the first user opened
the folders), talk to the warm search server, or pose as it. Single-user checks of the same rules:
test_embedded_server_private.py, test_private_files.py, test_search_server_private.py.
"""

from __future__ import annotations

import contextlib
import json
import os
import pwd
import secrets
import shutil
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import FAST_EMBEDDER, cems_subprocess

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("useradd") is None, reason="needs root (and useradd) for a second user"
)


@dataclass
class Other:
    name: str
    uid: int
    gid: int
    python: str

    def run(self, code: str, *args: str, timeout: float = 30) -> dict:
        """Run stdlib-only `code` as this user; it prints one JSON document."""
        result = subprocess.run(
            [self.python, "-I", "-c", code, *args],
            user=self.uid, group=self.gid, extra_groups=[], cwd="/", env={"PATH": "/usr/bin:/bin"},
            capture_output=True, text=True, timeout=timeout,
        )
        assert result.returncode == 0, result.stderr
        return json.loads(result.stdout)

    def popen(self, code: str, *args: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [self.python, "-I", "-c", code, *args],
            user=self.uid, group=self.gid, extra_groups=[], cwd="/", env={"PATH": "/usr/bin:/bin"},
            stdout=subprocess.PIPE, text=True,
        )


@pytest.fixture(scope="module")
def other() -> Iterator[Other]:
    name = f"cems2u{secrets.token_hex(4)}"
    created = subprocess.run(
        ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", name],
        capture_output=True, text=True,
    )
    if created.returncode != 0:
        pytest.skip(f"useradd failed: {created.stderr.strip()}")
    try:
        entry = pwd.getpwnam(name)
        for python in (sys.executable, "/usr/bin/python3"):
            # The virtualenv's interpreter is often a link into root's own 0700 home (pyenv): the second user
            # cannot even start it, which subprocess reports as an exception rather than an exit code.
            try:
                ran = subprocess.run([python, "-I", "-c", "pass"], user=entry.pw_uid, group=entry.pw_gid,
                                     extra_groups=[], cwd="/", capture_output=True)
            except OSError:
                continue
            if ran.returncode == 0:
                break
        else:
            pytest.skip("no Python the second user may run")
        yield Other(name, entry.pw_uid, entry.pw_gid, python)
    finally:
        subprocess.run(["userdel", name], capture_output=True)


@dataclass
class FirstUser:
    home: Path
    env: dict[str, str]
    socket_dir: Path  # the embedded PostgreSQL's


@pytest.fixture(scope="module")
def first() -> Iterator[FirstUser]:
    """A CEMS_HOME in a folder everyone may pass through (/tmp/…, 0755), as a home directory often is:
    only what CEMS itself creates keeps the second user out."""
    from cems_cli.server.daemon import stop_server as stop_search_server
    from cems_cli.store.embedded import read_postmaster, stop_server

    base = Path(tempfile.mkdtemp(prefix="cems-2u-", dir="/tmp"))
    base.chmod(0o755)
    home = base / "home"
    env = {"CEMS_HOME": str(home), "CEMS_USER": "first-user", "CEMS_EMBEDDING_BACKEND": FAST_EMBEDDER}
    try:
        made = cems_subprocess(["remember", "The first user's deploy key lives in the vault.", "--json"], env)
        assert made.returncode == 0, made.stderr.decode()
        assert cems_subprocess(["search", "deploy key", "--json"], env).returncode == 0  # the query cache
        served = cems_subprocess(["serve", "--daemon", "--json"], env)
        assert served.returncode == 0, served.stderr.decode()
        state = read_postmaster(home / "pg")
        assert state is not None and state.socket_dir is not None
        yield FirstUser(home, env, state.socket_dir)
    finally:
        stop_search_server(home)
        stop_server(home / "pg")
        shutil.rmtree(base, ignore_errors=True)


_TRY_CONNECT = """
import json, socket, sys
out = {}
for path in sys.argv[1:]:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(5)
    try:
        s.connect(path)
    except OSError as error:
        out[path] = type(error).__name__
        s.close()
        continue
    try:  # connected: a server that drops us may close before or after our request is sent
        s.sendall(b'{"op": "search", "query": "deploy key", "limit": 5}\\n')
        data = s.recv(65536)
    except OSError:
        data = b""
    finally:
        s.close()
    out[path] = ("answered: " + data.decode(errors="replace")) if data else "no answer"
print(json.dumps(out))
"""

_TRY_READ = """
import json, sys
out = {}
for path in sys.argv[1:]:
    try:
        with open(path, "rb") as handle:
            out[path] = "read %d bytes" % len(handle.read(1 << 20))
    except OSError as error:
        out[path] = type(error).__name__
print(json.dumps(out))
"""


def _files(home: Path) -> list[str]:
    found = []
    for folder, _dirs, names in os.walk(home):
        for name in names:
            path = os.path.join(folder, name)
            if os.path.isfile(path) and not os.path.islink(path):
                found.append(path)
    return found


@contextlib.contextmanager
def _opened(paths: dict[Path, int]) -> Iterator[None]:
    """Give these paths these modes for a while (a user who opened their folders), then restore them."""
    before = {path: stat.S_IMODE(os.lstat(path).st_mode) for path in paths}
    try:
        for path, mode in paths.items():
            path.chmod(mode)
        yield
    finally:
        for path, mode in before.items():
            path.chmod(mode)


def test_the_second_user_cannot_reach_the_database_socket(first, other):
    socket_path = str(first.socket_dir / ".s.PGSQL.5432")
    assert other.run(_TRY_CONNECT, socket_path) == {socket_path: "PermissionError"}
    listing = other.run(_TRY_READ, str(first.socket_dir / ".s.PGSQL.5432.lock"))
    assert set(listing.values()) == {"PermissionError"}


def test_the_second_user_cannot_read_any_file_of_cems_home(first, other):
    files = _files(first.home)
    assert any(path.endswith("pg.pass") for path in files) and any("queries.db" in path for path in files)
    assert set(other.run(_TRY_READ, *files).values()) == {"PermissionError"}
    # Even with every folder opened for passing through (0711), each file is the first user's alone.
    folders = {Path(folder): 0o711 for folder, _d, _f in os.walk(first.home)}
    with _opened(folders):
        results = other.run(_TRY_READ, *files)
    assert set(results.values()) == {"PermissionError"}, results


def test_the_second_user_cannot_talk_to_the_search_server(first, other):
    from cems_cli.server.client import socket_path

    path = socket_path(str(first.home))
    assert os.path.exists(path)
    assert other.run(_TRY_CONNECT, path) == {path: "PermissionError"}  # the 0700 folder
    # With the folder and the socket opened by mistake, the server itself refuses the other uid
    # (SO_PEERCRED): the connection is closed without an answer.
    run = Path(path).parent
    with _opened({first.home: 0o711, run: 0o711, Path(path): 0o666}):
        assert other.run(_TRY_CONNECT, path) == {path: "no answer"}
    log = (first.home / "logs" / "server.log").read_text()
    assert f"refused a connection from uid {other.uid}" in log


_SQUATTER = """
import os, socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(sys.argv[1])
os.chmod(sys.argv[1], 0o666)
s.listen(4)
print("ready", flush=True)
s.settimeout(30)
while True:
    try:
        conn, _ = s.accept()
    except OSError:
        break
    conn.recv(65536)
    conn.sendall(b'{"results": [{"content": "text injected by another user"}]}\\n')
    conn.close()
"""


def test_a_search_server_of_the_second_user_is_never_used(other):
    """A socket the second user managed to bind where the first user's client looks: the client asks the
    kernel who is listening and does not send the prompt nor take the answer."""
    from cems_cli.server import client
    from cems_cli.server.daemon import prepare_socket_dir

    base = Path(tempfile.mkdtemp(prefix="cems-2u-", dir="/tmp"))  # pytest's own folders are 0700
    home = base / "home"
    home.mkdir(mode=0o700)
    run = prepare_socket_dir(home)
    path = client.socket_path(str(home))
    try:
        with _opened({base: 0o711, home: 0o711, run: 0o733}):  # long enough for the other user to bind
            squatter = other.popen(_SQUATTER, path)
            try:
                assert squatter.stdout is not None and squatter.stdout.readline().strip() == "ready"
            except BaseException:
                squatter.kill()
                raise
        try:
            assert os.stat(path).st_uid == other.uid and stat.S_IMODE(os.stat(run).st_mode) == 0o700
            started = time.monotonic()
            assert client.call(str(home), {"op": "search", "query": "my private prompt"}, 2.0) is None
            assert time.monotonic() - started < 2
        finally:
            squatter.kill()
            squatter.wait()
    finally:
        shutil.rmtree(base, ignore_errors=True)

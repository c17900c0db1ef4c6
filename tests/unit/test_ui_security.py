"""The viewer's guard (cems_cli/ui/security.py) on a bare ASGI app: token, cookie, Host, Origin, CSRF."""

from __future__ import annotations

import pytest

pytest.importorskip("starlette", reason="the web extra is not installed (pip install 'cems[ui]')")

from starlette.applications import Starlette  # noqa: E402
from starlette.requests import Request  # noqa: E402
from starlette.responses import PlainTextResponse  # noqa: E402
from starlette.routing import Route  # noqa: E402
from starlette.testclient import TestClient  # noqa: E402

from cems_cli.ui.security import Guard, check_csrf, cookie_name  # noqa: E402

PORT = 18765
TOKEN = "t0ken-for-tests"
CSRF = "csrf-for-tests"
BASE = f"http://127.0.0.1:{PORT}"


def _app() -> Starlette:
    async def page(request: Request) -> PlainTextResponse:
        return PlainTextResponse("page")

    async def write(request: Request) -> PlainTextResponse:
        await check_csrf(request, CSRF)
        return PlainTextResponse("written")

    app = Starlette(routes=[Route("/", page), Route("/write", write, methods=["POST"])])
    app.add_middleware(Guard, token=TOKEN, port=PORT)
    return app


@pytest.fixture
def client() -> TestClient:
    return TestClient(_app(), base_url=BASE, follow_redirects=False)


@pytest.fixture
def signed(client: TestClient) -> TestClient:
    client.cookies.set(cookie_name(PORT), TOKEN)
    return client


def test_without_the_token_nothing_is_served(client):
    answer = client.get("/")
    assert answer.status_code == 401
    assert "cems ui" in answer.text


def test_a_wrong_token_is_refused(client):
    assert client.get("/?token=guess").status_code == 403
    client.cookies.set(cookie_name(PORT), "guess")
    assert client.get("/").status_code == 401


def test_the_token_becomes_an_httponly_strict_cookie_and_leaves_the_address(client):
    answer = client.get(f"/?token={TOKEN}&q=x")
    assert answer.status_code == 303
    assert answer.headers["location"] == "/?q=x"
    cookie = answer.headers["set-cookie"].lower()
    assert f"{cookie_name(PORT)}={TOKEN}".lower() in cookie
    assert "httponly" in cookie and "samesite=strict" in cookie and "path=/" in cookie
    assert client.get("/").text == "page"  # the client kept the cookie


def test_signing_in_by_post_sets_the_cookie_and_moves_on_without_the_token(client):
    """The launch page (a file: Origin `null`, cross-site) POSTs the token; the answer sets the cookie and
    moves on to / by itself (a redirect would carry no SameSite=Strict cookie after a cross-site start)."""
    answer = client.post("/signin", data={"token": TOKEN},
                         headers={"origin": "null", "sec-fetch-site": "cross-site"})
    assert answer.status_code == 200
    assert '<meta http-equiv="refresh" content="0;url=/">' in answer.text and TOKEN not in answer.text
    cookie = answer.headers["set-cookie"].lower()
    assert f"{cookie_name(PORT)}={TOKEN}".lower() in cookie
    assert "httponly" in cookie and "samesite=strict" in cookie and "path=/" in cookie
    assert "location" not in answer.headers
    assert client.get("/").text == "page"


@pytest.mark.parametrize("form", [{"token": "guess"}, {}, {"token": ""}, {"tok": TOKEN}])
def test_a_sign_in_without_the_token_is_refused(client, form):
    answer = client.post("/signin", data=form)
    assert answer.status_code == 403 and "set-cookie" not in answer.headers
    assert client.get("/").status_code == 401


def test_a_sign_in_is_bounded_and_checks_the_host(client):
    answer = client.post("/signin", content=b"token=" + b"x" * 100_000,
                         headers={"content-type": "application/x-www-form-urlencoded"})
    assert answer.status_code == 413 and "set-cookie" not in answer.headers
    foreign = client.post("/signin", data={"token": TOKEN}, headers={"host": "evil.example:18765"})
    assert foreign.status_code == 400 and "set-cookie" not in foreign.headers
    assert client.get("/signin").status_code == 401  # nothing else answers there unsigned


@pytest.mark.parametrize("path", ["//evil.example/", "/\\evil.example/", "///evil.example"])
def test_the_token_redirect_stays_on_the_viewer(client, path):
    answer = client.get(f"{BASE}{path}?token={TOKEN}")
    assert answer.status_code == 303
    location = answer.headers["location"]
    assert location.startswith("/") and location[1:2] not in ("/", "\\") and "%5C" not in location[:4]


@pytest.mark.parametrize("host", ["evil.example:18765", "127.0.0.1:1", "localhost", "127.0.0.1.nip.io:18765"])
def test_a_foreign_host_is_refused_even_with_the_cookie(signed, host):
    assert signed.get("/", headers={"host": host}).status_code == 400


def test_localhost_is_the_same_server(signed):
    assert signed.get("/", headers={"host": f"localhost:{PORT}"}).status_code == 200


@pytest.mark.parametrize("headers", [
    {"origin": "http://evil.example"},
    {"origin": f"http://127.0.0.1:{PORT + 1}"},
    {"origin": "null"},
    {"sec-fetch-site": "cross-site"},
    {"sec-fetch-site": "same-site"},
])
def test_a_cross_origin_write_is_refused(signed, headers):
    answer = signed.post("/write", data={"csrf": CSRF}, headers=headers)
    assert answer.status_code == 403


def test_a_write_needs_the_csrf_token(signed):
    assert signed.post("/write", data={}).status_code == 403
    assert signed.post("/write", data={"csrf": "wrong"}).status_code == 403
    same = {"origin": BASE, "sec-fetch-site": "same-origin"}
    assert signed.post("/write", data={"csrf": CSRF}, headers=same).text == "written"
    assert signed.post("/write", headers={"x-csrf-token": CSRF}).text == "written"


def test_a_write_without_the_cookie_is_refused_before_anything_runs(client):
    assert client.post("/write", data={"csrf": CSRF}).status_code == 401


def test_a_websocket_is_refused_before_any_route():
    """WebSockets ignore the same-origin policy; a route taking one must not be reachable past the guard."""
    from starlette.routing import WebSocketRoute
    from starlette.websockets import WebSocket, WebSocketDisconnect

    async def echo(socket: WebSocket) -> None:
        await socket.accept()
        await socket.send_text("open")
        await socket.close()

    app = Starlette(routes=[WebSocketRoute("/ws", echo)])
    app.add_middleware(Guard, token=TOKEN, port=PORT)
    client = TestClient(app, base_url=BASE)
    client.cookies.set(cookie_name(PORT), TOKEN)
    with pytest.raises(WebSocketDisconnect), client.websocket_connect("/ws") as socket:
        socket.receive_text()


def test_every_answer_carries_the_security_headers(client, signed):
    for answer in (client.get("/"), signed.get("/")):
        assert "script-src 'self'" in answer.headers["content-security-policy"]
        assert "frame-ancestors 'none'" in answer.headers["content-security-policy"]
        assert answer.headers["x-frame-options"] == "DENY"
        assert answer.headers["referrer-policy"] == "no-referrer"


def test_the_default_port_is_per_user():
    from cems_cli.ui.server import default_port

    assert default_port(0) == 10000
    assert default_port(1000) == 11000
    assert default_port(1000) != default_port(1001)
    assert all(10000 <= default_port(uid) < 30000 for uid in (0, 65534, 123456789))


def test_the_listening_socket_is_loopback_tcp_so_connections_get_nodelay():
    import socket

    from cems_cli.ui.server import bind

    sock = bind(0)
    try:
        assert sock.getsockname()[0] == "127.0.0.1"
        # asyncio sets TCP_NODELAY only on connections of a socket whose proto is IPPROTO_TCP: with 0, every
        # page waited ~40 ms for a delayed ACK.
        assert sock.proto == socket.IPPROTO_TCP
    finally:
        sock.close()


# Another local user -------------------------------------------------------------------------------------
# The browser sends the cookie to every 127.0.0.1 port (cookies are per host), so a local user who listens
# on one gets it: the viewer must refuse that user's connections whatever they carry.

def _table(tmp_path, *rows: tuple):
    from cems_cli.ui.peer import _hex_address

    lines = ["  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout"]
    for number, (ip, port, server_port, uid, *rest) in enumerate(rows):
        state = rest[0] if rest else "01"  # ESTABLISHED
        server_ip = rest[1] if len(rest) > 1 else "127.0.0.1"
        lines.append(f"   {number}: {_hex_address(ip, port)} {_hex_address(server_ip, server_port)} {state} "
                     f"00000000:00000000 00:00000000 00000000  {uid:>5}        0 1234 1 0 20 4 30 10 -1")
    path = tmp_path / "tcp"
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def test_the_owner_of_a_loopback_connection_is_read_from_the_kernel_table(tmp_path):
    import os

    from cems_cli.ui.peer import foreign, owner

    me = os.geteuid()
    table = _table(tmp_path, ("127.0.0.1", 50123, PORT, me + 1), ("127.0.0.1", 50124, PORT, me),
                   ("127.0.0.1", 50125, PORT + 1, me))
    assert owner(("127.0.0.1", 50123), PORT, table) == me + 1
    assert owner(("127.0.0.1", 50124), PORT, table) == me
    assert foreign(("127.0.0.1", 50123), PORT, table)  # another user's socket
    assert not foreign(("127.0.0.1", 50124), PORT, table)
    assert foreign(("127.0.0.1", 50125), PORT, table)  # not listed for this port (reset before the look-up)
    assert not foreign(("testclient", 50000), PORT, table)  # in-process test clients have no socket
    assert not foreign(("127.0.0.1", 50123), PORT, str(tmp_path / "missing"))  # not Linux: nothing to tell
    # A closed connection's leftover (TIME_WAIT, uid 0) on the same 4-tuple, or a socket of this user's to
    # another address on that port, does not vouch for the connection that is listed under another uid.
    (tmp_path / "tcp").unlink()
    table = _table(tmp_path, ("127.0.0.1", 50126, PORT, me, "06"),
                   ("127.0.0.1", 50126, PORT, me, "01", "127.0.0.2"), ("127.0.0.1", 50126, PORT, me + 1))
    assert owner(("127.0.0.1", 50126), PORT, table) == me + 1 and foreign(("127.0.0.1", 50126), PORT, table)


def test_a_real_connection_of_this_user_is_its_own():
    import os
    import socket

    from cems_cli.ui.peer import PROC_TCP, _ask_sock_diag, _read_table, foreign, owner

    if not os.path.exists("/proc/net/tcp"):
        pytest.skip("no /proc/net/tcp (not Linux)")
    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]
        with socket.create_connection(("127.0.0.1", port)) as client:
            accepted, peer = server.accept()
            with accepted:
                assert owner(peer, port) == os.geteuid()
                assert not foreign(peer, port)
                assert client  # still open while looked up
                # Both ways of asking agree (netlink, where this kernel answers it, and the table).
                assert _read_table(peer, port, PROC_TCP, "127.0.0.1") == os.geteuid()
                try:
                    asked = _ask_sock_diag(peer, ("127.0.0.1", port))
                except OSError:
                    pass
                else:
                    assert asked == os.geteuid()
                    assert _ask_sock_diag((peer[0], 1), ("127.0.0.1", port)) is None  # no such socket


def test_another_local_user_with_the_cookie_is_refused():
    """End to end: the viewer's guard under uvicorn, and a client process running as `nobody` that holds
    the right cookie and CSRF token (as if its listener had been sent them) is refused; the user is not."""
    import os
    import socket
    import threading
    import time

    if os.geteuid() != 0 or not os.path.exists("/proc/net/tcp"):
        pytest.skip("needs root (to run a client as another user) and Linux")
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(8)
    port = sock.getsockname()[1]

    async def page(request: Request) -> PlainTextResponse:
        return PlainTextResponse("page")

    app = Starlette(routes=[Route("/", page)])
    app.add_middleware(Guard, token=TOKEN, port=port)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    request = (f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nCookie: {cookie_name(port)}={TOKEN}\r\n"
               "Connection: close\r\n\r\n").encode()

    def status_as(uid: int | None) -> str:
        read, write = os.pipe()
        child = os.fork()
        if child == 0:  # only socket calls here: the parent has threads
            try:
                if uid is not None:
                    os.setgid(uid)
                    os.setuid(uid)
                with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as conn:
                    conn.settimeout(5)
                    conn.connect(("127.0.0.1", port))  # numeric: no codec to import as `nobody`
                    conn.sendall(request)
                    answer = conn.recv(200)
                os.write(write, answer.split(b"\r\n", 1)[0])
            finally:
                os._exit(0)
        os.close(write)
        os.waitpid(child, 0)
        with os.fdopen(read, "rb") as pipe:
            return pipe.read().decode()

    try:
        deadline = time.monotonic() + 10
        while not server.started and time.monotonic() < deadline:
            time.sleep(0.02)
        assert status_as(None).endswith("200 OK")
        assert status_as(65534).endswith("403 Forbidden")
    finally:
        server.should_exit = True
        thread.join(5)

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

"""Who may talk to the viewer: only a browser that opened the URL `cems ui` printed, on this machine.

The server binds 127.0.0.1, but any local user, and any web page the user visits, can reach a loopback
port. So a connection another local user owns is refused outright (Linux, `peer.py`: the cookie reaches
every 127.0.0.1 port, so it is no secret from a user who listens on one); every request must carry the
session cookie the token turns into (HttpOnly, SameSite=Strict: no other site's page can send it); a `Host`
other than the server's own is refused (DNS rebinding: a hostile name resolving to 127.0.0.1 would
otherwise be same-origin with the viewer); a write from another origin is refused; and
every write carries a CSRF token the pages embed, checked in the route (`check_csrf`). Hand-written as a
pure ASGI middleware: Starlette's TrustedHostMiddleware answers a bad Host but knows nothing of tokens or
origins, and a BaseHTTPMiddleware would buffer the live stream.

Signing in leaves the token in no address the browser records. `cems ui` opens an owner-only launch page
that POSTs the token to /signin (`sign_in`), which sets the cookie and answers with a page that moves on to
/ by itself: a redirect would keep the navigation the file:// page started, cross-site, and a SameSite=Strict
cookie is not sent on it, while the signed-in page's own move is same-origin. A printed URL pasted by hand
(`/?token=…`) still works and is redirected at once to the same address without it.
"""

from __future__ import annotations

import hmac
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any
from urllib.parse import parse_qsl, urlencode

from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response

from cems_cli.ui import peer

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

SAFE_METHODS = frozenset({"GET", "HEAD"})
CSRF_FIELD = "csrf"
CSRF_HEADER = "x-csrf-token"
MAX_FIELD_BYTES = 8 << 20
SIGN_IN_PATH = "/signin"
MAX_SIGN_IN_BYTES = 4096  # a form with one token field; the body is read by hand to bound it (see sign_in)
# Meta refresh, not a script: the pages' CSP allows no inline script.
SIGNED_IN_PAGE = ('<!doctype html><meta charset="utf-8"><meta http-equiv="refresh" content="0;url=/">'
                  '<title>CEMS</title><p><a href="/">Open CEMS</a></p>\n')

# Every page: no framing, no referrer (the first URL carried the token), nothing cached, scripts only from
# the viewer itself (htmx is vendored; `allowEval` is off in base.html, so hx-on/js: cannot run either).
SECURITY_HEADERS = {
    "content-security-policy": (
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
    ),
    "x-frame-options": "DENY",
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "cache-control": "no-store",
}


def cookie_name(port: int) -> str:
    """Cookies are not kept apart by port: one per port, so two users' viewers in one browser never
    overwrite each other's."""
    return f"cems_ui_{port}"


def _same(given: str | None, expected: str) -> bool:
    return given is not None and hmac.compare_digest(given.encode("utf-8"), expected.encode("utf-8"))


class Guard:
    """The ASGI middleware in front of every route (static files and the live stream included)."""

    def __init__(self, app: ASGIApp, *, token: str, port: int) -> None:
        self.app = app
        self.token = token
        self.port = port
        self.cookie = cookie_name(port)
        self.hosts = frozenset({f"127.0.0.1:{port}", f"localhost:{port}"})
        self.origins = frozenset(f"http://{host}" for host in self.hosts)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket":
            # No route takes one, and a WebSocket is not bound by the same-origin policy: any page may open
            # one to a loopback port. Closed before any route sees it, so a route added later is not open.
            await send({"type": "websocket.close", "code": 1008})
            return
        if scope["type"] != "http":  # lifespan
            await self.app(scope, receive, send)
            return
        response = self.foreign(scope)
        if response is None and scope["method"] == "POST" and scope["path"] == SIGN_IN_PATH:
            response = await self.sign_in(receive)
        if response is None:
            response = self.refusal(scope)
        if response is None:
            await self.app(scope, receive, _with_headers(send))
        else:
            await response(scope, receive, _with_headers(send))

    def foreign(self, scope: Scope) -> Response | None:
        """The answer to a request from another local user or for another Host, else None."""
        server = scope.get("server") or ("127.0.0.1", self.port)
        if peer.foreign(scope.get("client"), server[1], server_ip=server[0]):
            # Before the token: a cookie another local user took from the browser is no key (see peer.py).
            return PlainTextResponse("this viewer answers only the user who started it", status_code=403)
        if Headers(scope=scope).get("host") not in self.hosts:
            return PlainTextResponse("unknown Host: open the address `cems ui` printed", status_code=400)
        return None

    async def sign_in(self, receive: Receive) -> Response:
        """POST /signin with the form field `token`: the cookie and a page that moves on to /. No Origin or
        CSRF check: the launch page is a file (Origin `null`, cross-site), and the token in the body is the
        proof no other page has. The body is read here, bounded (Starlette's form parser reads a urlencoded
        body whole, and this request is not signed in yet)."""
        body = bytearray()
        more = True
        while more:
            message = await receive()
            if message["type"] != "http.request":
                return PlainTextResponse("the request ended early", status_code=400)
            body += message.get("body", b"")
            more = bool(message.get("more_body"))
            if len(body) > MAX_SIGN_IN_BYTES:
                return PlainTextResponse("sign-in form too large", status_code=413)
        form = dict(parse_qsl(body.decode("latin-1"), keep_blank_values=True))
        if not _same(form.get("token"), self.token):
            return PlainTextResponse("wrong token: open the address `cems ui` printed", status_code=403)
        page = HTMLResponse(SIGNED_IN_PAGE)
        page.set_cookie(self.cookie, self.token, httponly=True, samesite="strict", path="/")
        return page

    def refusal(self, scope: Scope) -> Response | None:
        """The answer to a request that may not reach the app (past `foreign`), else None."""
        headers = Headers(scope=scope)
        method = scope["method"]
        if method not in SAFE_METHODS:
            origin = headers.get("origin")
            if origin is not None and origin not in self.origins:
                return PlainTextResponse("cross-origin request refused", status_code=403)
            if headers.get("sec-fetch-site") in ("cross-site", "same-site"):
                return PlainTextResponse("cross-site request refused", status_code=403)
        query = dict(parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True))
        if "token" in query and method in SAFE_METHODS:
            if not _same(query.get("token"), self.token):
                return PlainTextResponse("wrong token: open the address `cems ui` printed", status_code=403)
            # The token becomes the cookie, and leaves the address bar (and the history) at once.
            rest = urlencode([(k, v) for k, v in query.items() if k != "token"])
            # One leading slash: `//evil.example/` (or `/\evil.example`) in a Location is another site.
            target = "/" + scope["path"].lstrip("/\\") + (f"?{rest}" if rest else "")
            redirect = RedirectResponse(target, status_code=303)
            redirect.set_cookie(self.cookie, self.token, httponly=True, samesite="strict", path="/")
            return redirect
        if not _same(_cookie(headers, self.cookie), self.token):
            return PlainTextResponse(
                "not signed in: open the address `cems ui` printed (it carries a token)", status_code=401
            )
        return None


def _cookie(headers: Headers, name: str) -> str | None:
    from http.cookies import CookieError, SimpleCookie

    jar: SimpleCookie = SimpleCookie()
    try:
        jar.load(headers.get("cookie", ""))
    except CookieError:
        return None
    morsel = jar.get(name)
    return morsel.value if morsel is not None else None


def _with_headers(send: Send) -> Send:
    async def sending(message: MutableMapping[str, Any]) -> None:
        if message["type"] == "http.response.start":
            present = {key.lower() for key, _ in message.get("headers", [])}
            extra = [(k.encode(), v.encode()) for k, v in SECURITY_HEADERS.items()
                     if k.encode() not in present]
            message["headers"] = [*message.get("headers", []), *extra]
        await send(message)

    return sending


async def check_csrf(request: Request, token: str) -> dict[str, str]:
    """The form of a write, once its CSRF token (form field or header) is the server's; 403 otherwise."""
    # A field may hold a memory's text: up to the largest CEMS_MAX_MEMORY_BYTES, so a text over the user's
    # limit reaches the library and comes back with its message and the text, instead of a bare 400.
    form = await request.form(max_part_size=MAX_FIELD_BYTES)
    given = request.headers.get(CSRF_HEADER) or form.get(CSRF_FIELD)
    if not isinstance(given, str) or not _same(given, token):
        raise HTTPException(403, "missing or wrong CSRF token: reload the page and try again")
    # NUL is never typed, and PostgreSQL text cannot hold it (a pin reason with one failed in the store):
    # dropped, as the library drops it from memory text and queries.
    return {key: value.replace("\x00", "") for key, value in form.items() if isinstance(value, str)}

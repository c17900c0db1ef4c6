"""The viewer's application: one `Memory` shared by every request (taking turns on its connection), pages
rendered by Jinja2 with autoescape on, the security guard in front, the live stream beside.

Memory text is data: every template prints it escaped, and nothing stored ever goes through `|safe`.
"""

from __future__ import annotations

import contextlib
import secrets
import threading
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any, TypeVar

from jinja2 import Environment, FileSystemLoader, StrictUndefined
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from cems_cli.api import Memory
from cems_cli.ui.live import Hub
from cems_cli.ui.security import Guard

HERE = Path(__file__).resolve().parent
T = TypeVar("T")


class Viewer:
    """What every route shares: the memory (one request at a time on its connection), the tokens, the
    templates, the live hub, and when the last request came (for the idle stop)."""

    def __init__(self, memory: Memory, *, token: str, port: int, csrf: str | None = None,
                 live: bool = True) -> None:
        self.memory = memory
        self.token = token
        self.csrf = csrf or secrets.token_urlsafe(32)
        self.port = port
        self.lock = threading.Lock()
        self.last_request = time.monotonic()
        self.hub: Hub | None = Hub(memory.change_batches) if live else None
        self.templates = Environment(
            loader=FileSystemLoader(HERE / "templates"), autoescape=True, undefined=StrictUndefined,
            trim_blocks=True, lstrip_blocks=True,
        )
        self.templates.filters["short"] = lambda value: str(value or "")[:8]
        self.templates.filters["when"] = _when

    def run(self, work: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Call the library on the shared connection, one request at a time (psycopg connections are not
        for concurrent use; the viewer has one user, and reads are milliseconds)."""
        with self.lock:
            return work(*args, **kwargs)

    async def call(self, work: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        return await run_in_threadpool(self.run, work, *args, **kwargs)

    def render(self, request: Request, name: str, status: int = 200, **context: Any) -> HTMLResponse:
        template = self.templates.get_template(name)
        html = template.render(request=request, csrf=self.csrf, nav=request.url.path,
                               live=self.hub is not None, **context)
        return HTMLResponse(html, status_code=status)


def _when(value: Any) -> str:
    """A time as people read it: 2026-05-01 14:03 (UTC)."""
    if value is None:
        return "never"
    if hasattr(value, "strftime"):
        return str(value.strftime("%Y-%m-%d %H:%M"))
    return str(value)[:16].replace("T", " ")


def create_app(memory: Memory, *, token: str, port: int, csrf: str | None = None,
               live: bool = True) -> Starlette:
    """The ASGI application for `cems ui` (tests call it with a test store and a known token)."""
    from cems_cli.ui import pages

    viewer = Viewer(memory, token=token, port=port, csrf=csrf, live=live)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        import asyncio

        if viewer.hub is not None:
            viewer.hub.start(asyncio.get_running_loop())
        try:
            yield
        finally:
            if viewer.hub is not None:
                viewer.hub.stop()

    async def http_error(request: Request, error: Exception) -> Response:
        assert isinstance(error, HTTPException)
        return PlainTextResponse(str(error.detail), status_code=error.status_code)

    routes = [*pages.routes(viewer), Mount("/static", StaticFiles(directory=HERE / "static"), name="static")]
    app = Starlette(routes=routes, lifespan=lifespan, exception_handlers={HTTPException: http_error})
    app.state.viewer = viewer
    app.add_middleware(_Touch, viewer=viewer)
    app.add_middleware(Guard, token=token, port=port)
    return app


class _Touch:
    """Every request that passed the guard counts as use (the idle stop waits for none)."""

    def __init__(self, app: Any, viewer: Viewer) -> None:
        self.app = app
        self.viewer = viewer

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            self.viewer.last_request = time.monotonic()
        await self.app(scope, receive, send)


__all__ = ["Route", "Viewer", "create_app"]

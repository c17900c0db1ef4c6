"""The live stream (server-sent events): for each memory another process stored or changed, one `memory`
event carrying its row, rendered like the memories page's rows (escaped), for the page to put on top."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from sse_starlette.sse import EventSourceResponse, ServerSentEvent
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response

from cems_cli.api import UserError
from cems_cli.ui.app import Viewer


async def stream(viewer: Viewer, request: Request) -> Response:
    hub = viewer.hub
    if hub is None:
        return PlainTextResponse("live updates are off", status_code=404)
    queue = hub.subscribe()
    template = viewer.templates.get_template("live_row.html")

    async def events() -> AsyncIterator[ServerSentEvent]:
        try:
            yield ServerSentEvent(comment="connected")
            while True:
                try:
                    change = await asyncio.wait_for(queue.get(), timeout=15.0)
                except TimeoutError:
                    if await request.is_disconnected():
                        return
                    continue
                if change.op == "bulk" or change.id is None:
                    yield ServerSentEvent(event="memory", data=template.render(record=None, op="bulk"))
                    continue
                record = await viewer.call(_visible, viewer, change.id)
                if record is None and change.op != "delete":
                    continue  # another user's memory, or gone again: nothing to show
                html = template.render(record=record, op=change.op, memory_id=change.id)
                yield ServerSentEvent(event="memory", data=html)
        finally:
            hub.unsubscribe(queue)

    return EventSourceResponse(events(), ping=15)


def _visible(viewer: Viewer, memory_id: str) -> Any:
    """The memory if this user may see it (the library's visibility rules), else None."""
    try:
        return viewer.memory.get(memory_id)
    except UserError:
        return None

"""The live stream (server-sent events): for each batch of memories other processes stored or changed, one
`memory` event carrying their rows, rendered like the memories page's rows (escaped), newest on top, for
the page to put on top. One read per batch (`Memory.records`), however many changes made it."""

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
                    batch = await asyncio.wait_for(queue.get(), timeout=15.0)
                except TimeoutError:
                    if await request.is_disconnected():
                        return
                    continue
                if any(c.op == "bulk" or c.id is None for c in batch):
                    yield ServerSentEvent(event="memory", data=template.render(record=None, op="bulk"))
                    continue
                records = await viewer.call(_visible, viewer, [c.id for c in batch])
                rows = []
                for c in reversed(batch):  # the latest change on top
                    record = records.get(c.id)
                    if record is None and c.op != "delete":
                        continue  # another user's memory, or gone again: nothing to show
                    rows.append(template.render(record=record, op=c.op, memory_id=c.id))
                if rows:
                    yield ServerSentEvent(event="memory", data="".join(rows))
        finally:
            hub.unsubscribe(queue)

    return EventSourceResponse(events(), ping=15)


def _visible(viewer: Viewer, memory_ids: list[str]) -> dict[str, Any]:
    """Those of the memories this user may see (the library's visibility rules), by id, in one read."""
    try:
        return viewer.memory.records(memory_ids)
    except UserError:
        return {}

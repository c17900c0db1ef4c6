"""Live updates: one thread polls for changed memory ids (`Memory.change_batches`, a connection of its own)
and hands each batch to every open page's stream (an asyncio queue each). Batches, not single changes: a
burst of writes costs the viewer one read per poll, not one per memory (store/changes.py)."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable, Iterator
from typing import Any

_log = logging.getLogger("cems.ui")
_QUEUE_SIZE = 64  # batches; a page that stops reading loses old ones, never the server's memory


class Hub:
    def __init__(self, batches: Callable[[threading.Event], Iterator[list[Any]]]) -> None:
        self._batches = batches
        self._stop = threading.Event()
        self._queues: set[asyncio.Queue[Any]] = set()
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._thread = threading.Thread(target=self._run, name="cems-ui-listen", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2.0)

    def subscribe(self) -> asyncio.Queue[Any]:
        queue: asyncio.Queue[Any] = asyncio.Queue(_QUEUE_SIZE)
        with self._lock:
            self._queues.add(queue)
        return queue

    def unsubscribe(self, queue: asyncio.Queue[Any]) -> None:
        with self._lock:
            self._queues.discard(queue)

    def _run(self) -> None:
        # A dropped connection (the database restarted) is opened again; the pages keep their streams.
        while not self._stop.is_set():
            try:
                for batch in self._batches(self._stop):
                    self._publish(batch)
            except Exception:
                _log.warning("live updates: listening failed, retrying", exc_info=True)
                self._stop.wait(2.0)

    def _publish(self, batch: list[Any]) -> None:
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        with self._lock:
            queues = list(self._queues)
        for queue in queues:
            loop.call_soon_threadsafe(_offer, queue, batch)


def _offer(queue: asyncio.Queue[Any], item: Any) -> None:
    if queue.full():
        queue.get_nowait()
    queue.put_nowait(item)

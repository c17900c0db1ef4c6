"""Floods cost the viewer little. Any database role may NOTIFY any channel: 10,000 forged notices on the
channel the store once used (cems_memories) must cost the open live stream no read at all, since the viewer
no longer listens (store/changes.py polls the change log of sql/025). A burst of real writes costs one read
per poll, not one per memory. Pages keep answering, and a memory stored afterwards still appears live."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.viewer import running_viewer

pytest.importorskip("starlette", reason="the web extra is not installed (pip install 'cems[ui]')")

NOTICES = 10_000
WRITES = 30
TOKEN = "flood-test-" + uuid.uuid4().hex


@pytest.fixture
def served(cems_home: Path) -> Iterator[dict[str, Any]]:
    """`cems ui` as it runs (uvicorn in a thread, live updates on) for a fresh user of the test store."""
    with running_viewer(cems_home, TOKEN) as served:
        yield served


def _forge(memory: Any, real_id: str) -> None:
    """NOTICES forged notices, each in a transaction of its own (PostgreSQL folds equal payloads of one
    transaction into one): half the real memory's id as the store once sent it, the rest garbage."""
    from cems_cli.store.db import connect

    with connect(memory.settings) as conn:
        conn.autocommit = True
        conn.execute(
            "DO $$ BEGIN FOR i IN 1.." + str(NOTICES) + " LOOP"
            " PERFORM pg_notify('cems_memories', CASE"
            "  WHEN i % 2 = 0 THEN 'update " + real_id + "'"
            "  WHEN i % 5 = 1 THEN 'insert ' || gen_random_uuid()"
            "  ELSE 'bulk' END);"
            " COMMIT; END LOOP; END $$")


def _write(memory: Any) -> list[str]:
    """WRITES memories of the viewer's user, one after another, from another connection."""
    import cems

    with cems.open(user=memory.settings.user) as other:
        return [other.remember(f"Burst memory number {n}: the queue drains at night", category="general").id
                for n in range(WRITES)]


@pytest.mark.parametrize("flood", ["forged-notices", "real-writes"])
def test_a_flood_costs_the_viewer_a_bounded_number_of_reads(served, flood):
    import httpx

    from cems_cli.store.changes import POLL_SECONDS

    memory, port, viewer = served["memory"], served["port"], served["viewer"]
    real_id = memory.remember("The flood target: a memory of this user", category="general").id
    reads: list[float] = []
    run = viewer.run

    def counting(work: Any, *args: Any, **kwargs: Any) -> Any:
        if getattr(work, "__name__", "") == "_visible":  # the live stream's read (ui/stream.py)
            reads.append(time.monotonic())
        return run(work, *args, **kwargs)

    events: list[str] = []
    base = f"http://127.0.0.1:{port}"
    cookies = {f"cems_ui_{port}": TOKEN}
    listening = threading.Event()

    def listen(response: httpx.Response) -> None:
        try:
            for line in response.iter_lines():
                if line.startswith(": connected"):
                    listening.set()
                if line.startswith("data:"):
                    events.append(line)
        except httpx.HTTPError:
            pass  # closed by the test

    with httpx.Client(base_url=base, cookies=cookies, timeout=30) as client, \
            client.stream("GET", "/live") as live:
        reader = threading.Thread(target=listen, args=(live,), daemon=True)
        reader.start()
        assert listening.wait(10), "the live stream never connected"
        time.sleep(4 * POLL_SECONDS)  # the target's own change is read and shown before the count starts
        viewer.run = counting
        written: list[str] = []
        work = (lambda: _forge(memory, real_id)) if flood == "forged-notices" else (
            lambda: written.extend(_write(memory)))
        flooding = threading.Thread(target=work)
        started = time.monotonic()
        flooding.start()
        latencies = []
        while flooding.is_alive():
            begin = time.monotonic()
            assert client.get("/memories").status_code == 200
            latencies.append(time.monotonic() - begin)
        flooding.join()
        seconds = time.monotonic() - started
        time.sleep(4 * POLL_SECONDS)  # the last changes are read
        if flood == "forged-notices":
            assert reads == [], "a forged notice made the viewer read"
        else:
            # One read per poll at most, never one per memory; every memory written is shown.
            assert 0 < len(reads) <= seconds / POLL_SECONDS + 3, (len(reads), seconds)
            assert all(any(memory_id in e for e in events) for memory_id in written)
        assert latencies and sorted(latencies)[len(latencies) // 2] < 1.0, latencies
        # Live updates still work after the flood, within a second.
        import cems

        shown = len(events)
        with cems.open(user=memory.settings.user) as other:
            captured = other.remember("Stored after the flood: still shown live", category="general").id
        stored = time.monotonic()
        while not any(captured in e for e in events[shown:]) and time.monotonic() - stored < 5:
            time.sleep(0.02)
        assert any(captured in e for e in events[shown:])
        assert time.monotonic() - stored < 1.0
        live.close()

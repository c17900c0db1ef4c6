"""A NOTIFY flood costs the viewer little: any database role may NOTIFY the live channel, so 10,000 notices
(the same memory's id again and again, forged payloads, ids of no memory) must leave pages answering and
cost the open live stream a bounded number of reads (store/notify.py batches; ui/stream.py reads once a
batch). A memory stored after the flood still appears live."""

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
TOKEN = "flood-test-" + uuid.uuid4().hex


@pytest.fixture
def served(cems_home: Path) -> Iterator[dict[str, Any]]:
    """`cems ui` as it runs (uvicorn in a thread, live updates on) for a fresh user of the test store."""
    with running_viewer(cems_home, TOKEN) as served:
        yield served


def _flood(memory: Any, real_id: str, strangers: bool) -> float:
    """NOTICES notices, each in a transaction of its own (PostgreSQL folds equal payloads of one
    transaction into one): half the real memory's id, the rest forged, or with `strangers` a fifth ids of no
    memory (a batch of more than 100 ids is one bulk change). Seconds taken."""
    from cems_cli.store.db import connect

    with connect(memory.settings) as conn:
        conn.autocommit = True
        started = time.monotonic()
        conn.execute(
            "DO $$ BEGIN FOR i IN 1.." + str(NOTICES) + " LOOP"
            " PERFORM pg_notify('cems_memories', CASE"
            "  WHEN i % 2 = 0 THEN 'update " + real_id + "'"
            "  WHEN i % 5 = 1 THEN 'update ' || i"
            "  WHEN i % 5 = 3 THEN repeat('x', 7000)"
            "  WHEN " + ("true" if strangers else "false") + " THEN 'insert ' || gen_random_uuid()"
            "  ELSE 'bulk forged' END);"
            " COMMIT; END LOOP; END $$")
        return time.monotonic() - started


@pytest.mark.parametrize("strangers", [False, True], ids=["one-id", "many-ids"])
def test_a_notify_flood_costs_a_bounded_number_of_reads(served, strangers):
    import httpx

    memory, port, viewer = served["memory"], served["port"], served["viewer"]
    real_id = memory.remember("The flood target: a memory of this user", category="general").id
    reads: list[float] = []
    run = viewer.run

    def counting(work: Any, *args: Any, **kwargs: Any) -> Any:
        if getattr(work, "__name__", "") == "_visible":  # the live stream's read (ui/stream.py)
            reads.append(time.monotonic())
        return run(work, *args, **kwargs)

    viewer.run = counting
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
        flooding = threading.Thread(target=lambda: reads.append(-_flood(memory, real_id, strangers)))
        flooding.start()
        latencies = []
        while flooding.is_alive():
            begin = time.monotonic()
            assert client.get("/memories").status_code == 200
            latencies.append(time.monotonic() - begin)
        flooding.join()
        time.sleep(1.0)  # the last batch is read
        flood_seconds = -min(reads)
        stream_reads = [r for r in reads if r >= 0]
        # One read per window (0.1 s) at most while the flood lasts, never one per notice (5,000 named
        # the real memory before batching).
        assert len(stream_reads) <= flood_seconds / 0.1 + 5, (len(stream_reads), flood_seconds)
        if strangers:  # more ids at once than a batch holds: the page is told to reload, nothing is read
            assert any("Many memories changed" in e for e in events)
        else:
            assert stream_reads and any(real_id in e for e in events)
        assert latencies and sorted(latencies)[len(latencies) // 2] < 1.0, latencies
        # Live updates still work after the flood, within a second.
        import cems

        shown = len(events)
        with cems.open() as other:
            captured = other.remember("Stored after the flood: still shown live", category="general").id
        stored = time.monotonic()
        while not any(captured in e for e in events[shown:]) and time.monotonic() - stored < 5:
            time.sleep(0.02)
        assert any(captured in e for e in events[shown:])
        assert time.monotonic() - stored < 1.0
        live.close()

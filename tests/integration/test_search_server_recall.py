"""Prompt recall through the warm search server: being injected is no access (no priority feedback loop),
but it is use, stamped in last_recalled, which keeps a captured context memory from expiring as unused."""

from __future__ import annotations

import contextlib
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

RECALLED = "The nightly backup job writes snapshots to the cold storage bucket in eu-west-1."
IGNORED = "Use tabs for indentation in the Makefile."


@pytest.fixture
def svc(env):
    from cems_cli.config import load_settings
    from cems_cli.engine.service import MemoryService

    with MemoryService(load_settings()) as service:
        yield service


@pytest.fixture
def server(svc):
    from cems_cli.api import Memory
    from cems_cli.server.daemon import SearchServer

    # A short directory of its own: Unix socket paths are limited to about a hundred bytes.
    with tempfile.TemporaryDirectory(prefix="cems-") as run:
        path = str(Path(run) / "s.sock")
        memory = Memory(svc.settings, service=svc)  # the server answers through the library
        pool = memory.connection_pool(2)
        search_server = SearchServer(path, memory, pool)
        try:
            yield search_server
        finally:
            search_server.server_close()
            pool.close()
            with contextlib.suppress(FileNotFoundError):
                Path(path).unlink()


def usage(svc, memory_id: str) -> tuple:
    return svc.conn.execute(
        "SELECT access_count, priority, last_accessed, last_recalled FROM memory_documents WHERE id = %s",
        (memory_id,),
    ).fetchone()


def test_recall_stamps_last_recalled_only_and_keeps_captured_context_alive(svc, server, env):
    from cems_cli.engine.maintain import run_maintenance

    long_ago = datetime.now(UTC) - timedelta(days=120)
    recalled, _ = svc.remember(RECALLED, category="context", source="session", created_at=long_ago)
    ignored, _ = svc.remember(IGNORED, category="context", source="session", created_at=long_ago)

    answer = server.answer({
        "op": "search", "query": "where does the nightly backup write its snapshots", "limit": 1,
        "user": env["CEMS_USER"], "project": env["CEMS_PROJECT"],
    })

    assert [r["id"] for r in answer["results"]] == [recalled]
    access_count, priority, last_accessed, last_recalled = usage(svc, recalled)
    assert (access_count, priority, last_accessed) == (0, pytest.approx(1.0), None)  # no access
    assert last_recalled is not None and datetime.now(UTC) - last_recalled < timedelta(minutes=1)
    assert usage(svc, ignored)[3] is None  # only what was returned

    # 120 days old, never searched or updated, but injected today: in use, so it outlives the 90-day TTL.
    report = run_maintenance(svc.conn, svc.settings)
    assert report.expired == 1
    archived = dict(svc.conn.execute(
        "SELECT id::text, archived FROM memory_documents WHERE id = ANY(%s::uuid[])", ([recalled, ignored],)
    ).fetchall())
    assert archived == {recalled: False, ignored: True}


def test_a_recall_that_finds_nothing_stamps_nothing(svc, server, env):
    memory_id, _ = svc.remember(IGNORED, category="context", source="session")
    answer = server.answer({
        "op": "search", "query": "xyzzy plugh frobnicate", "min_score": 0.5,
        "user": env["CEMS_USER"], "project": env["CEMS_PROJECT"],
    })
    assert answer["results"] == []
    assert usage(svc, memory_id)[3] is None

"""A memory stored again word for word from an earlier moment (the observer reading a backlog of transcripts
in path order rather than time order) dates from, and cites, the earliest time it was seen."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime

PATTERN = "In project acme/api the tests run with `make test`."
EARLY = datetime(2026, 9, 7, 18, 0, tzinfo=UTC)
LATE = datetime(2026, 11, 20, 21, 0, tzinfo=UTC)


def _seen(svc, when: datetime, session: str, *, source: str = "observer", tags: tuple[str, ...] = ()):
    memory = svc.prepare(PATTERN, category="patterns", project="acme/api", source=source, created_at=when,
                         tags=[f"session:{session}", "branch:main", *tags])
    return svc.store(dataclasses.replace(memory, source_ref=f"project:acme/api:session:{session}:L2"))


def _row(svc, memory_id: str):
    return svc.conn.execute(
        "SELECT created_at, source_ref, tags FROM memory_documents WHERE id = %s", (memory_id,)
    ).fetchone()


def test_the_earliest_sighting_dates_and_cites_the_memory(lone_store):
    late_id, created = _seen(lone_store, LATE, "late", tags=("kept-by-hand",))
    assert created
    early_id, created = _seen(lone_store, EARLY, "early")
    assert (early_id, created) == (late_id, False)
    at, ref, tags = _row(lone_store, late_id)
    assert at == EARLY and ref == "project:acme/api:session:early:L2"
    assert sorted(tags) == ["branch:main", "kept-by-hand", "session:early"]
    # A later sighting changes nothing.
    _seen(lone_store, LATE, "later-still")
    assert _row(lone_store, late_id)[0] == EARLY


def test_another_sources_copy_changes_nothing(lone_store):
    """What the user wrote stays theirs: capture seeing the same words earlier does not take it over."""
    written, _ = lone_store.store(lone_store.prepare(PATTERN, category="patterns", project="acme/api",
                                                     created_at=LATE))
    before = _row(lone_store, written)
    again, created = _seen(lone_store, EARLY, "early")
    assert (again, created) == (written, False)
    assert _row(lone_store, written) == before and before[0] == LATE

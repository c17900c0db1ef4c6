"""The entity graph against the real server: what a memory names is extracted on every write path, and a
search lends score from a strong result to the memories that name what it names."""

from __future__ import annotations

import pytest

from cems_cli.config import get_settings
from cems_cli.service import MemoryService


@pytest.fixture
def service(env):
    with MemoryService(get_settings()) as svc:
        yield svc


def _entities(service: MemoryService, memory_id: str) -> list[str]:
    row = service.conn.execute("SELECT entities FROM memory_documents WHERE id = %s", (memory_id,)).fetchone()
    return row[0]


def test_what_a_memory_names_is_extracted_when_it_is_written(service):
    made, _ = service.remember(
        "Kafka is gone: `internal/stream/nats.go` publishes to NATS JetStream. Changed next.config.ts, "
        "the ledger_entries table and src/components/CartButton.tsx; use date-fns, not toLocaleDateString. "
        "On Tuesday in March we deployed."
    )
    assert _entities(service, made) == [
        "cartbutton", "cartbutton.tsx", "date-fns", "internal/stream/nats.go", "jetstream", "ledger_entries",
        "nats", "nats.go", "next.config.ts", "src/components/cartbutton.tsx", "tolocaledatestring",
    ]  # "Kafka" starts a sentence, "Tuesday" and "March" say when: none is an entity
    from cems_cli.bulk import import_memories

    report = import_memories(service, [service.prepare("The recon-worker uploads to `acme-recon-out`.")])
    assert _entities(service, report.ids[0]) == ["acme-recon-out", "recon-worker"]


def test_a_memory_naming_what_the_best_result_names_rises(service, monkeypatch):
    best, _ = service.remember("The nightly reconciliation job runs as recon-worker on the batch cluster.")
    linked, _ = service.remember("recon-worker uploads its output to the acme-recon-out bucket.")
    unlinked, _ = service.remember("The nightly backup of the wiki uploads its output to cold storage.")

    def scores(weight: str) -> dict:
        monkeypatch.setenv("CEMS_ENTITY_WEIGHT", weight)
        get_settings.cache_clear()
        with MemoryService(get_settings()) as svc:
            found = svc.search("where does the nightly reconciliation put its output?", limit=5, explain=True,
                               track_access=False, include_weak=True)  # the ranking, weak or not
        return {r.id: r for r in found}

    off, on = scores("0"), scores("0.5")
    assert "entities" not in off[linked].explain
    assert on[linked].explain["entities"]["via"] == best
    assert on[linked].explain["entities"]["shared"] == ["recon-worker"]
    assert on[linked].score > off[linked].score
    assert on[best].score >= off[best].score  # links lend, they never take
    assert "entities" not in on.get(unlinked, off[unlinked]).explain

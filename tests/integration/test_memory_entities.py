"""What a memory names (sql/010_entities.sql's cems_entities) against the real server: read by summaries when
they group memories, no longer stored on every write (sql/018_no_entities_column.sql)."""

from __future__ import annotations

import pytest

from cems_cli.config import get_settings
from cems_cli.engine.service import MemoryService
from cems_cli.store.summaries import project_members


@pytest.fixture
def service(env):
    with MemoryService(get_settings()) as svc:
        yield svc


def _entities(service: MemoryService, text: str) -> list[str]:
    row = service.conn.execute("SELECT cems_entities(%s)", (text,)).fetchone()
    assert row is not None
    return list(row[0])


def test_what_a_text_names_is_extracted_by_the_sql_function(service):
    assert _entities(service,
        "Kafka is gone: `internal/stream/nats.go` publishes to NATS JetStream. Changed next.config.ts, "
        "the ledger_entries table and src/components/CartButton.tsx; use date-fns, not toLocaleDateString. "
        "On Tuesday in March we deployed."
    ) == [
        "cartbutton", "cartbutton.tsx", "date-fns", "internal/stream/nats.go", "jetstream", "ledger_entries",
        "nats", "nats.go", "next.config.ts", "src/components/cartbutton.tsx", "tolocaledatestring",
    ]  # "Kafka" starts a sentence, "Tuesday" and "March" say when: none is an entity
    assert _entities(service, "The recon-worker uploads to `acme-recon-out`.") == [
        "acme-recon-out", "recon-worker"]


def test_writes_no_longer_store_entities_and_summaries_still_read_them(service):
    columns = {r[0] for r in service.conn.execute(
        "SELECT column_name FROM information_schema.columns WHERE table_name = 'memory_documents' "
        "AND table_schema = current_schema()")}
    assert "entities" not in columns
    indexes = {r[0] for r in service.conn.execute(
        "SELECT indexname FROM pg_indexes WHERE tablename = 'memory_documents' "
        "AND schemaname = current_schema()")}
    assert "memory_documents_entities" not in indexes
    made, _ = service.remember("The entities-probe-worker writes to `acme-entities-probe-bucket` nightly.",
                               project="entities-probe")
    members = [m for ms, _ in project_members(service.conn, service.identity.user).values() for m in ms]
    named = next(m.entities for m in members if m.id == made)
    assert named == ("acme-entities-probe-bucket", "entities-probe-worker")

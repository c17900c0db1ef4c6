"""Large imports a user can live with: committed batches that resume after an interruption, search indexes
built once after a large load (or by maintenance when the load was cut short), and vectors carried by an
export so that a trusted import skips the model."""

from __future__ import annotations

import base64
import json
import os
import uuid

import numpy as np
import pytest

from cems_cli.errors import UserError
from cems_cli.store.search import as_array

LONG = " ".join(f"Paragraph {i} explains one more detail of the pipeline." for i in range(200))


def _texts(count: int) -> list[str]:
    tag = uuid.uuid4().hex[:8]
    return [f"Import note {tag} number {i}: the worker {i} retries after {i % 7} seconds."
            for i in range(count)]


def _stop_at(limit: int):
    """A progress callback that interrupts the import once `limit` memories are stored, as Ctrl-C would."""

    def progress(done: int, _total: int) -> None:
        if done >= limit:
            raise KeyboardInterrupt

    return progress


def _stored(svc) -> list[str]:
    return [r[0] for r in svc.conn.execute(
        "SELECT content FROM memory_documents WHERE user_id = %s AND NOT archived", (svc.settings.user,))]


def _search_indexes(svc) -> list[str]:
    return sorted(r[0] for r in svc.conn.execute(
        "SELECT indexname FROM pg_indexes WHERE tablename = 'memory_chunks' "
        "AND indexdef ~ 'USING (hnsw|gin)' AND schemaname = current_schema()"))


def test_an_interrupted_import_keeps_its_batches_and_resumes_without_duplicates(lone_store, monkeypatch):
    from cems_cli.engine import bulk

    monkeypatch.setattr(bulk, "COMMIT_BATCH", 10)
    texts = _texts(35)
    with pytest.raises(UserError, match=r"interrupted: 20 of 35 new memories stored; run the same import"):
        bulk.import_memories(lone_store, [lone_store.prepare(t) for t in texts], progress=_stop_at(20))
    assert sorted(_stored(lone_store)) == sorted(texts[:20])

    report = bulk.import_memories(lone_store, [lone_store.prepare(t) for t in texts])
    assert (report.created, report.duplicates, report.total) == (15, 20, 35)
    assert sorted(_stored(lone_store)) == sorted(texts)
    assert len(set(report.ids)) == 35


def test_a_large_load_builds_the_indexes_once_and_maintenance_finishes_an_interrupted_one(
        lone_store, monkeypatch):
    from cems_cli.engine import bulk
    from cems_cli.engine.maintain import run_maintenance
    from cems_cli.store import bulk as store

    monkeypatch.setattr(bulk, "COMMIT_BATCH", 10)
    monkeypatch.setattr(store, "REBUILD_MIN_CHUNKS", 20)
    indexes = _search_indexes(lone_store)
    assert indexes == ["memory_chunks_embedding", "memory_chunks_fts"]

    texts = _texts(40)
    with pytest.raises(UserError, match="interrupted"):
        bulk.import_memories(lone_store, [lone_store.prepare(t) for t in texts], progress=_stop_at(20))
    # Cut short: the indexes wait, recorded, while searches go on without them (slower, not wrong).
    assert _search_indexes(lone_store) == []
    assert len(store.pending_search_indexes(lone_store.conn)) == 2
    hits = lone_store.search(texts[3], lone_store.search_options(limit=3, mode="hybrid", track_access=False))
    assert hits and hits[0].content == texts[3]

    report = run_maintenance(lone_store.conn, lone_store.settings)
    assert sorted(report.indexes) == indexes and report.to_json()["indexes_built"] == report.indexes
    assert _search_indexes(lone_store) == indexes
    assert store.pending_search_indexes(lone_store.conn) == []

    # A load larger than the store again: dropped before, built after, nothing left pending.
    seen: list[tuple[str, int, int]] = []
    more = _texts(60)
    report = bulk.import_memories(lone_store, [lone_store.prepare(t) for t in more],
                                  index_progress=lambda *a: seen.append(a))
    assert report.created == 60
    assert _search_indexes(lone_store) == indexes
    assert store.pending_search_indexes(lone_store.conn) == []
    assert all(name in indexes and 0 <= done for name, done, _total in seen)


def test_a_pending_index_that_is_not_a_search_index_is_not_replayed(lone_store):
    from cems_cli.store import bulk as store

    planted = "CREATE INDEX x ON memory_chunks USING gin (search_vector); DROP TABLE memory_documents"
    lone_store.conn.execute("INSERT INTO cems_meta (key, value) VALUES (%s, %s)",
                            (store.PENDING_INDEXES_KEY, json.dumps([planted])))
    with pytest.raises(ValueError, match="not a search index definition"):
        store.build_pending_indexes(lone_store.conn)
    assert lone_store.conn.execute("SELECT to_regclass('memory_documents')").fetchone()[0] is not None


def _export(cli, *args: str) -> list[dict]:
    result = cli("export", *args)
    assert result.code == 0, result.stderr
    return [json.loads(line) for line in result.stdout.splitlines() if line.strip()]


def _vectors(svc_conn, user: str) -> dict[str, list[np.ndarray]]:
    rows = svc_conn.execute(
        "SELECT d.content, c.embedding FROM memory_chunks c JOIN memory_documents d ON d.id = c.document_id "
        "WHERE d.user_id = %s ORDER BY d.content, c.chunk_index", (user,))
    found: dict[str, list[np.ndarray]] = {}
    for content, embedding in rows:
        found.setdefault(content, []).append(as_array(embedding))
    return found


def test_a_trusted_import_stores_the_exported_vectors_without_the_model(cli, env, monkeypatch):
    from cems_cli.config import get_settings
    from cems_cli.engine.service import MemoryService

    assert cli("remember", "The nightly backup runs at 02:00 UTC.").code == 0
    assert cli("import", "-", stdin=json.dumps({"content": LONG}).encode()).code == 0
    exported = _export(cli, "--embeddings")
    model = get_settings().resolved_embedding_model
    assert {row["embedding_model"] for row in exported} == {model}
    assert sorted(len(row["embedding"]) for row in exported)[0] == 1
    assert max(len(row["embedding"]) for row in exported) > 1
    with MemoryService(get_settings()) as svc:
        original = _vectors(svc.conn, env["CEMS_USER"])

    # Another user (another machine): the model must not run for these lines.
    other = f"user-{uuid.uuid4().hex[:10]}"
    monkeypatch.setattr(MemoryService, "embedder", property(lambda self: pytest.fail("the model ran")))
    lines = "".join(json.dumps(row) + "\n" for row in exported).encode()
    report = cli("import", "-", "--trusted", "--json", stdin=lines, extra_env={"CEMS_USER": other}).json()
    assert report["imported"] == 2 and report["dropped"] == {}
    with MemoryService(get_settings()) as svc:
        copied = _vectors(svc.conn, other)
    assert copied.keys() == original.keys()
    for content, vectors in original.items():
        assert len(copied[content]) == len(vectors)
        for a, b in zip(copied[content], vectors, strict=True):
            assert np.array_equal(a, b)


def test_an_untrusted_import_embeds_the_text_again(cli, monkeypatch):
    dim = 384
    crafted = base64.b64encode(np.ones(dim, dtype="<f4").tobytes()).decode()
    from cems_cli.config import get_settings

    line = {"content": f"Hub vector {uuid.uuid4().hex}", "embedding": [crafted],
            "embedding_model": get_settings().resolved_embedding_model}
    report = cli("import", "-", "--json", stdin=json.dumps(line).encode()).json()
    assert report["imported"] == 1 and report["dropped"] == {"embedding": 1}
    from cems_cli.engine.service import MemoryService

    with MemoryService(get_settings()) as svc:
        stored = svc.conn.execute(
            "SELECT c.embedding FROM memory_chunks c JOIN memory_documents d ON d.id = c.document_id "
            "WHERE d.content = %s", (line["content"],)).fetchone()[0]
    assert not np.allclose(as_array(stored) / np.linalg.norm(as_array(stored)), np.ones(dim) / np.sqrt(dim))


def _b64(values) -> str:
    return base64.b64encode(np.asarray(values, dtype="<f4").tobytes()).decode()


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"embedding_model": None}, "'embedding' needs 'embedding_model'"),
        ({"embedding_model": "text-embedding-3-small"}, "was made by 'text-embedding-3-small', this store"),
        ({"embedding": [_b64(np.ones(383))]}, "a vector of 383 dimensions, this store's have 384"),
        ({"embedding": [[1.0] * 10]}, "a vector of 10 dimensions"),
        ({"embedding": ["not base64!"]}, "not base64"),
        ({"embedding": [_b64(np.zeros(384))]}, "zero or not finite"),
        ({"embedding": [["a"] * 384]}, "not a vector of numbers"),
        ({"embedding": [_b64(np.ones(384)), _b64(np.ones(384))]}, "has 2 vectors, the content makes 1 chunk"),
        ({"embedding": "abc"}, "'embedding' must be a list of vectors"),
    ],
)
def test_bad_vectors_are_refused_by_line_and_store_nothing(cli, change, message):
    from cems_cli.config import get_settings

    good = {"content": f"Fine line {uuid.uuid4().hex}", "embedding": [_b64(np.ones(384))],
            "embedding_model": get_settings().resolved_embedding_model}
    bad = {**good, "content": f"Bad line {uuid.uuid4().hex}", **change}
    lines = (json.dumps(good) + "\n" + json.dumps(bad) + "\n").encode()
    result = cli("import", "-", "--trusted", stdin=lines)
    assert result.code == 2, (result.stdout, result.stderr)
    assert f"line 2: {message}" in result.stderr or message in result.stderr, result.stderr
    assert "line 2" in result.stderr
    assert cli("status", "--json").json()["total"] == 0


def test_index_builds_get_the_memory_an_hnsw_graph_needs_on_this_machine_only(lone_store, env, tmp_path,
                                                                              monkeypatch):
    from cems_cli.config import load_settings
    from cems_cli.engine.bulk import build_memory_mb
    from cems_cli.store import bulk as store

    # ~1.8 KB a 384-dimension element, a quarter more: 1M vectors want about 2.3 GB, 10k about 90 MB.
    assert 2000 <= store.hnsw_build_mb(1_000_000, 384) <= 2600
    assert store.hnsw_build_mb(10_000, 384) < 128
    # A server given by CEMS_DATABASE_URL is its administrator's to size: the default stays.
    assert build_memory_mb(lone_store.conn, lone_store.settings) is None
    embedded = load_settings(home=env["CEMS_HOME"], database_url=None)
    wanted = build_memory_mb(lone_store.conn, embedded)
    total_mb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // (1024 * 1024)
    assert wanted is not None and 0 < wanted <= total_mb // 4
    # In a container, a quarter of its memory limit (cgroup), not of the machine's.
    limit = tmp_path / "memory.max"
    limit.write_text(f"{64 * 1024 * 1024}\n")
    monkeypatch.setattr("cems_cli.store.embedded._CGROUP_LIMITS", (str(limit),))
    assert build_memory_mb(lone_store.conn, embedded) == 16

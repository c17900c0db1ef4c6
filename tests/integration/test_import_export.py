"""`cems import` / `cems export` on the real embedded PostgreSQL: round trip, all or nothing, dedup, COPY."""

from __future__ import annotations

import json
import uuid

import numpy as np
import pytest

RECORDS = [
    {"content": "We chose PostgreSQL with pgvector to keep one store.", "category": "decisions",
     "tags": ["db", "infra"], "scope": "personal", "source_ref": "project:acme/api",
     "created_at": "2024-03-01T09:30:00+00:00", "title": "One store", "source": "manual"},
    {"content": "Always run the linter before pushing.", "category": "patterns", "tags": [], "pinned": True,
     "pin_reason": "team rule", "pin_category": "convention", "created_at": "2024-03-02T10:00:00+02:00"},
    {"content": "The staging database resets every night.", "category": "context",
     "expires_at": "2099-01-01T00:00:00+00:00", "source_ref": "project:acme/api:db/reset.sh",
     "context": "Why is my test data gone every morning?"},
    {"content": "Use four spaces, never tabs.", "category": "preferences", "scope": "shared",
     "created_at": "2024-03-04T00:00:00Z"},
    {"content": "A memory with nothing but content."},
]


def _jsonl(rows: list[dict]) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


def _export(cli) -> list[dict]:
    result = cli("export")
    assert result.code == 0, result.stderr
    return [json.loads(line) for line in result.stdout.splitlines() if line.strip()]


def _without_ids(rows: list[dict]) -> list[dict]:
    return sorted(({k: v for k, v in r.items() if k != "id"} for r in rows), key=lambda r: r["content"])


def test_round_trip_is_lossless(cli, tmp_path):
    team = {"CEMS_TEAM": f"team-{uuid.uuid4().hex[:6]}"}
    source = tmp_path / "in.jsonl"
    source.write_bytes(_jsonl(RECORDS))
    result = cli("import", str(source), "--json", extra_env=team)
    assert result.code == 0, result.stderr
    assert result.json() | {"seconds": 0, "per_second": 0} == {
        "total": 5, "imported": 5, "duplicates": 0, "chunks": 5, "seconds": 0, "per_second": 0}

    first = _export(cli)
    by_content = {r["content"]: r for r in first}
    pinned = by_content["Always run the linter before pushing."]
    assert [pinned[k] for k in ("pinned", "pin_reason", "pin_category")] == [True, "team rule", "convention"]
    assert pinned["created_at"] == "2024-03-02T08:00:00+00:00"  # the same instant, written in UTC
    assert by_content["We chose PostgreSQL with pgvector to keep one store."]["tags"] == ["db", "infra"]
    assert by_content["Use four spaces, never tabs."]["scope"] == "shared"
    assert by_content["A memory with nothing but content."]["source"] == "import"
    reset = by_content["The staging database resets every night."]
    assert reset["expires_at"] == "2099-01-01T00:00:00+00:00"
    assert reset["context"] == "Why is my test data gone every morning?"
    assert by_content["A memory with nothing but content."]["context"] is None

    dump = tmp_path / "export.jsonl"
    written = cli("export", "--out", str(dump), "--json")
    assert written.json() == {"exported": 5, "path": str(dump)}

    # Into a fresh memory space: another user (and team).
    other = {"CEMS_USER": f"user-{uuid.uuid4().hex[:10]}", "CEMS_TEAM": f"team-{uuid.uuid4().hex[:6]}"}
    assert cli("import", str(dump), "--json", extra_env=other).json()["imported"] == 5
    second = _export(cli)
    assert _without_ids(second) == _without_ids(first)
    assert {r["id"] for r in second}.isdisjoint({r["id"] for r in first})


def test_imported_memories_are_searchable(cli):
    rows = [{"content": f"Service {name} listens on port {port}."} for name, port in
            [("billing", 8081), ("search", 8082), ("auth", 8083)]]
    rows.append({"content": "The cafeteria serves pasta on Fridays."})
    assert cli("import", "-", "--json", stdin=_jsonl(rows)).json()["imported"] == 4
    for mode in ("vector", "hybrid"):
        top = cli("search", "what do they cook for lunch at the end of the week", "--mode", mode, "--json")
        assert top.json()["results"][0]["content"] == "The cafeteria serves pasta on Fridays."


@pytest.mark.parametrize(
    ("bad_line", "message"),
    [
        ("{not json", "line 3: not valid JSON"),
        ("[1, 2]", "line 3: expected a JSON object"),
        ('{"category": "general"}', "line 3: 'content' must be a string"),
        ('{"content": "   "}', "line 3: memory text is empty"),
        ('{"content": "x", "category": "gossip"}', "line 3: unknown category 'gossip'"),
        ('{"content": "x", "catgory": "general"}', "line 3: unknown field 'catgory'"),
        ('{"content": "x", "created_at": "last tuesday"}', "line 3: 'created_at' is not an ISO 8601"),
        ('{"content": "x", "tags": "a,b"}', "line 3: 'tags' must be a list of strings"),
        ('{"content": "x", "pinned": "yes"}', "line 3: 'pinned' must be true or false"),
        ('{"content": "x", "scope": "shared"}', "line 3: shared memories need a team"),
        ('{"content": "x", "category": "rules"}', "line 3: rules are not imported"),
    ],
)
def test_a_bad_line_stores_nothing(cli, tmp_path, bad_line, message):
    good = _jsonl([{"content": f"good memory {uuid.uuid4().hex}"}, {"content": "another good one"}])
    path = tmp_path / "bad.jsonl"
    path.write_bytes(good + b"\n".join([bad_line.encode(), b'{"content": "after the bad line"}']) + b"\n")
    result = cli("import", str(path))
    assert result.code == 2, (result.stdout, result.stderr)
    assert message in result.stderr
    assert result.stderr.strip().count("\n") == 0, result.stderr
    assert cli("status", "--json").json()["total"] == 0


def test_invalid_utf8_and_missing_file(cli, tmp_path):
    path = tmp_path / "latin1.jsonl"
    path.write_bytes(b'{"content": "ok"}\n{"content": "caf\xe9"}\n')
    result = cli("import", str(path))
    assert result.code == 2 and "line 2: not valid UTF-8" in result.stderr
    missing = cli("import", str(tmp_path / "nope.jsonl"))
    assert missing.code == 2 and "no such file" in missing.stderr
    assert cli("status", "--json").json()["total"] == 0


def test_duplicates_of_stored_and_repeated_texts_are_skipped(cli):
    existing = cli("remember", "Deploys go through the staging branch first.", "--json").json()["id"]
    rows = [{"content": "Deploys   go through the staging branch first."},  # same text, other whitespace
            {"content": "Releases are cut on Tuesdays."},
            {"content": "Releases are cut on Tuesdays."},
            {"content": "Hotfixes skip the release train."}]
    report = cli("import", "-", "--json", stdin=_jsonl(rows)).json()
    assert (report["total"], report["imported"], report["duplicates"]) == (4, 2, 2)
    listed = cli("list", "--json").json()["memories"]
    assert len(listed) == 3 and existing in {m["id"] for m in listed}
    again = cli("import", "-", "--json", stdin=_jsonl(rows)).json()
    assert (again["imported"], again["duplicates"]) == (0, 4)


def test_context_is_indexed_and_part_of_the_dedup_key(cli):
    rows = [{"content": "Yes, every Friday.", "context": "Do we deploy the billing service on Fridays?"},
            {"content": "Yes, every Friday.", "context": "Is the cafeteria pasta day on Fridays?"},
            {"content": "Yes, every Friday.", "context": "Is the cafeteria pasta day on Fridays?"}]
    report = cli("import", "-", "--json", stdin=_jsonl(rows)).json()
    assert (report["imported"], report["duplicates"]) == (2, 1)  # same words, two situations: two memories
    context_of = {r["id"]: r["context"] for r in _export(cli)}
    for mode in ("vector", "hybrid"):
        results = cli("search", "billing deploy schedule", "--mode", mode, "--json").json()["results"]
        assert context_of[results[0]["id"]] == "Do we deploy the billing service on Fridays?"


def test_long_memories_are_chunked_like_remember(cli):
    long_text = " ".join(f"Paragraph {i} explains one more detail of the pipeline." for i in range(300))
    report = cli("import", "-", "--json", stdin=_jsonl([{"content": long_text}])).json()
    assert report["imported"] == 1 and report["chunks"] > 1
    shown = cli("export").stdout
    assert json.loads(shown)["content"] == long_text


def test_export_leaves_out_archived_memories(cli):
    kept = cli("remember", "This one stays.", "--json").json()["id"]
    gone = cli("remember", "This one is forgotten.", "--json").json()["id"]
    assert cli("forget", gone).code == 0
    assert [r["id"] for r in _export(cli)] == [kept]


def test_bulk_write_rebuilds_the_search_indexes_it_dropped(env):
    """The first-big-load path: indexes dropped, rows copied, indexes recreated from their own definitions."""
    from cems_cli.config import get_settings
    from cems_cli.service import MemoryService
    from cems_cli.store import bulk as store
    from cems_cli.store.records import NewMemory

    def search_indexes(conn) -> list[str]:
        return sorted(r[0] for r in conn.execute(
            "SELECT indexdef FROM pg_indexes WHERE tablename = 'memory_chunks' "
            "AND indexdef ~ 'USING (hnsw|gin)'"))

    with MemoryService(get_settings()) as svc:
        before = search_indexes(svc.conn)
        assert len(before) == 2
        rng = np.random.default_rng(7)
        vectors = rng.normal(size=(3, svc.settings.resolved_embedding_dim)).astype(np.float32)
        docs = [store.DocumentRow(uuid.uuid4(), NewMemory(content=f"bulk row {i}"), f"hash-{uuid.uuid4()}",
                                  None) for i in range(3)]
        chunks = [store.ChunkRow(d.id, 0, d.memory.content, vectors[i]) for i, d in enumerate(docs)]
        with svc.conn.transaction():
            store.write_documents(svc.conn, svc.settings.user, docs, chunks, rebuild_indexes=True)
        assert search_indexes(svc.conn) == before
        hit = svc.conn.execute(
            "SELECT d.content FROM memory_chunks c JOIN memory_documents d ON d.id = c.document_id "
            "WHERE d.user_id = %s ORDER BY c.embedding <=> %s LIMIT 1", (svc.settings.user, vectors[1]),
        ).fetchone()
        assert hit[0] == "bulk row 1"
        lexical = svc.conn.execute(
            "SELECT count(*) FROM memory_chunks c JOIN memory_documents d ON d.id = c.document_id "
            "WHERE d.user_id = %s AND c.search_vector @@ to_tsquery('english', 'bulk')", (svc.settings.user,))
        assert lexical.fetchone()[0] == 3

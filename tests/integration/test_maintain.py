"""`cems maintain` and the observer's daily run against the real embedded PostgreSQL: near duplicates become
one memory, expired memories are archived, long-archived ones deleted; pinned memories and other users'
memories are never touched."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

# Every test here runs on the real model's store: the texts below are near duplicates, or not, by the local
# model's cosines.
pytestmark = pytest.mark.real_model

# Near-identical texts (cosine ≈ 0.96 with the local model) and clearly different ones (≈ 0.0-0.3).
TESTS_A = "Run the unit tests with pytest -q before pushing to the main branch."
TESTS_B = "Always run the unit tests with pytest -q before you push to the main branch."
TESTS_C = "Run all unit tests with pytest -q before pushing to the main branch."
# More near-identical variants (cosine >= 0.94 with each of the above), for tests that need many copies.
TESTS_VARIANTS = (
    "Run the unit tests using pytest -q before pushing to the main branch.",
    "Please run the unit tests with pytest -q before pushing to the main branch.",
    "Run the unit tests with pytest -q before pushing anything to the main branch.",
    "Run the unit tests with pytest -q prior to pushing to the main branch.",
)
BILLING = "The billing service stores invoices in PostgreSQL and sends receipts by email."
MAKEFILE = "Use tabs for indentation in the Makefile."
DEPLOY = "Deploy the billing service on Fridays only after the QA sign-off."


@pytest.fixture
def svc(env):
    from cems_cli.config import load_settings
    from cems_cli.engine.service import MemoryService

    with MemoryService(load_settings()) as service:
        yield service


def remember(svc, text: str, **options) -> str:
    memory_id, created = svc.remember(text, **options)
    assert created
    return memory_id


def row(svc, memory_id: str) -> dict:
    cursor = svc.conn.execute("SELECT * FROM memory_documents WHERE id = %s", (memory_id,))
    values = cursor.fetchone()
    assert values is not None, f"{memory_id} is gone"
    return dict(zip([c.name for c in cursor.description], values, strict=True))


def exists(svc, memory_id: str) -> bool:
    found = svc.conn.execute("SELECT 1 FROM memory_documents WHERE id = %s", (memory_id,)).fetchone()
    return found is not None


def chunks(svc, memory_id: str) -> int:
    return svc.conn.execute(
        "SELECT count(*) FROM memory_chunks WHERE document_id = %s", (memory_id,)
    ).fetchone()[0]


def set_columns(svc, memory_id: str, assignments: str, *params) -> None:
    svc.conn.execute(f"UPDATE memory_documents SET {assignments} WHERE id = %s", (*params, memory_id))


def snapshot(svc, user: str) -> list[tuple]:
    documents = svc.conn.execute(
        "SELECT * FROM memory_documents WHERE user_id = %s ORDER BY id", (user,)
    ).fetchall()
    chunk_rows = svc.conn.execute(
        "SELECT c.id, c.document_id, c.chunk_index FROM memory_chunks c JOIN memory_documents d "
        "ON d.id = c.document_id WHERE d.user_id = %s ORDER BY c.id",
        (user,),
    ).fetchall()
    return [*documents, *chunk_rows]


def maintain(cli, *args: str, extra_env: dict[str, str] | None = None, texts: bool = False) -> dict:
    """The --json report; without `texts`, each merge as its ids only (what most tests compare)."""
    result = cli("maintain", "--json", *args, extra_env=extra_env)
    assert result.code == 0, result.stderr
    report = result.json()  # stdout is exactly one JSON document
    if not texts:
        report["consolidated"] = [{"kept": g["kept"], "merged": g["merged"]} for g in report["consolidated"]]
    return report


def search_ids(svc, query: str) -> list[str]:
    return [r.id for r in svc.search(query, svc.search_options(limit=10, track_access=False))]


def test_near_duplicates_become_one_memory_with_both_provenances_and_the_higher_priority(svc, cli):
    older = remember(svc, TESTS_A, project="project:acme/api", source="manual", tags="testing")
    newer = remember(
        svc, TESTS_B, project="project:acme/api:session:5e1f:L12", source="observer", tags="ci,testing"
    )
    other = remember(svc, BILLING, tags="billing")
    # The older one is used more: its priority is higher, so it survives although the other is more recent.
    set_columns(svc, older, "priority = 1.5, access_count = 10")
    set_columns(svc, newer, "priority = 1.1, access_count = 2, last_accessed = now(), last_recalled = now()")
    other_before = row(svc, other)

    report = maintain(cli)

    assert report.pop("summaries")["groups"] == 0  # one memory of acme/api left: nothing to group
    assert report == {"dry_run": False, "consolidated": [{"kept": older, "merged": [newer]}], "expired": 0,
                      "pruned": 0}
    kept, merged = row(svc, older), row(svc, newer)
    assert kept["archived"] is False and kept["content"] == TESTS_A
    assert kept["priority"] == pytest.approx(1.5)
    assert kept["access_count"] == 12
    assert kept["tags"] == ["testing", "ci"]
    # Both provenances: its own in source/source_ref, the merged memory's in merged_from.
    assert (kept["source"], kept["source_ref"]) == ("manual", "project:acme/api")
    assert [(p["id"], p["source"], p["source_ref"]) for p in kept["merged_from"]] == [
        (newer, "observer", "project:acme/api:session:5e1f:L12")
    ]
    # The survivor stands for the merged memory: its last use is the later of the two.
    assert kept["last_accessed"] == merged["last_accessed"] and kept["last_recalled"] is not None
    assert merged["archived"] is True and merged["merged_into"] == kept["id"]
    assert merged["archived_at"] is not None
    assert row(svc, other) == other_before
    assert newer not in search_ids(svc, "run unit tests with pytest before pushing")
    assert older in search_ids(svc, "run unit tests with pytest before pushing")

    # The survivor takes the higher priority also when it is the other way round; nothing is merged twice.
    third = remember(svc, TESTS_C, project="project:acme/api:README.md", source="manual")
    set_columns(svc, third, "priority = 1.9")
    set_columns(svc, older, "last_accessed = now()")
    report = maintain(cli)
    assert report["consolidated"] == [{"kept": third, "merged": [older]}]
    survivor = row(svc, third)
    assert survivor["priority"] == pytest.approx(1.9)
    # The chain is kept: what had been merged into the memory now merged is recorded too.
    assert [p["id"] for p in survivor["merged_from"]] == [older, newer]
    assert maintain(cli)["consolidated"] == []


def test_a_missing_provenance_is_taken_from_the_merged_memory(svc, cli):
    kept = remember(svc, TESTS_A)
    merged = remember(svc, TESTS_B, project="https://wiki.example.com/testing")  # a reference, no project
    set_columns(svc, kept, "priority = 1.5")
    assert maintain(cli)["consolidated"] == [{"kept": kept, "merged": [merged]}]
    assert row(svc, kept)["source_ref"] == "https://wiki.example.com/testing"


def test_the_index_finds_the_pairs_the_exact_comparison_finds(svc, monkeypatch):
    """A small store's pairs are compared exactly (PAIR_EXACT_LIMIT), a large one's probe the HNSW index:
    on these memories both ways give the same pairs."""
    from cems_cli.store import lifecycle

    ids = [remember(svc, text, project="project:acme/api", source="manual")
           for text in (TESTS_A, TESTS_B, TESTS_C, BILLING, MAKEFILE, DEPLOY)]
    user = svc.identity.user
    with svc.conn.transaction():
        exact = lifecycle.near_duplicate_pairs(svc.conn, user, 0.9)
        monkeypatch.setattr(lifecycle, "PAIR_EXACT_LIMIT", 0)
        probed = lifecycle.near_duplicate_pairs(svc.conn, user, 0.9)
    assert {(a, b) for a, b, _ in exact} == {tuple(sorted(p)) for p in ((ids[0], ids[1]), (ids[0], ids[2]),
                                                                      (ids[1], ids[2]))}
    assert [(a, b) for a, b, _ in probed] == [(a, b) for a, b, _ in exact]
    assert all(abs(x[2] - y[2]) < 1e-6 for x, y in zip(exact, probed, strict=True))


def test_only_memories_of_one_category_and_one_project_are_merged(svc, cli):
    api = remember(svc, TESTS_A, project="project:acme/api", source="manual")
    # Alike texts of another project (captured there), of no project, and of another category stay apart.
    web = remember(svc, TESTS_B, project="project:acme/web:session:5e1f:L12", source="session")
    unfiled = remember(svc, TESTS_C, source="manual")
    learned = remember(
        svc, TESTS_VARIANTS[0], category="learnings", project="project:acme/api", source="manual"
    )
    # A project whose name starts with the other's is another project.
    v2 = remember(svc, TESTS_VARIANTS[1], project="project:acme/api-v2", source="manual")
    assert maintain(cli, "--dry-run")["consolidated"] == []

    # The same project, whatever follows its name in the reference: merged.
    session = remember(svc, TESTS_VARIANTS[2], project="project:acme/api:session:77aa:L3", source="session")
    assert maintain(cli)["consolidated"] == [{"kept": api, "merged": [session]}]
    for untouched in (web, unfiled, learned, v2):
        assert row(svc, untouched)["archived"] is False


def test_the_users_own_text_survives_a_captured_copy(svc, cli):
    long_ago = datetime.now(UTC) - timedelta(days=200)
    mine = remember(svc, TESTS_A, project="project:acme/api", source="manual", created_at=long_ago)
    copy = remember(svc, TESTS_B, project="project:acme/api:session:5e1f:L12", source="observer")
    # The captured copy is more recent, used more and of higher priority: the user's wording still stays.
    set_columns(svc, copy, "priority = 1.8, access_count = 20, last_accessed = now()")

    assert maintain(cli)["consolidated"] == [{"kept": mine, "merged": [copy]}]
    kept = row(svc, mine)
    assert kept["content"] == TESTS_A and kept["source"] == "manual"
    assert kept["priority"] == pytest.approx(1.8)  # it still takes what the copy had earned


def test_pinned_memories_are_never_touched(svc, cli):
    past = datetime.now(UTC) - timedelta(days=2)
    pinned = remember(svc, TESTS_A, pin=True, pin_reason="team rule", tags="pinned-tag")
    duplicate = remember(svc, TESTS_B, tags="extra")
    set_columns(svc, duplicate, "priority = 2.0")  # higher priority, but a pinned memory survives first
    pinned_twin = remember(svc, TESTS_C, pin=True)
    pinned_expired = remember(svc, BILLING, pin=True, expires_at=past)
    pinned_context = remember(svc, DEPLOY, category="context", source="session", pin=True,
                              created_at=datetime.now(UTC) - timedelta(days=400))
    pinned_archived = remember(svc, MAKEFILE, pin=True)
    set_columns(svc, pinned_archived, "archived = true")
    set_columns(svc, pinned_archived, "archived_at = now() - interval '400 days'")
    untouched = [pinned, pinned_twin, pinned_expired, pinned_context, pinned_archived]
    before = {memory_id: row(svc, memory_id) for memory_id in untouched}

    report = maintain(cli)

    assert report["expired"] == 0 and report["pruned"] == 0
    assert [group["merged"] for group in report["consolidated"]] == [[duplicate]]
    assert report["consolidated"][0]["kept"] in (pinned, pinned_twin)
    for memory_id in untouched:
        assert row(svc, memory_id) == before[memory_id]
    assert row(svc, duplicate)["archived"] is True
    assert row(svc, duplicate)["merged_into"] is not None


def test_dry_run_changes_nothing_and_reports_what_the_real_run_then_does(svc, cli):
    first = remember(svc, TESTS_A)
    second = remember(svc, TESTS_B)
    remember(svc, BILLING)
    expired = remember(svc, DEPLOY, expires_at=datetime.now(UTC) - timedelta(hours=1))
    old = remember(svc, MAKEFILE)
    set_columns(svc, old, "archived = true")
    set_columns(svc, old, "archived_at = now() - interval '31 days'")
    before = snapshot(svc, svc.settings.user)

    dry = maintain(cli, "--dry-run")

    assert dry["dry_run"] is True
    assert dry["consolidated"] == [{"kept": second, "merged": [first]}]  # equal priority: the more recent
    assert (dry["expired"], dry["pruned"]) == (1, 1)
    assert snapshot(svc, svc.settings.user) == before
    assert svc.conn.execute(
        "SELECT count(*) FROM maintenance_runs WHERE user_id = %s", (svc.settings.user,)
    ).fetchone()[0] == 0

    table = cli("maintain", "--dry-run")
    assert table.code == 0, table.stderr
    assert "dry run: nothing changed" in table.stdout
    assert f"kept {second[:8]}  ←  {first[:8]}" in table.stdout
    assert snapshot(svc, svc.settings.user) == before

    real = maintain(cli)
    # The real run also scrubs the pruned memory's text from the database files (test_purge_leaves_no_copy).
    assert real["scrubbed"]["tables"] is True
    # Summaries are planned from the memories as they are: the dry run's pair, merged by the real run, is
    # no group any more.
    assert (dry["summaries"]["written"], real["summaries"]["written"]) == (1, 0)
    assert {**{k: v for k, v in real.items() if k not in ("scrubbed", "summaries")}, "dry_run": True} == {
        k: v for k, v in dry.items() if k != "summaries"}
    assert row(svc, expired)["archived"] is True
    assert not exists(svc, old)
    assert svc.conn.execute(
        "SELECT report FROM maintenance_runs WHERE user_id = %s", (svc.settings.user,)
    ).fetchone()[0] == real


def test_expired_memories_are_hidden_everywhere_and_archived_by_maintenance(svc, cli):
    from cems_cli.store.memories import counts
    from cems_cli.store.profile import profile_sections

    long_ago = datetime.now(UTC) - timedelta(days=120)
    a_minute_ago = datetime.now(UTC) - timedelta(minutes=1)
    expired = remember(svc, BILLING, category="preferences", expires_at=a_minute_ago, created_at=long_ago)
    stale_context = remember(svc, DEPLOY, category="context", source="session", created_at=long_ago)
    searched_context = remember(svc, MAKEFILE, category="context", source="observer", created_at=long_ago)
    set_columns(svc, searched_context, "last_accessed = now() - interval '5 days'")
    # Injected by prompt recall, which is no access (access_count and last_accessed stay): still in use.
    recalled_context = remember(
        svc, "The nightly backup job writes snapshots to the cold storage bucket.", category="context",
        source="session", created_at=long_ago,
    )
    set_columns(svc, recalled_context, "last_recalled = now() - interval '1 day'")
    fresh_context = remember(svc, TESTS_A, category="context", source="session")
    typed_context = remember(  # written by a person, not captured: no TTL
        svc, "The staging cluster runs in eu-west-1 next to the primary database.", category="context",
        source="manual", created_at=long_ago,
    )

    # expires_at is honoured before any maintenance: search, list, the session profile and counts.
    assert expired not in search_ids(svc, "where are invoices stored billing service")
    assert expired not in [m.id for m in svc.list_memories(limit=100)]
    profile = [m.id for _title, records in profile_sections(svc.conn, svc.identity, None) for m in records]
    assert expired not in profile and stale_context in profile
    assert sum(n for _scope, _category, n in counts(svc.conn, svc.identity)) == 5

    # A longer TTL keeps the stale context memory; the expired one goes anyway.
    assert maintain(cli, "--dry-run", extra_env={"CEMS_CONTEXT_TTL_DAYS": "200"})["expired"] == 1

    report = maintain(cli, extra_env={"CEMS_CONTEXT_TTL_DAYS": "90"})  # the default (the env var stays set)

    assert report["expired"] == 2
    assert row(svc, expired)["archived"] is True
    assert row(svc, expired)["expires_at"] == a_minute_ago  # no TTL for what is not captured context
    stale = row(svc, stale_context)
    assert stale["archived"] is True
    # It gets the expiry it reached: 90 days after its last use.
    assert stale["expires_at"] == pytest.approx(long_ago + timedelta(days=90), abs=timedelta(seconds=5))
    for kept in (searched_context, recalled_context, fresh_context, typed_context):
        assert row(svc, kept)["archived"] is False
    assert stale_context not in search_ids(svc, "deploy billing service on Fridays after QA sign-off")
    assert searched_context in search_ids(svc, "indentation in the Makefile")


def test_memories_archived_past_the_grace_period_are_deleted_with_their_chunks(svc, cli):
    long_archived = remember(svc, BILLING)
    recently_archived = remember(svc, DEPLOY)
    just_forgotten = remember(svc, MAKEFILE)
    assert cli("forget", just_forgotten).code == 0
    assert cli("forget", long_archived).code == 0
    assert cli("forget", recently_archived).code == 0
    # Forgetting stamps archived_at (a trigger: whatever path archives a memory).
    assert row(svc, just_forgotten)["archived_at"] is not None
    set_columns(svc, long_archived, "archived_at = now() - interval '45 days'")
    set_columns(svc, recently_archived, "archived_at = now() - interval '10 days'")
    assert chunks(svc, long_archived) == 1

    assert maintain(cli)["pruned"] == 1
    assert not exists(svc, long_archived)
    assert chunks(svc, long_archived) == 0
    assert exists(svc, recently_archived) and exists(svc, just_forgotten)

    assert maintain(cli, extra_env={"CEMS_ARCHIVE_GRACE_DAYS": "5"})["pruned"] == 1
    assert not exists(svc, recently_archived) and exists(svc, just_forgotten)


def test_other_users_and_other_scopes_are_untouched(svc, cli, env):
    other_user = f"{env['CEMS_USER']}-other"
    other = svc.for_identity(other_user, None, None)
    remember(other, TESTS_A)
    remember(other, TESTS_B)
    remember(other, DEPLOY, expires_at=datetime.now(UTC) - timedelta(days=1))
    archived = remember(other, MAKEFILE)
    set_columns(other, archived, "archived = true")
    set_columns(other, archived, "archived_at = now() - interval '100 days'")
    before = snapshot(svc, other_user)

    # Mine: a personal memory and a near-identical shared one (another scope) are not merged either.
    mine = svc.for_identity(env["CEMS_USER"], "platform", None)
    remember(mine, TESTS_A)
    remember(mine, TESTS_B, scope="shared")

    report = maintain(cli)

    report.pop("summaries")
    assert report == {"dry_run": False, "consolidated": [], "expired": 0, "pruned": 0}
    assert snapshot(svc, other_user) == before


def test_concurrent_runs_never_merge_a_memory_twice(svc, env):
    from cems_cli.config import load_settings
    from cems_cli.engine.maintain import run_maintenance
    from cems_cli.store.db import connect

    ids = [remember(svc, TESTS_A), remember(svc, TESTS_B),
           remember(svc, TESTS_C)]
    settings = load_settings()
    start = threading.Barrier(2)
    reports = []

    def run() -> None:
        conn = connect(settings)
        try:
            start.wait()
            reports.append(run_maintenance(conn, settings))
        finally:
            conn.close()

    threads = [threading.Thread(target=run) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert len(reports) == 2
    merged = [m for report in reports for group in report.consolidated for m in group.merged]
    assert len(merged) == len(set(merged)) == 2
    live = [i for i in ids if not row(svc, i)["archived"]]
    assert len(live) == 1
    assert sorted(row(svc, live[0])["merged_from"][i]["id"] for i in range(2)) == sorted(merged)


def test_the_observer_runs_maintenance_periodically(svc, env, tmp_path):
    from cems_cli.capture import observer_daemon
    from cems_cli.capture.observer_settings import load_observer_settings
    from cems_cli.config import load_settings

    def last_run() -> datetime | None:
        found = svc.conn.execute(
            "SELECT last_run_at FROM maintenance_runs WHERE user_id = %s", (svc.settings.user,)
        ).fetchone()
        return found[0] if found else None

    def wait_for(condition, what: str, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if condition():
                return
            time.sleep(0.1)
        raise AssertionError(f"timed out waiting for {what}")

    first = remember(svc, BILLING, expires_at=datetime.now(UTC) - timedelta(minutes=1))
    root = Path(tmp_path / "projects")
    root.mkdir()
    observer_settings = load_observer_settings(
        observer_paths=str(root), observer_tick_seconds=0.2, observer_maintain_seconds=1.0
    )
    stop = threading.Event()
    errors: list[BaseException] = []

    def observe() -> None:
        try:
            observer_daemon.run(load_settings(), observer_settings, stop=stop)
        except BaseException as error:  # noqa: BLE001 - reported by the test below
            errors.append(error)

    thread = threading.Thread(target=observe)
    thread.start()
    try:
        wait_for(lambda: row(svc, first)["archived"], "the first maintenance run")
        wait_for(lambda: last_run() is not None, "the first run to be recorded")  # after its last step
        ran_at = last_run()
        second = remember(svc, DEPLOY, expires_at=datetime.now(UTC) - timedelta(minutes=1))
        wait_for(lambda: row(svc, second)["archived"], "the next maintenance run")
        wait_for(lambda: last_run() > ran_at, "the run to be recorded")
    finally:
        stop.set()
        thread.join(30)
    assert not thread.is_alive()
    assert errors == []


def test_memories_of_several_chunks_merge_only_when_every_part_is_alike(svc, cli):
    import numpy as np

    rng = np.random.default_rng(3)
    tail = rng.normal(size=384).astype(np.float32)
    tail /= np.linalg.norm(tail)
    other_tail = rng.normal(size=384).astype(np.float32)
    other_tail /= np.linalg.norm(other_tail)

    def add_chunk(memory_id: str, vector) -> None:  # a second part, as chunking a long text would give
        svc.conn.execute(
            "INSERT INTO memory_chunks (document_id, chunk_index, content, embedding) VALUES (%s, 1, %s, %s)",
            (memory_id, "second part", vector),
        )

    # Same openings; the second parts differ: not near duplicates.
    first, second = remember(svc, TESTS_A), remember(svc, TESTS_B)
    add_chunk(first, tail)
    add_chunk(second, other_tail)
    # Same openings, one has a second part the other lacks: not near duplicates either.
    third = remember(svc, TESTS_C)
    assert maintain(cli, "--dry-run")["consolidated"] == []

    # Alike part for part: merged.
    add_chunk(third, tail)
    report = maintain(cli)
    assert report["consolidated"] == [{"kept": third, "merged": [first]}]
    assert row(svc, second)["archived"] is False


def test_an_upgrade_starts_the_grace_period_of_memories_already_archived(svc, tmp_path, monkeypatch):
    """A store from before archived_at: its archived memories must not be deleted by the first maintenance
    (which the observer runs by itself shortly after starting), however long ago they were last updated."""
    import shutil
    import uuid

    import psycopg

    from cems_cli.store import lifecycle, migrations
    from cems_cli.store.db import locate

    old_sql = tmp_path / "sql"
    old_sql.mkdir()
    for migration in migrations.available_migrations():
        if migration.version < 7:  # the schema before lifecycle maintenance
            shutil.copy(migration.path, old_sql / migration.path.name)
    database = f"cems_upgrade_{uuid.uuid4().hex[:10]}"
    svc.conn.execute(f'CREATE DATABASE "{database}"')
    try:
        conninfo = psycopg.conninfo.make_conninfo(locate(svc.settings).conninfo, dbname=database)
        with psycopg.connect(conninfo, autocommit=True) as conn:
            dim, model = svc.settings.resolved_embedding_dim, svc.settings.resolved_embedding_model
            with monkeypatch.context() as patched:
                patched.setattr(migrations, "sql_dir", lambda: old_sql)
                migrations.migrate(conn, dim, model)
            assert migrations.applied_versions(conn) == {1, 2, 3, 4, 5, 6}
            archived_long_ago = conn.execute(
                "INSERT INTO memory_documents (content, content_hash, user_id, archived, created_at, "
                "updated_at) VALUES ('forgotten a year ago', 'h1', 'upgrader', true, "
                "now() - interval '400 days', now() - interval '400 days') RETURNING id"
            ).fetchone()[0]

            assert "007_lifecycle" in migrations.migrate(conn, dim, model)

            archived_at = conn.execute(
                "SELECT archived_at >= now() - interval '1 minute' FROM memory_documents WHERE id = %s",
                (archived_long_ago,),
            ).fetchone()[0]
            assert archived_at is True  # the grace period counts from the upgrade
            with conn.transaction():
                assert lifecycle.prune(conn, "upgrader", 30, dry_run=False) == 0
            assert conn.execute(
                "SELECT count(*) FROM memory_documents WHERE id = %s", (archived_long_ago,)
            ).fetchone()[0] == 1
    finally:
        svc.conn.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')


def _fixture_pairs() -> list[dict]:
    import json

    path = Path(__file__).parent.parent / "fixtures" / "consolidation_pairs.json"
    return json.loads(path.read_text(encoding="utf-8"))["pairs"]


def test_memories_one_value_apart_are_never_merged_and_a_paraphrase_is(svc, cli):
    """The finding: "Staging runs Kubernetes 1.29" and "Production runs Kubernetes 1.27" became one memory.
    Near misses whose cosine passes the threshold, one pair per fact so that no two pairs are alike."""
    from cems_cli.engine.maintain import SIMILARITY_THRESHOLD

    pairs = _fixture_pairs()
    facts: set[str] = set()
    near: list[dict] = []
    for pair in sorted(pairs, key=lambda p: -p["cosine"]):
        fact = pair["a"].split()[1] + pair["a"].split()[-1]  # one pair per fact (facts share no such words)
        if pair["kind"] == "near_miss" and pair["cosine"] >= SIMILARITY_THRESHOLD and fact not in facts:
            facts.add(fact)
            near.append(pair)
        if len(near) == 5:
            break
    staging = next(p for p in pairs if p["b"] == "Production runs Kubernetes 1.29.")
    near.append(staging)  # the finding's own pair (0.9+ alike), one value apart
    paraphrase = next(p for p in pairs if p["kind"] == "paraphrase" and p["cosine"] >= 0.95
                      and p["a"].split()[1] + p["a"].split()[-1] not in facts | {"runs1.29."})
    ids = {}
    for pair in [*near, paraphrase]:
        for text in (pair["a"], pair["b"]):
            if text not in ids:
                ids[text] = remember(svc, text, project="project:acme/api", source="manual")

    dry = cli("maintain", "--dry-run")
    assert dry.code == 0, dry.stderr
    # The dry run shows both texts of the merge it would do, and no other.
    assert paraphrase["a"] in dry.stdout and paraphrase["b"] in dry.stdout
    assert "Kubernetes" not in dry.stdout

    report = maintain(cli, texts=True)
    assert len(report["consolidated"]) == 1
    group = report["consolidated"][0]
    assert {group["kept"], *group["merged"]} == {ids[paraphrase["a"]], ids[paraphrase["b"]]}
    assert {group["kept_text"], *group["merged_texts"]} == {paraphrase["a"], paraphrase["b"]}
    for pair in near:
        assert row(svc, ids[pair["a"]])["archived"] is False and row(svc, ids[pair["b"]])["archived"] is False
    # The record of the run keeps no copy of the texts (a purge must leave none).
    stored = svc.conn.execute(
        "SELECT report::text FROM maintenance_runs WHERE user_id = %s", (svc.settings.user,)
    ).fetchone()[0]
    assert paraphrase["a"] not in stored and paraphrase["b"] not in stored


def test_restore_undoes_a_merge_and_the_two_are_not_merged_again(svc, cli):
    kept = remember(svc, TESTS_A, project="project:acme/api", source="manual", tags="testing")
    merged = remember(svc, TESTS_B, project="project:acme/api:session:5e1f:L12", source="observer",
                      tags="ci,testing", title="Tests before pushing")
    set_columns(svc, kept, "priority = 1.2, access_count = 3")
    set_columns(svc, merged, "priority = 1.7, access_count = 5, expires_at = now() + interval '30 days'")
    before = row(svc, kept)

    assert maintain(cli)["consolidated"] == [{"kept": kept, "merged": [merged]}]
    after_merge = row(svc, kept)
    assert after_merge["priority"] == pytest.approx(1.7) and after_merge["title"] == "Tests before pushing"
    assert after_merge["tags"] == ["testing", "ci"] and after_merge["access_count"] == 8

    result = cli("restore", merged[:8], "--json")
    assert result.code == 0, result.stderr
    restored = result.json()
    assert restored["id"] == merged and restored["merged_into"] == kept
    assert set(restored["undone"]) == {"priority", "title", "tags", "access_count"}
    back = row(svc, merged)
    assert back["archived"] is False and back["merged_into"] is None and back["archived_at"] is None
    survivor = row(svc, kept)
    for column in ("priority", "title", "tags", "access_count", "expires_at", "source", "source_ref"):
        assert survivor[column] == before[column], column
    assert survivor["merged_from"] == [{"id": merged, "restored": True}]
    assert back["merged_from"] == [{"kept_apart_from": kept}]
    assert merged in [m.id for m in svc.list_memories(limit=100)]

    # The observer's next run must not merge them again.
    assert maintain(cli)["consolidated"] == []
    assert row(svc, merged)["archived"] is False


def test_a_memory_restored_out_of_a_pinned_one_stays_apart(svc, cli):
    pinned = remember(svc, TESTS_A, pin=True)
    duplicate = remember(svc, TESTS_B)
    before = row(svc, pinned)
    assert maintain(cli)["consolidated"] == [{"kept": pinned, "merged": [duplicate]}]
    assert cli("restore", duplicate).code == 0
    assert row(svc, pinned) == before  # a pinned memory is left exactly as it is, by the merge and after
    assert maintain(cli)["consolidated"] == []
    # A third wording merges into the pinned one; the restored memory stays apart from both.
    third = remember(svc, TESTS_C)
    report = maintain(cli)
    assert report["consolidated"] == [{"kept": pinned, "merged": [third]}]
    assert row(svc, duplicate)["archived"] is False


def test_restore_brings_back_an_expired_memory(svc, cli):
    expired = remember(svc, BILLING, expires_at=datetime.now(UTC) - timedelta(hours=1))
    assert maintain(cli)["expired"] == 1
    assert row(svc, expired)["archived"] is True

    result = cli("restore", expired)
    assert result.code == 0, result.stderr
    assert f"Restored {expired}" in result.stdout and "expiry" in result.stdout
    back = row(svc, expired)
    assert back["archived"] is False and back["expires_at"] is None
    assert expired in search_ids(svc, "where are invoices stored billing service")
    assert maintain(cli)["expired"] == 0


def test_restore_refuses_an_unknown_or_live_memory_in_one_line(svc, cli):
    live = remember(svc, MAKEFILE)
    for given, said in (("0123abcd", "no archived memory of yours"), (live, "not archived")):
        result = cli("restore", given)
        assert result.code != 0
        assert said in result.stderr and len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert row(svc, live)["archived"] is False

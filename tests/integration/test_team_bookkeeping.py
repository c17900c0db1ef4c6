# ruff: noqa: F811  (the `world` fixture, imported, is every test's argument)
"""A member's own bookkeeping on a team server (sql/023_member_bookkeeping.sql): the observer's read
positions, backlog and state, capture's session records, maintenance runs, stored settings, cems_meta,
summaries, and the role map. Members held SELECT, INSERT and UPDATE on those tables under the policies, and
EXPLAIN ANALYZE of a query with a test of theirs told them whether another user's hidden row passed it:
bisecting, bob spelled out alice's transcript paths, error lines and settings. Members now hold no privilege
on any of them and do all of it through functions that touch the caller's own rows.

Red: alice (admin) and bob; blue: bob (admin). See tests/integration/test_teams_rls.py for the world.
"""

from __future__ import annotations

import shutil
import uuid
from pathlib import Path

import psycopg
import pytest
from psycopg import sql
from psycopg.types.json import Jsonb

from tests.integration.test_team_attacks import VECTOR, _word
from tests.integration.test_teams_rls import World, world  # noqa: F401  (the fixture)
from tests.support.paths import SAMPLE_SESSION, SAMPLE_TRANSCRIPT

# Each table, and a probe of a column of another user's row: a LEAKPROOF test of the member's (starts_with)
# that ran before the policy's.
PROBES = {
    "observer_files": "SELECT 1 FROM observer_files WHERE starts_with(path, {})",
    "observer_backlog": "SELECT 1 FROM observer_backlog WHERE starts_with(path, {})",
    "observer_state": "SELECT 1 FROM observer_state WHERE starts_with(last_error, {})",
    "capture_sessions": "SELECT 1 FROM capture_sessions WHERE starts_with(session_id, {})",
    "maintenance_runs": "SELECT 1 FROM maintenance_runs WHERE starts_with(user_id, {})",
    "stored_settings": "SELECT 1 FROM stored_settings WHERE starts_with(owner, {})",
    "cems_meta": "SELECT 1 FROM cems_meta WHERE starts_with(key, {})",
    "memory_summaries": "SELECT 1 FROM memory_summaries WHERE starts_with(content, {})",
    "cems_role_map": "SELECT 1 FROM cems_role_map WHERE starts_with(user_id, {})",
}


def _alices_bookkeeping(world: World) -> dict[str, str]:
    """A row of alice's in every bookkeeping table (written by the administrator: whatever her own calls may
    be), and what of it bob would spell out."""
    path = f"/home/alice/.claude/projects/{_word()}.jsonl"
    session = f"alice-session-{_word()}"
    error = f"alice's observer failed reading {path}"
    mapped = f"role_{uuid.uuid4().hex[:8]}"
    rows = {
        "observer_files": ("INSERT INTO observer_files (user_id, path) VALUES (%(u)s, %(p)s)", path),
        "observer_backlog": ("INSERT INTO observer_backlog (user_id, path, chunk, chars) "
                             "VALUES (%(u)s, %(p)s, '{}', 1)", path),
        "observer_state": ("INSERT INTO observer_state (user_id, last_error) VALUES (%(u)s, %(e)s)", error),
        "capture_sessions": ("INSERT INTO capture_sessions (user_id, session_id, record) "
                             "VALUES (%(u)s, %(s)s, '{}')", session),
        "maintenance_runs": ("INSERT INTO maintenance_runs (user_id, last_run_at, report) "
                             "VALUES (%(u)s, now(), '{}')", world.alice),
        "stored_settings": ("INSERT INTO stored_settings (owner_kind, owner, key, value, updated_by) "
                            "VALUES ('user', %(u)s, 'recall_limit', '4', %(u)s)", world.alice),
        "cems_meta": ("INSERT INTO cems_meta (key, value) VALUES ('scrub_pending:' || %(u)s, 'now')",
                      f"scrub_pending:{world.alice}"),
        "memory_summaries": ("INSERT INTO memory_summaries (user_id, level, title, content, members, "
                             "member_key, period_start, period_end, method, embedding) VALUES (%(u)s, 1, "
                             "'t', %(e)s, '{}', 'k', now(), now(), 'extractive', %(v)s::vector)", error),
        "cems_role_map": ("INSERT INTO cems_role_map (role_name, user_id) VALUES (%(m)s, %(m)s)", mapped),
    }
    for statement, _ in rows.values():
        world.admin.execute(statement, {"u": world.alice, "p": path, "e": error, "s": session, "m": mapped,
                                        "v": VECTOR})
    return {table: hidden for table, (_, hidden) in rows.items()}


def test_explain_over_a_bookkeeping_table_is_refused_to_a_member(world):
    hidden = _alices_bookkeeping(world)
    try:
        with world.connect(world.bob) as bob:
            bob.execute("SET enable_indexscan = off")  # a scan of every user's rows: the member's to choose
            bob.execute("SET enable_bitmapscan = off")
            for table, probe in PROBES.items():
                statement = sql.SQL("EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF, BUFFERS OFF) "
                                    + probe)
                for value in (hidden[table][:12], "zq" + hidden[table][2:12]):  # right, and wrong
                    with pytest.raises(psycopg.errors.InsufficientPrivilege):
                        bob.execute(statement.format(sql.Literal(value)))
                        pytest.fail(f"bob may query {table}")
                with pytest.raises(psycopg.errors.InsufficientPrivilege):
                    bob.execute(sql.SQL("SELECT * FROM {}").format(sql.Identifier(table)))
    finally:
        world.admin.execute("DELETE FROM cems_role_map WHERE role_name = %s", (hidden["cems_role_map"],))


def test_a_member_holds_select_on_schema_migrations_and_execute_on_functions_only(world):
    tables = [r[0] for r in world.admin.execute(
        "SELECT relname FROM pg_class WHERE relnamespace = current_schema()::regnamespace "
        "AND relkind IN ('r', 'p', 'v', 'm') ORDER BY 1")]
    assert set(PROBES) <= set(tables)
    for role in ("cems_app", world.bob):
        held = {(table, privilege) for table in tables
                for privilege in ("SELECT", "INSERT", "UPDATE", "DELETE", "TRUNCATE", "REFERENCES", "TRIGGER")
                if world.admin.execute("SELECT has_table_privilege(%s, %s, %s)",
                                       (role, table, privilege)).fetchone()[0]}
        assert held == {("schema_migrations", "SELECT")}, role
        columns = {table for table in tables
                   for privilege in ("SELECT", "INSERT", "UPDATE", "REFERENCES")
                   if world.admin.execute("SELECT has_any_column_privilege(%s, %s, %s)",
                                          (role, table, privilege)).fetchone()[0]}
        assert columns == {"schema_migrations"}, role
        sequences = world.admin.execute(
            "SELECT count(*) FROM pg_class c WHERE c.relnamespace = current_schema()::regnamespace "
            "AND c.relkind = 'S' AND (has_sequence_privilege(%(r)s, c.oid, 'USAGE') "
            "OR has_sequence_privilege(%(r)s, c.oid, 'SELECT') "
            "OR has_sequence_privilege(%(r)s, c.oid, 'UPDATE'))",
            {"r": role}).fetchone()[0]
        assert sequences == 0, role
    grants = world.admin.execute(
        "SELECT table_name, privilege_type FROM information_schema.role_table_grants "
        "WHERE grantee = 'cems_app' AND table_schema = current_schema()").fetchall()
    assert grants == [("schema_migrations", "SELECT")]


def _observer_env(world: World, root: Path) -> None:
    world.monkeypatch.setenv("CEMS_OBSERVER_PATHS", str(root))
    world.monkeypatch.setenv("CEMS_OBSERVER_IDLE_SECONDS", "0")
    world.monkeypatch.setenv("CEMS_OBSERVER_LLM", "false")


def test_a_members_observer_capture_maintenance_settings_and_summaries_work(world, tmp_path):
    import cems
    from cems_cli.store import lifecycle

    # The observer, as `cems observe --once`: read positions, the session's record and context memory.
    root = tmp_path / "projects"
    transcript = root / "-home-bob-invoice-worker" / f"{SAMPLE_SESSION}.jsonl"
    transcript.parent.mkdir(parents=True)
    shutil.copy(SAMPLE_TRANSCRIPT, transcript)
    _observer_env(world, root)
    report = world.ok(world.bob, "observe", "--once", team=world.red)
    assert report["errors"] == [] and report["observations"] == 1, report
    assert world.ok(world.bob, "observe", "--once", team=world.red)["bytes_read"] == 0  # nothing new
    status = world.ok(world.bob, "observe", "status", team=world.red)
    assert status["files_watched"] == 1 and status["bytes_behind"] == 0 and status["observations"] == 1
    read, memory = world.admin.execute(
        "SELECT f.read_offset, s.memory_id::text FROM observer_files f JOIN capture_sessions s "
        "ON s.user_id = f.user_id WHERE f.user_id = %s AND f.path = %s AND s.session_id = %s",
        (world.bob, str(transcript), SAMPLE_SESSION)).fetchone()
    assert read == transcript.stat().st_size
    assert world.admin.execute("SELECT user_id, category FROM memory_documents WHERE id = %s",
                               (memory,)).fetchone() == (world.bob, "context")
    assert world.admin.execute("SELECT last_run_at IS NOT NULL FROM observer_state WHERE user_id = %s",
                               (world.bob,)).fetchone() == (True,)
    with cems.open(database_url=world.urls[world.bob], team=world.red) as library:
        [entry] = [s for s in library.sessions() if s.session_id == SAMPLE_SESSION]
        assert entry.asked and entry.memories[0].id == memory  # the record's questions, through the function

    # Settings: his own, and his team's that its admin set; read back as in effect.
    assert world.ok(world.bob, "config", "set", "recall_limit", "4", team=world.red)["user"] == 4
    world.ok(world.alice, "config", "set", "search_limit", "9", "--team", team=world.red)
    assert world.ok(world.bob, "config", "get", "recall_limit", team=world.red)["source"] == "user"
    got = world.ok(world.bob, "config", "get", "search_limit", team=world.red)
    assert (got["value"], got["source"]) == (9, "team")
    assert world.ok(world.bob, "config", "unset", "recall_limit", team=world.red)["removed"] is True

    # Maintenance and summaries: the run is recorded, a purge marks his text for scrubbing.
    world.ok(world.bob, "remember", "Bob's invoice worker retries webhooks three times before giving up",
             team=world.red)
    world.ok(world.bob, "remember", "The invoice worker retries each webhook three times, then gives up",
             team=world.red)
    purged = world.ok(world.bob, "remember", "bob's scratch note to purge", team=world.red)["id"]
    world.ok(world.bob, "forget", "--purge", purged, team=world.red)
    assert world.admin.execute("SELECT count(*) FROM cems_meta WHERE key = %s",
                               (f"scrub_pending:{world.bob}",)).fetchone() == (1,)
    maintained = world.ok(world.bob, "maintain", team=world.red)
    assert maintained["dry_run"] is False and maintained["summaries"]["written"] >= 1
    assert world.admin.execute("SELECT count(*) FROM maintenance_runs WHERE user_id = %s",
                               (world.bob,)).fetchone() == (1,)
    with psycopg.connect(world.urls[world.bob], autocommit=True) as bob:
        assert lifecycle.seconds_since_last_run(bob, world.bob) < 60
    listed = world.ok(world.bob, "summaries", team=world.red)["summaries"]
    assert listed and world.admin.execute("SELECT count(*) FROM memory_summaries WHERE user_id = %s",
                                          (world.bob,)).fetchone()[0] == len(listed)


def test_a_members_llm_backlog_goes_through_the_functions(world, fake_openai, tmp_path):
    from cems_cli.capture.observer import Observer
    from cems_cli.capture.observer_settings import ObserverSettings
    from cems_cli.config import load_settings
    from cems_cli.engine.service import MemoryService
    from cems_cli.llm import LLMClient
    from tests.integration.test_observer_llm import extractor
    from tests.integration.test_observer_synth import write_session

    root = tmp_path / "projects"
    write_session(root / "p" / "llm-session-1.jsonl", "llm-session-1", 2, seed=231)
    world.monkeypatch.setenv("CEMS_DATABASE_URL", world.urls[world.bob])
    world.monkeypatch.delenv("CEMS_USER", raising=False)

    def backlog() -> list[tuple[int, int]]:
        return world.admin.execute("SELECT chars, attempts FROM observer_backlog WHERE user_id = %s "
                                   "ORDER BY id", (world.bob,)).fetchall()

    with MemoryService(load_settings()) as svc:
        assert svc.restricted and svc.settings.user == world.bob
        settings = ObserverSettings(observer_paths=str(root), observer_idle_seconds=0,
                                    observer_backoff_initial=0.1, observer_backoff_max=0.1,
                                    observer_llm_max_attempts=5)
        client = LLMClient(fake_openai.base_url, "sk-test", "fake-model", 5.0)
        fake_openai.mode = "invalid_json"
        report = Observer(svc, settings, client).sync()
        assert report.llm_failures == 1 and report.backlog == 2
        queued = backlog()
        assert len(queued) == 2 and all(chars > 0 and attempts == 1 for chars, attempts in queued)
        state = world.admin.execute("SELECT llm_failures, last_error FROM observer_state WHERE user_id = %s",
                                    (world.bob,)).fetchone()
        assert state[0] == 1 and "LLM extraction failed" in state[1]
        fake_openai.mode, fake_openai.responder = "ok", extractor
        report = Observer(svc, settings, client).sync()
        assert report.errors == [] and report.extracted == 1 and backlog() == []
    assert world.admin.execute("SELECT count(*) FROM memory_documents WHERE user_id = %s AND content LIKE "
                               "'LLM decision for Task %%'", (world.bob,)).fetchone()[0] == 2


def test_crafted_arguments_touch_only_the_callers_rows(world):
    path = f"/home/alice/.claude/projects/{_word()}.jsonl"
    with world.connect(world.alice) as alice:
        alice.execute("SELECT cems_add_observer_file(%s)", (path,))
        alice.execute("SELECT cems_add_backlog(%s, '[{\"text\": \"alice\"}]')", (path,))
        alice.execute("SELECT cems_save_capture_session('s-1', '{\"asked\": [\"alice\"]}', NULL)")
        alice.execute("SELECT cems_put_setting('user', NULL, 'recall_limit', '4')")
    alices_memory = world.ok(world.alice, "remember", "alice's personal note for the crafted test")["id"]
    backlog = world.admin.execute("SELECT id FROM observer_backlog WHERE user_id = %s",
                                  (world.alice,)).fetchone()[0]

    def alices() -> tuple:
        return world.admin.execute(
            "SELECT (SELECT (read_offset, version, pending IS NULL) FROM observer_files "
            "        WHERE user_id = %(u)s), "
            "(SELECT (attempts, last_error) FROM observer_backlog WHERE id = %(b)s), "
            "(SELECT record FROM capture_sessions WHERE user_id = %(u)s), "
            "(SELECT value FROM stored_settings WHERE owner_kind = 'user' AND owner = %(u)s)::text",
            {"u": world.alice, "b": backlog}).fetchone()

    before = alices()
    big = "x" * 2_000_000
    with world.connect(world.bob) as bob:
        # Her path, her ids, her session: bob's calls see and change nothing of hers.
        assert bob.execute("SELECT count(*) FROM cems_my_observer_files(ARRAY[%s])",
                           (path,)).fetchone() == (0,)
        assert bob.execute("SELECT count(*) FROM cems_lock_observer_file(%s)", (path,)).fetchone() == (0,)
        assert bob.execute("SELECT cems_save_observer_file(%s, 1, 1, 99, 99, 0, '', 0, '{\"open\": true}', "
                           "NULL, 1, 0, 0, 7)", (path,)).fetchone() == (False,)
        assert bob.execute("SELECT cems_backlog_failed(%s, 'bob was here')", ([backlog],)).fetchone() == (0,)
        assert bob.execute("SELECT count(*) FROM cems_backlog_batch(%s, 100000)", (path,)).fetchone() == (0,)
        assert bob.execute("SELECT count(*) FROM cems_my_capture_sessions(ARRAY['s-1'])").fetchone() == (0,)
        assert bob.execute("SELECT count(*) FROM cems_lock_capture_session('s-1')").fetchone() == (0,)
        assert world.alice not in {r[0] for r in bob.execute("SELECT owner FROM cems_visible_settings()")}
        assert not [k for (k,) in bob.execute("SELECT key FROM cems_visible_meta()") if k.startswith("scrub")
                    and k != f"scrub_pending:{world.bob}"]
        # His own session naming her memory: recorded as none (and his row, not hers).
        bob.execute("SELECT cems_save_capture_session('s-1', '{\"asked\": [\"bob\"]}', %s)", (alices_memory,))
        assert bob.execute("SELECT user_id, memory_id FROM cems_my_capture_sessions()").fetchall() == [
            (world.bob, None)]
        # Settings in someone else's name: hers, a team he does not administer, one he is not in.
        for kind, owner in (("user", world.alice), ("team", world.red), ("team", f"nobody-{_word()}"),
                            ("nonsense", None)):
            with pytest.raises(psycopg.errors.InsufficientPrivilege), bob.transaction():
                bob.execute("SELECT cems_put_setting(%s, %s, 'recall_limit', '1')", (kind, owner))
        # Crafted and oversized values: refused in one line.
        for call, args in (
            ("SELECT cems_put_setting('user', NULL, %s, '1')", ("recall_limit'; --",)),
            ("SELECT cems_put_setting('user', NULL, %s, '1')", (None,)),
            ("SELECT cems_put_setting('user', NULL, 'recall_limit', %s)", (Jsonb(big),)),
            ("SELECT cems_put_setting('user', NULL, 'recall_limit', NULL)", ()),
            ("SELECT cems_add_observer_file(%s)", (None,)),
            ("SELECT cems_add_observer_file(%s)", ("/" + "p" * 5000,)),
            ("SELECT cems_save_observer_file('/p', 0, 0, 0, 0, 0, %s, 0, NULL, NULL, 0, 0, 0, 0)",
             ("f" * 129,)),
            ("SELECT cems_save_observer_file('/p', 0, 0, 0, 0, 0, '', 0, %s, NULL, 0, 0, 0, 0)",
             (Jsonb({"text": big}),)),
            ("SELECT cems_add_backlog('/p', %s)", (Jsonb({"text": "not an array"}),)),
            ("SELECT cems_add_backlog('/p', %s)", (Jsonb(["not an object"]),)),
            ("SELECT cems_add_backlog('/p', %s)", (Jsonb([{"text": big}]),)),
            ("SELECT cems_add_backlog('/p', %s)", (Jsonb([{}] * 1001),)),
            ("SELECT cems_add_backlog(NULL, '[]')", ()),
            ("SELECT cems_backlog_failed(array_fill(1::bigint, ARRAY[10001]), 'x')", ()),
            ("SELECT cems_note_observer_llm(-1, NULL)", ()),
            ("SELECT cems_note_observer_llm(NULL, NULL)", ()),
            ("SELECT cems_save_capture_session(NULL, '{}', NULL)", ()),
            ("SELECT cems_save_capture_session('s', NULL, NULL)", ()),
            ("SELECT cems_save_capture_session('s', '[]', NULL)", ()),
            ("SELECT cems_save_capture_session('s', %s, NULL)", (Jsonb({"asked": [big]}),)),
            ("SELECT cems_record_maintenance_run(NULL)", ()),
            ("SELECT cems_record_maintenance_run(%s)", (Jsonb({"ids": ["x" * 100] * 100_000}),)),
            ("SELECT count(*) FROM cems_my_observer_files(array_fill('p'::text, ARRAY[100001]))", ()),
        ):
            with pytest.raises(psycopg.errors.InvalidParameterValue), bob.transaction():
                bob.execute(call, args)
                pytest.fail(f"not refused: {call}")
        # A long error line is cut, not stored whole.
        bob.execute("SELECT cems_note_observer_error(%s)", (big,))
        assert bob.execute("SELECT length(last_error) FROM cems_my_observer_state()").fetchone() == (2000,)
        # A summary of her memory, or of nothing, or too large: refused.
        refused = (psycopg.errors.ForeignKeyViolation, psycopg.errors.InvalidParameterValue)
        for members in ([alices_memory], [], [str(uuid.uuid4())], None, [None]):
            with pytest.raises(refused), bob.transaction():
                bob.execute("SELECT cems_insert_summary('', 1, 't', 'forged', %s::uuid[], 'k', now(), now(), "
                            "'extractive', %s::vector)", (members, VECTOR))
        bobs = world.ok(world.bob, "remember", "bob's note a summary may quote")["id"]
        with pytest.raises(psycopg.errors.InvalidParameterValue), bob.transaction():
            bob.execute("SELECT cems_insert_summary('', 1, 't', %s, %s::uuid[], 'k', now(), now(), "
                        "'extractive', %s::vector)", (big, [bobs], VECTOR))
        made = bob.execute("SELECT cems_insert_summary('', 1, 't', 'bob''s summary', %s::uuid[], 'k', now(), "
                           "now(), 'extractive', %s::vector)", ([bobs], VECTOR)).fetchone()[0]
        assert bob.execute("SELECT user_id FROM cems_my_summaries() WHERE id = %s", (made,)).fetchone() == (
            world.bob,)
        # His scrub mark is his own key, whatever he is called elsewhere.
        bob.execute("SELECT cems_mark_scrub_pending()")
    assert alices() == before
    assert world.admin.execute("SELECT count(*) FROM cems_meta WHERE key = %s",
                               (f"scrub_pending:{world.bob}",)).fetchone() == (1,)

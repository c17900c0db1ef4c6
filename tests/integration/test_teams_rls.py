"""Teams on a shared PostgreSQL (sql/009_teams_rls.sql): identity from the database, isolation by row-level
security, the audit trail, quotas.

The session's embedded server plays the shared server: the test creates two login roles with passwords
(`cems admin grant --create --password-stdin`, as the superuser), two teams, and runs `cems` as each role
through CEMS_DATABASE_URL (the same socket, another user and password). Red: alice (admin) and bob; blue:
bob (admin). Every `cems` call of a role also carries a CEMS_USER naming someone else: it must change
nothing.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import psycopg
import pytest
from psycopg.types.json import Jsonb

from tests.conftest import CliResult


@dataclass
class World:
    admin: psycopg.Connection  # the superuser: sees every row
    alice: str
    bob: str
    red: str
    blue: str
    urls: dict[str, str]
    run_cli: Any
    monkeypatch: pytest.MonkeyPatch
    forged: str = field(default_factory=lambda: f"forged-{uuid.uuid4().hex[:6]}")

    def run(self, role: str | None, *args: str, team: str | None = None, user: str | None = None,
            stdin: bytes | None = None) -> CliResult:
        """`cems ARGS` as `role` (None: the superuser, through the embedded store), with CEMS_TEAM=team and
        a CEMS_USER that names someone else unless `user` is given."""
        if role is None:
            self.monkeypatch.delenv("CEMS_DATABASE_URL", raising=False)
        else:
            self.monkeypatch.setenv("CEMS_DATABASE_URL", self.urls[role])
        if team is None:
            self.monkeypatch.delenv("CEMS_TEAM", raising=False)
        else:
            self.monkeypatch.setenv("CEMS_TEAM", team)
        self.monkeypatch.setenv("CEMS_USER", user or (self.forged if role else "superuser-test"))
        return self.run_cli(*args, stdin=stdin)

    def ok(self, role: str | None, *args: str, **options: Any) -> Any:
        result = self.run(role, *args, "--json", **options)
        assert result.code == 0, (args, result.stderr)
        return result.json()

    def refused(self, role: str | None, *args: str, **options: Any) -> str:
        result = self.run(role, *args, **options)
        assert result.code != 0, (args, result.stdout)
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
        assert "internal error" not in lines[0]
        return lines[0]

    def connect(self, role: str) -> psycopg.Connection:
        return psycopg.connect(self.urls[role], autocommit=True)


def begin_search(conn: psycopg.Connection, team: str | None = None, scope: str = "both") -> bool:
    """What a member's search functions ask for first (sql/025_searches_and_changes.sql): a search begun in an
    earlier transaction of the same session, for `team`. True when it is recorded in the audit trail."""
    return bool(conn.execute("SELECT cems_begin_search('search', %s, %s, repeat('a', 64))",
                             (scope, team)).fetchone()[0])


def _url(conninfo: str, role: str, password: str) -> str:
    info = psycopg.conninfo.conninfo_to_dict(conninfo)
    info.pop("passfile", None)
    info.update(user=role, password=password)
    return psycopg.conninfo.make_conninfo(**info)


@pytest.fixture
def world(env: dict[str, str], cli: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[World]:
    from cems_cli.config import load_settings
    from cems_cli.paths import pgdata_path
    from cems_cli.store.db import connect
    from cems_cli.store.embedded import ensure_server

    connect(load_settings(), check_dimension=False).close()  # the superuser applies every migration
    superuser = ensure_server(pgdata_path(load_settings().home)).conninfo()
    admin = psycopg.connect(superuser, autocommit=True)
    tag = uuid.uuid4().hex[:8]
    w = World(admin, f"alice_{tag}", f"bob_{tag}", f"red-{tag}", f"blue-{tag}", {}, cli, monkeypatch)
    try:
        for role in (w.alice, w.bob):
            password = f"pw-{uuid.uuid4().hex}"
            granted = w.ok(None, "admin", "grant", role, "--create", "--password-stdin",
                           stdin=(password + "\n").encode())
            assert granted["created"] and granted["password_set"] and granted["user"] == role
            w.urls[role] = _url(superuser, role, password)
        w.ok(None, "team", "create", w.red)
        w.ok(None, "team", "add", w.red, w.alice, "--admin")
        w.ok(None, "team", "add", w.red, w.bob)
        w.ok(None, "team", "create", w.blue)
        w.ok(None, "team", "add", w.blue, w.bob, "--admin")
        yield w
    finally:
        for role in (w.alice, w.bob):
            try:
                admin.execute(psycopg.sql.SQL("DROP ROLE IF EXISTS {}").format(psycopg.sql.Identifier(role)))
            except psycopg.Error:
                pass
        admin.execute("DELETE FROM cems_quotas WHERE user_id IN (%s, %s)", (w.alice, w.bob))
        admin.close()


def _owners(world: World, ids: list[str]) -> dict[str, str]:
    rows = world.admin.execute(
        "SELECT id::text, user_id FROM memory_documents WHERE id = ANY(%s::uuid[])", (ids,)
    ).fetchall()
    return dict(rows)


def test_identity_comes_from_the_database_not_from_cems_user(world):
    status = world.ok(world.alice, "status", user=world.bob)  # CEMS_USER=bob: a forgery
    assert status["user"] == world.alice
    made = world.ok(world.alice, "remember", "alice writes this under a forged CEMS_USER", user=world.bob)
    assert _owners(world, [made["id"]]) == {made["id"]: world.alice}
    # Bob's view is unchanged by alice's forgery, and by his own of alice's name.
    assert made["id"] not in _ids(world.ok(world.bob, "list", user=world.alice), "memories")


def test_a_team_that_is_not_yours_is_refused_in_one_line(world):
    line = world.refused(world.alice, "status", team=world.blue)
    assert f"{world.alice} is not a member of team '{world.blue}'" in line
    assert world.ok(world.alice, "status", team=world.red)["team"] == world.red


def _ids(payload: Any, key: str) -> list[str]:
    return [item["id"] for item in payload[key]]


def test_every_read_path_shows_only_what_the_role_may_see(world):
    secret = world.ok(world.alice, "remember", "alice keeps her kubeconfig under vault path ops/k8s")["id"]
    shared = world.ok(world.alice, "remember", "red team deploys with helm on fridays", "--scope", "shared",
                      team=world.red)["id"]
    blue = world.ok(world.bob, "remember", "blue team rotates the pager every tuesday", "--scope", "shared",
                    team=world.blue)["id"]

    for role, team, visible, hidden in (
        (world.bob, world.red, {shared}, {secret}),
        (world.alice, world.red, {secret, shared}, {blue}),
    ):
        for forged in (world.alice, world.bob):  # whatever CEMS_USER says
            found = _ids(world.ok(role, "search", "kubeconfig vault helm fridays pager tuesday",
                                  "--limit", "20", team=team, user=forged), "results")
            assert visible <= set(found) and not hidden & set(found), (role, found)
            listed = _ids(world.ok(role, "list", "--limit", "500", team=team, user=forged), "memories")
            assert visible <= set(listed) and not hidden & set(listed)
            for memory_id in hidden:
                line = world.refused(role, "show", memory_id[:8], team=team, user=forged)
                assert "no memory with id" in line
            exported = world.run(role, "export", team=team, user=forged)
            assert exported.code == 0
            # An export is the role's own memories: alice's secret never leaves with bob's, nor his with hers.
            assert ("kubeconfig" in exported.stdout) == (role == world.alice)
            assert ("pager" in exported.stdout) == (role == world.bob)
            counts = world.ok(role, "status", team=team, user=forged)
            listed_all = _ids(world.ok(role, "list", "--limit", "500", team=team), "memories")
            assert counts["total"] == len(listed_all)
    assert world.ok(world.bob, "show", shared[:8], team=world.red)["id"] == shared
    # Bob, member of both teams, sees blue's memory when he works in blue; alice never does.
    assert blue in _ids(world.ok(world.bob, "list", team=world.blue), "memories")


def test_every_write_path_refuses_what_is_not_the_roles(world):
    secret = world.ok(world.alice, "remember", "alice's private note about the staging database")["id"]
    shared = world.ok(world.alice, "remember", "the red runbook lives in the wiki", "--scope", "shared",
                      team=world.red)["id"]
    # forget, pin: bob cannot see alice's personal memory, and a shared one is not his to change.
    assert "no memory with id" in world.refused(world.bob, "forget", secret[:8], team=world.red)
    assert "no memory with id" in world.refused(world.bob, "pin", secret[:8], team=world.red)
    assert "not yours to forget" in world.refused(world.bob, "forget", shared, team=world.red)
    assert "only an admin of team" in world.refused(world.bob, "pin", shared, team=world.red)
    assert "not yours to forget" in world.refused(world.bob, "forget", "--purge", shared, team=world.red)
    # share: into a team that is not alice's, by option or by CEMS_TEAM; bob cannot share alice's secret.
    assert "not a member of team" in world.refused(world.alice, "share", secret, "--team", world.blue)
    assert "not a member of team" in world.refused(world.alice, "remember", "x", "--scope", "shared",
                                                   team=world.blue)
    # An id bob cannot see is refused (once it was stored as new text): no copy, and no stray memory.
    before = world.admin.execute("SELECT count(*) FROM memory_documents").fetchone()[0]
    assert "that you can see: nothing shared" in world.refused(world.bob, "share", secret, team=world.red)
    assert world.admin.execute("SELECT count(*) FROM memory_documents").fetchone()[0] == before
    # import: a line for a team that is not yours stops the import, and nothing is stored.
    lines = [json.dumps({"content": f"imported note {n}"}) for n in range(3)]
    lines.append(json.dumps({"content": "for blue", "scope": "shared", "team": world.blue}))
    line = world.refused(world.alice, "import", "-", stdin="\n".join(lines).encode())
    assert "line 4" in line and "not a member of team" in line
    assert world.admin.execute("SELECT count(*) FROM memory_documents WHERE user_id = %s AND content LIKE "
                               "'imported note%%'", (world.alice,)).fetchone()[0] == 0
    imported = world.ok(world.alice, "import", "-", stdin="\n".join(lines[:3]).encode())
    assert imported["imported"] == 3
    # Unchanged, whatever was tried.
    rows = world.admin.execute(
        "SELECT archived, pinned, user_id FROM memory_documents WHERE id = ANY(%s::uuid[])",
        ([secret, shared],),
    ).fetchall()
    assert rows == [(False, False, world.alice)] * 2


def test_only_team_admins_write_shared_rules(world):
    refused = world.refused(world.bob, "rule", "add", "Bash: rm -rf /srv* — no", "--scope", "shared",
                            team=world.red)
    assert f"only an admin of team '{world.red}' can add shared rules" in refused
    rule = world.ok(world.alice, "rule", "add", "Bash: terraform destroy* — ask first", "--scope", "shared",
                    team=world.red)
    bobs = world.ok(world.bob, "rule", "add", "Bash: git push --force* — bob's own", team=world.red)
    in_force = {r["id"] for r in world.ok(world.bob, "rule", "list", team=world.red)["rules"]}
    assert {rule["id"], bobs["id"]} <= in_force
    alices = {r["id"] for r in world.ok(world.alice, "rule", "list", team=world.red)["rules"]}
    assert rule["id"] in alices and bobs["id"] not in alices
    assert "only its owner" in world.refused(world.bob, "rule", "rm", rule["id"], team=world.red)
    assert "no memory with id" in world.refused(world.alice, "rule", "rm", bobs["id"], team=world.red)
    # Bob is blue's admin: a shared rule there is his to add.
    world.ok(world.bob, "rule", "add", "Bash: kubectl delete* — blue", "--scope", "shared", team=world.blue)
    # Team settings likewise: written by the team's admins.
    assert "only an admin of team" in world.refused(world.bob, "config", "set", "recall_limit", "3", "--team",
                                                    team=world.red)
    assert world.ok(world.alice, "config", "set", "recall_limit", "3", "--team", team=world.red)["team"] == 3
    assert world.ok(world.bob, "config", "get", "recall_limit", team=world.red)["source"] == "team"


def test_sql_as_an_application_role_is_held_by_the_policies(world):
    alices = world.ok(world.alice, "remember", "alice's row for the raw SQL test")["id"]
    reds = world.ok(world.alice, "remember", "red's row for the raw SQL test", "--scope", "shared",
                    team=world.red)["id"]
    with world.connect(world.bob) as bob:
        assert bob.execute("SELECT cems_user()").fetchone()[0] == world.bob
        # No privilege on the memory tables (a read of them told which hidden ids exist): the functions.
        visible = {str(r[0]) for r in bob.execute("SELECT id FROM cems_visible_documents()")}
        assert reds in visible and alices not in visible
        assert bob.execute("SELECT count(*) FROM cems_visible_chunks() "
                           "WHERE user_id = %s AND scope = 'personal'",
                           (world.alice,)).fetchone()[0] == 0
        assert bob.execute("SELECT count(*) FROM cems_update_memories(%s::uuid[], %s)",
                           ([alices], Jsonb({"content": "x"}))).fetchone()[0] == 0
        # Deleting goes through cems_delete_memories (no table-wide DELETE, which would let bob lock the
        # table), and it deletes nothing that is not bob's to delete.
        assert bob.execute("SELECT count(*) FROM cems_delete_memories(%s::uuid[])",
                           ([reds, alices],)).fetchone()[0] == 0
        # A teammate's shared row is not bob's to update at all (only its counters move, through
        # cems_record_access): the statement finds nothing to change; the owner column is nobody's to write.
        assert bob.execute("SELECT count(*) FROM cems_update_memories(%s::uuid[], %s)",
                           ([reds], Jsonb({"archived": True}))).fetchone()[0] == 0
        with pytest.raises(psycopg.errors.InvalidParameterValue):  # the owner column is nobody's to write
            bob.execute("SELECT cems_update_memories(%s::uuid[], %s)",
                        ([reds], Jsonb({"user_id": world.bob})))
        for forged in (
            ("SELECT id FROM memory_documents", None),
            ("SELECT id FROM memory_chunks", None),
            ("SELECT document_id FROM rules", None),
            ("UPDATE memory_documents SET content = 'x' WHERE id = %s", (alices,)),
            ("DELETE FROM memory_documents WHERE id = %s", (reds,)),
            ("UPDATE memory_documents SET user_id = %s WHERE id = %s", (world.bob, reds)),
            ("INSERT INTO memory_documents (content, content_hash, user_id) VALUES ('x', 'h1', %s)",
             (world.alice,)),
            ("INSERT INTO memory_documents (content, content_hash, user_id, scope, team_id, category) "
             "VALUES ('x', 'h2', %s, 'shared', %s, 'rules')", (world.bob, world.red)),
            ("INSERT INTO memory_documents (content, content_hash, user_id, scope, team_id) "
             "VALUES ('x', 'h3', %s, 'shared', 'some-other-team')", (world.bob,)),
            ("INSERT INTO observer_state (user_id) VALUES (%s)", (world.alice,)),
            ("INSERT INTO stored_settings (owner_kind, owner, key, value, updated_by) "
             "VALUES ('team', %s, 'recall_limit', '2', %s)", (world.red, world.bob)),
            ("INSERT INTO cems_team_members (team_id, user_id, is_admin, added_by) VALUES (%s, %s, true, %s)",
             (world.red, world.bob, world.bob)),
            ("SELECT cems_team_add(%s, %s, true)", (world.red, world.bob)),
            ("SELECT cems_team_create(%s)", (f"mine-{uuid.uuid4().hex[:6]}",)),
            ("UPDATE cems_audit SET actor = 'nobody'", None),
            ("DELETE FROM cems_audit", None),
            ("TRUNCATE cems_audit", None),
            ("INSERT INTO cems_audit (actor, action) VALUES ('nobody', 'share')", None),
            ("UPDATE cems_meta SET value = '1' WHERE key = 'embedding_dim'", None),
        ):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                bob.execute(*forged) if forged[1] else bob.execute(forged[0])
                pytest.fail(f"not refused: {forged[0]}")
        # A chunk cannot be slipped into someone else's memory either.
        with pytest.raises(psycopg.Error):
            bob.execute("SELECT cems_insert_chunk(document_id, 99, 'injected', embedding, NULL) "
                        "FROM cems_visible_chunks(%s::uuid[])", ([reds],))
        assert bob.execute("SELECT rolsuper OR rolbypassrls FROM pg_roles WHERE rolname = 'cems_app'"
                           ).fetchone()[0] is False
    row = world.admin.execute("SELECT content, archived, user_id FROM memory_documents WHERE id = %s",
                              (reds,)).fetchone()
    assert row == ("red's row for the raw SQL test", False, world.alice)


def test_the_audit_records_shared_writes_and_searches(world):
    shared = world.ok(world.alice, "remember", "red's deploy freeze starts at noon", "--scope", "shared",
                      team=world.red)["id"]
    world.ok(world.alice, "pin", shared, team=world.red)
    rule = world.ok(world.alice, "rule", "add", "Bash: helm uninstall* — ask", "--scope", "shared",
                    team=world.red)["id"]
    world.ok(world.bob, "search", "when does the deploy freeze start", team=world.red)
    world.ok(world.alice, "forget", shared, team=world.red)
    world.ok(world.alice, "rule", "rm", rule, team=world.red)
    world.ok(world.alice, "remember", "personal writes are not audited", team=world.red)

    entries = world.ok(world.bob, "audit", "--team", world.red, "--since", "1h")["entries"]
    seen = [(e["actor"], e["action"], e["memory_id"]) for e in reversed(entries)]
    assert seen[:2] == [(world.alice, "share", shared), (world.alice, "pin", shared)]
    assert (world.alice, "rule_add", rule) in seen and (world.alice, "rule_remove", rule) in seen
    assert (world.alice, "forget", shared) in seen
    search = next(e for e in entries if e["action"] == "search")
    assert search["actor"] == world.bob and search["db_role"] == world.bob
    assert len(search["query_hash"]) == 64 and "freeze" not in json.dumps(search)
    assert shared in search["detail"]["shared"]
    assert all(e["team"] == world.red for e in entries)
    # Alice is not in blue: she reads none of its trail, even asking for it.
    world.ok(world.bob, "remember", "blue note", "--scope", "shared", team=world.blue)
    assert world.ok(world.alice, "audit", "--team", world.blue)["entries"] == []
    assert world.ok(world.bob, "audit", "--team", world.blue)["entries"][0]["action"] == "share"
    with world.connect(world.alice) as alice:
        for statement in ("UPDATE cems_audit SET action = 'nothing'", "DELETE FROM cems_audit"):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                alice.execute(statement)
    assert "--since" in world.refused(world.bob, "audit", "--since", "yesterday")


def test_quotas_trip_before_any_embedding(world, monkeypatch):
    quotas = world.ok(None, "admin", "quota", world.alice, "--memories", "2", "--searches-per-minute", "3")
    assert {"user": world.alice, "max_memories": 2, "searches_per_minute": 3} in quotas["quotas"]
    world.ok(world.alice, "remember", "first of two")
    world.ok(world.alice, "remember", "second of two")
    world.ok(world.alice, "remember", "second of two")  # a duplicate stores nothing: not refused

    from cems_cli.engine.service import MemoryService

    def no_embedding(self):
        raise AssertionError("embedded before the quota was checked")

    # A context of its own: undoing the test's monkeypatch would also undo the fixtures' CEMS_HOME, and the
    # commands after it would run against the real user's store.
    with monkeypatch.context() as patch:
        patch.setattr(MemoryService, "embedder", property(no_embedding))
        patch.setattr(MemoryService, "query_embedder", property(no_embedding))
        line = world.refused(world.alice, "remember", "third is one too many")
        assert line == (f"error: memory quota reached: {world.alice} stores 2 of 2 memories; forget some or "
                        "ask an administrator (cems admin quota)")
        lines = "\n".join(json.dumps({"content": f"bulk {n}"}) for n in range(2)).encode()
        assert "(this adds 2)" in world.refused(world.alice, "import", "-", stdin=lines)

    for _ in range(3):
        world.ok(world.alice, "search", "first")
    with monkeypatch.context() as patch:
        patch.setattr(MemoryService, "query_embedder", property(no_embedding))
        line = world.refused(world.alice, "search", "first")
    assert line.startswith(f"error: search quota reached: {world.alice} may search 3 times a minute")
    # Bob has no quota; the superuser none either.
    world.ok(world.bob, "remember", "bob is not limited")
    cleared = world.ok(None, "admin", "quota", world.alice, "--clear")
    assert world.alice not in [q["user"] for q in cleared["quotas"]]


def test_team_commands(world):
    assert "only a CEMS administrator" in world.refused(world.alice, "team", "create", "alices-own")
    assert "only an admin of team" in world.refused(world.bob, "team", "add", world.red, world.bob, "--admin")
    assert "only an admin of team" in world.refused(world.alice, "team", "add", world.blue, world.alice)
    listed = {t["name"]: t for t in world.ok(world.alice, "team", "list")["teams"]}
    assert set(listed) == {world.red} and listed[world.red]["admin"] is True
    assert {t["name"] for t in world.ok(world.bob, "team", "list")["teams"]} == {world.red, world.blue}
    assert "no team" in world.refused(world.alice, "team", "show", world.blue)
    world.ok(world.alice, "remember", "shared for the count", "--scope", "shared", team=world.red)
    rule = world.ok(world.alice, "rule", "add", "Bash: dropdb* — never", "--scope", "shared", team=world.red)
    shown = world.ok(world.bob, "team", "show", world.red)
    assert {(m["user"], m["admin"]) for m in shown["members"]} == {(world.alice, True), (world.bob, False)}
    assert shown["shared_memories"] >= 2 and shown["shared_by_category"]["rules"] == 1
    assert [r["id"] for r in shown["shared_rules"]] == [rule["id"]]
    # Alice (red's admin) removes bob: he no longer sees red's memories, and CEMS_TEAM=red is refused.
    assert world.ok(world.alice, "team", "remove", world.red, world.bob)["member"] == world.bob
    assert "not a member of team" in world.refused(world.bob, "list", team=world.red)
    assert world.ok(world.bob, "list", "--scope", "shared", team=world.blue)["memories"] == []
    with world.connect(world.bob) as bob:
        assert bob.execute("SELECT count(*) FROM cems_visible_documents() WHERE team_id = %s",
                           (world.red,)).fetchone()[0] == 0


def test_indexes_stay_in_use_under_row_level_security(world):
    world.ok(world.alice, "remember", "the index check needs one row", team=world.red)
    vector = "[" + ",".join(["0.05"] * 384) + "]"
    with world.connect(world.alice) as alice:
        assert alice.execute("SELECT row_security_active('memory_chunks')").fetchone()[0] is True
        # A member reads no table (sql/019_member_api.sql): the nearest chunks come from cems_vector_hits,
        # which runs as the tables' owner.
        begin_search(alice)
        hits = alice.execute("SELECT count(*) FROM cems_vector_hits(%s::vector, 10)", (vector,)).fetchone()[0]
        assert hits >= 1
    # Its query can be served by the HNSW index (a tiny table: ask whether it *can*; bench/rls_latency.py
    # shows the planner choosing it on its own at 10k memories).
    with world.admin.transaction():
        world.admin.execute("SET LOCAL enable_seqscan = off; SET LOCAL enable_sort = off")
        world.admin.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
        plan = "\n".join(r[0] for r in world.admin.execute(
            f"EXPLAIN SELECT c.id FROM memory_chunks c ORDER BY c.embedding <=> '{vector}' LIMIT 10"))
    assert "memory_chunks_embedding" in plan, plan
    with world.connect(world.alice) as alice:
        # Full text: ts_match_vq is not LEAKPROOF (sql/013_team_walls.sql): marked so, it ran on rows before
        # the policy hid them, and EXPLAIN told a member whether a hidden row matched
        # (tests/integration/test_team_attacks.py).
        assert not alice.execute("SELECT proleakproof FROM pg_proc "
                                 "WHERE oid = 'ts_match_vq(tsvector, tsquery)'::regprocedure").fetchone()[0]


def test_maintenance_and_purge_work_as_an_application_role(world):
    # A repository name no other test stores, so that the only near duplicate is the one made here.
    repo = f"repo-{uuid.uuid4().hex[:8]}"
    kept = world.ok(world.alice, "remember", f"We lint {repo} with ruff, never flake8")["id"]
    world.ok(world.alice, "remember", f"We lint {repo} with ruff and never flake8")
    shared = world.ok(world.alice, "remember", "red's on-call handbook is in the wiki", "--scope", "shared",
                      team=world.red)["id"]
    report = world.ok(world.alice, "maintain", team=world.red)
    assert report["dry_run"] is False
    # The two wordings of one fact were merged; only their owner can bring the merged one back.
    [group] = report["consolidated"]
    assert "no archived memory of yours" in world.refused(world.bob, "restore", group["merged"][0],
                                                          team=world.red)
    restored = world.ok(world.alice, "restore", group["merged"][0], team=world.red)
    assert restored["merged_into"] == group["kept"]
    assert world.ok(world.alice, "maintain", team=world.red)["consolidated"] == []
    assert world.ok(world.alice, "forget", "--purge", shared, team=world.red)
    gone = world.admin.execute("SELECT count(*) FROM memory_documents WHERE id = %s", (shared,)).fetchone()
    assert gone == (0,)
    # Bob's maintenance sees only his own memories: alice's are as her maintenance left them.
    def alices() -> list[tuple[str, bool]]:
        return world.admin.execute("SELECT id::text, archived FROM memory_documents WHERE user_id = %s "
                                   "ORDER BY id", (world.alice,)).fetchall()

    before = alices()
    assert kept in dict(before)
    world.ok(world.bob, "maintain", team=world.red)
    assert alices() == before


def test_the_library_takes_identity_from_the_database_too(world, monkeypatch):
    import cems

    monkeypatch.delenv("CEMS_TEAM", raising=False)
    with cems.open(database_url=world.urls[world.bob], user=world.alice, team=world.red) as memory:
        assert memory.settings.user == world.bob
        me = memory.whoami()
        assert me["restricted"] is True and me["database"]["role"] == world.bob
        assert set(me["database"]["teams"]) == {world.red, world.blue} and me["database"]["admin_teams"] == [
            world.blue]
        # The search server answers many hooks with one Memory: another identity on the same connection is
        # still the connection's.
        other = memory.for_identity(world.alice, world.red)
        assert other.settings.user == world.bob
        with pytest.raises(cems.UserError, match="not a member of team"):
            memory.for_identity(world.bob, f"nobody-{uuid.uuid4().hex[:6]}").settings  # noqa: B018


def test_admin_init_undoes_an_earlier_leakproof_marking(world):
    # An earlier CEMS marked the full-text match LEAKPROOF on this server; init run by a superuser undoes it.
    world.admin.execute("ALTER FUNCTION pg_catalog.ts_match_vq(tsvector, tsquery) LEAKPROOF")
    try:
        report = world.ok(None, "admin", "init")
    finally:
        leakproof = world.admin.execute("SELECT proleakproof FROM pg_proc WHERE oid = "
                                        "'ts_match_vq(tsvector, tsquery)'::regprocedure").fetchone()[0]
        world.admin.execute("ALTER FUNCTION pg_catalog.ts_match_vq(tsvector, tsquery) NOT LEAKPROOF")
    assert leakproof is False and report["fts_leakproof"] is False


def test_admin_init_reports_a_ready_server(world):
    report = world.ok(None, "admin", "init")
    assert report["schema_version"] >= 9 and report["app_role"] == "cems_app" and report["superuser"] is True
    assert report["fts_leakproof"] is False and report["notes"] == [] and report["limited_roles"] >= 2
    assert world.admin.execute("SELECT rolsuper, rolbypassrls, rolcanlogin FROM pg_roles WHERE rolname = "
                               "'cems_app'").fetchone() == (False, False, False)
    # An application role may neither initialise nor grant.
    assert "refused" in world.refused(world.alice, "admin", "grant", world.bob, "--admin")
    assert "is a superuser or has BYPASSRLS" in world.refused(None, "admin", "grant", "postgres")
    assert world.ok(None, "admin", "quota")["quotas"] is not None


def test_a_team_admin_forgets_a_teammates_shared_memory_and_a_member_cannot(world):
    bobs = world.ok(world.bob, "remember", "bob's shared note on the red deploy", "--scope", "shared",
                    team=world.red)["id"]
    alices = world.ok(world.alice, "remember", "alice's shared note on the red rota", "--scope", "shared",
                      team=world.red)["id"]
    assert "not yours to forget" in world.refused(world.bob, "forget", alices, team=world.red)  # a member
    assert world.ok(world.alice, "forget", bobs[:8], team=world.red)["forgotten"] == [bobs]  # red's admin
    rows = dict(world.admin.execute(
        "SELECT id::text, archived FROM memory_documents WHERE id = ANY(%s::uuid[])", ([bobs, alices],)
    ).fetchall())
    assert rows == {bobs: True, alices: False}


def test_summaries_are_their_owners_alone_and_go_with_a_teammates_forgotten_memory(world):
    shared = world.ok(world.bob, "remember", "The red deploy runs from the release branch on Fridays",
                      "--scope", "shared", team=world.red)["id"]
    world.ok(world.bob, "remember", "Red deploys run from the release branch, only on Fridays",
             team=world.red)
    assert world.ok(world.bob, "summaries", "--rebuild", team=world.red)["rebuilt"]["written"] == 1
    # Alice reads the shared memory, not bob's summary of it, and cannot write one in his name.
    assert world.ok(world.alice, "summaries", team=world.red)["summaries"] == []
    with world.connect(world.alice) as alice:
        assert alice.execute("SELECT count(*) FROM cems_my_summaries()").fetchone()[0] == 0
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            alice.execute(
                "INSERT INTO memory_summaries (user_id, level, title, content, members, member_key, "
                "period_start, period_end, method, embedding) SELECT %s, 1, 't', 'forged', '{}', 'k', now(), "
                "now(), 'extractive', embedding FROM memory_chunks LIMIT 1", (world.bob,))
    # Red's admin forgets bob's shared memory: his summary quoting it goes too, though she cannot see it.
    assert world.ok(world.alice, "forget", shared[:8], team=world.red)["forgotten"] == [shared]
    left = world.admin.execute("SELECT count(*) FROM memory_summaries WHERE user_id = %s", (world.bob,))
    assert left.fetchone()[0] == 0


def test_an_application_role_reads_no_planner_statistics(world):
    """The planner's statistics describe every user's rows: under row-level security they are hidden, and
    BM25 counts what the role sees instead of estimating from them."""
    from cems_cli.store import lexical

    world.ok(world.alice, "remember", "alice's deploy note for the statistics test")
    world.admin.execute("ANALYZE memory_chunks")
    stats = "SELECT count(*) FROM pg_stats WHERE tablename = 'memory_chunks' AND attname = 'search_vector'"
    assert world.admin.execute(stats).fetchone()[0] == 1
    with world.connect(world.alice) as alice:
        assert alice.execute(stats).fetchone()[0] == 0
        assert lexical._planner_frequencies(alice) == {}

# ruff: noqa: F811  (the `world` fixture, imported, is every test's argument)
"""Which memories changed is told only to those who may see them (sql/025_searches_and_changes.sql).
Before, every write sent a NOTIFY naming the memory, which any role may LISTEN to (PostgreSQL has no
privilege for it), with the writer's pid (pg_stat_activity names whose). A member attacks with raw SQL on
their own login.

Red: alice (admin) and bob; blue: bob (admin). See tests/integration/test_teams_rls.py for the world.
"""

from __future__ import annotations

import psycopg
import pytest

from tests.integration.test_teams_rls import World, world  # noqa: F401  (the fixture)


def _cursor(conn: psycopg.Connection) -> str:
    return str(conn.execute("SELECT pg_snapshot_xmin(pg_current_snapshot())::text").fetchone()[0])


def _changes(conn: psycopg.Connection, since: str) -> set[tuple[str, str | None]]:
    return {(r[0], None if r[1] is None else str(r[1])) for r in conn.execute(
        "SELECT op, memory_id FROM cems_changes_since(%s::xid8, 1000)", (since,))}


def test_a_member_learns_nothing_of_others_writes_by_listening(world):
    with world.connect(world.bob) as bob:
        bob.execute("LISTEN cems_memories")
        since = _cursor(bob)
        personal = world.ok(world.alice, "remember", "alice's note on the payroll export")["id"]
        world.ok(world.alice, "pin", personal)
        world.ok(world.alice, "forget", "--purge", personal)
        shared = world.ok(world.alice, "remember", "red's release notes live in the wiki", "--scope",
                          "shared", team=world.red)["id"]
        # No notice names anything, or comes at all: who wrote when stays theirs.
        assert list(bob.notifies(timeout=1.0, stop_after=1)) == []
        # What bob may see changed, he reads: red's shared memory, never alice's personal one.
        assert _changes(bob, since) == {("insert", shared)}
        for forged in ("SELECT * FROM cems_change_log", "SELECT cems_prune_change_log()",
                       "DELETE FROM cems_change_log"):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                bob.execute(forged)
    with world.connect(world.alice) as alice:
        assert ("delete", personal) in _changes(alice, since)


def test_a_memory_that_leaves_a_team_is_a_change_for_that_team(world):
    personal = world.ok(world.bob, "remember", "bob's note about the blue rota")["id"]
    with world.connect(world.alice) as alice:
        since = _cursor(alice)
        world.ok(world.bob, "share", personal, "--team", world.red)  # shared: a copy in red
        copies = _changes(alice, since)
        assert len(copies) == 1 and next(iter(copies))[0] == "insert"
        copy = next(iter(copies))[1]
        since = _cursor(alice)
        world.ok(world.bob, "forget", copy, team=world.red)
        assert _changes(alice, since) == {("update", copy)}
    with pytest.raises(psycopg.errors.InvalidParameterValue):
        with world.connect(world.bob) as bob:
            bob.execute("SELECT * FROM cems_changes_since(NULL, 1000000)")


def test_a_viewer_of_a_team_server_reads_changes_as_its_member(world: World):
    from cems_cli.store.changes import Change, ChangeReader

    with world.connect(world.bob) as bob:
        reader = ChangeReader(bob)
        secret = world.ok(world.alice, "remember", "alice's own note on the vault")["id"]
        red = world.ok(world.alice, "remember", "red deploys on tuesdays", "--scope", "shared",
                       team=world.red)["id"]
        assert reader.poll() == [Change("insert", red)]
        assert secret not in {c.id for c in reader.poll()}

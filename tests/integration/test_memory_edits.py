# ruff: noqa: F811  (the `world` fixture, imported, is a test's argument)
"""A memory's history records its edits (sql/020_memory_edits.sql): the library's `edit`, a pin, a change
through raw SQL; `cems show` counts them and lists them with --history; the newest twenty are kept; a
purge takes them along; and on a team server a member reads only the edits of memories they may read, and
nothing of the table itself."""

from __future__ import annotations

import psycopg
import pytest
from psycopg.types.json import Jsonb

from cems_cli.defaults import EDITS_KEPT
from tests.integration.test_teams_rls import World, world  # noqa: F401  (the fixture)


@pytest.fixture
def memory(env):
    import cems

    with cems.open() as opened:
        yield opened


def test_an_edit_through_the_library_is_in_the_history(memory):
    memory_id = memory.remember("The release branch is cut on Mondays", category="decisions").id
    assert memory.history(memory_id).edits == []
    memory.edit(memory_id, "The release branch is cut on Tuesdays")
    memory.pin(memory_id, reason="release")
    edits = memory.history(memory_id).edits
    assert [e.fields for e in edits] == [["pinned", "pin reason"], ["text"]]  # newest first
    assert edits[1].old_text == "The release branch is cut on Mondays" and edits[0].old_text is None
    assert edits[1].actor == memory.settings.user
    # Access counters and recall stamps are not edits.
    memory.search("when is the release branch cut")
    assert len(memory.history(memory_id).edits) == 2


def test_cems_show_counts_the_edits_and_lists_them(cli, memory):
    memory_id = memory.remember("Lint with ruff before every push", category="preferences").id
    plain = cli("show", memory_id)
    assert plain.code == 0 and "edited" not in plain.stdout
    memory.edit(memory_id, "Lint with ruff and mypy before every push")
    shown = cli("show", memory_id)
    assert "edited 1 time, last" in shown.stdout and "(text)" in shown.stdout
    listed = cli("show", memory_id, "--history")
    assert "text before:" in listed.stdout and "Lint with ruff before every push" in listed.stdout
    data = cli("show", memory_id, "--history", "--json").json()
    assert [e["fields"] for e in data["edits"]] == [["text"]]
    assert data["edits"][0]["old_text"] == "Lint with ruff before every push"
    assert "edits" not in cli("show", memory_id, "--json").json()  # the JSON shape without the flag


def test_the_newest_edits_are_kept_and_a_purge_takes_them(memory):
    memory_id = memory.remember("counter at 0", category="context").id
    for n in range(1, EDITS_KEPT + 6):
        memory.edit(memory_id, f"counter at {n}")
    edits = memory.history(memory_id).edits
    assert len(edits) == EDITS_KEPT
    assert edits[0].old_text == f"counter at {EDITS_KEPT + 4}" and edits[-1].old_text == "counter at 5"
    from cems_cli.store.db import connect

    memory.forget(memory_id, purge=True)
    with connect(memory.settings) as conn:
        left = conn.execute("SELECT count(*) FROM memory_edits WHERE memory_id = %s", (memory_id,))
        assert left.fetchone()[0] == 0


def test_a_secret_written_past_cems_is_redacted_in_the_history(memory):
    """Raw SQL (any database client) changed the text: the old text it replaced is shown redacted."""
    from cems_cli.store.db import connect

    memory_id = memory.remember("The deploy key lives in vault", category="context").id
    secret = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    with connect(memory.settings) as conn:
        conn.execute("UPDATE memory_documents SET content = %s WHERE id = %s", (f"token {secret}", memory_id))
        conn.execute("UPDATE memory_documents SET content = 'rotated' WHERE id = %s", (memory_id,))
        conn.commit()
    edits = memory.history(memory_id).edits
    assert len(edits) == 2 and edits[0].old_text is not None
    assert secret not in edits[0].old_text and "REDACTED" in edits[0].old_text


def _edit(conn: psycopg.Connection, memory_id: str, text: str) -> None:
    conn.execute("SELECT cems_update_memories(%s::uuid[], %s)", ([memory_id], Jsonb({"content": text})))


def test_a_member_reads_only_the_edits_of_memories_they_may_read(world: World):
    private = world.ok(world.alice, "remember", "alice's private note about the payroll export")["id"]
    shared = world.ok(world.alice, "remember", "red deploys on thursdays", "--scope", "shared",
                      team=world.red)["id"]
    blue = world.ok(world.bob, "remember", "blue deploys on fridays", "--scope", "shared",
                    team=world.blue)["id"]
    with world.connect(world.alice) as alice:
        # A member edits through the update function only (no privilege on the table).
        _edit(alice, private, "alice: payroll export moved")
        _edit(alice, shared, "red deploys on wednesdays")
        own = alice.execute("SELECT actor, fields, old_text FROM cems_memory_edits(%s)",
                            (private,)).fetchall()
        assert own == [(world.alice, ["text"], "alice's private note about the payroll export")]
        # No privilege on the table itself (nor its rows, should one be granted: row-level security).
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            alice.execute("SELECT * FROM memory_edits")
    with world.connect(world.bob) as bob:
        _edit(bob, blue, "blue deploys on saturdays")
        assert bob.execute("SELECT * FROM cems_memory_edits(%s)", (private,)).fetchall() == []
        seen = bob.execute("SELECT actor, old_text FROM cems_memory_edits(%s)", (shared,)).fetchall()
        assert seen == [(world.alice, "red deploys on thursdays")]  # his team's shared memory
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            bob.execute("SELECT old_text FROM memory_edits WHERE memory_id = %s", (private,))
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            bob.execute("INSERT INTO memory_edits (memory_id, actor, fields) VALUES (%s, 'x', '{}')",
                        (private,))
    with world.connect(world.alice) as alice:  # alice is not in blue
        assert alice.execute("SELECT * FROM cems_memory_edits(%s)", (blue,)).fetchall() == []
    # Bob's history through the library lists his edit of his own memory, not alice's private one.
    shown = world.ok(world.bob, "show", blue, "--history", team=world.blue)
    assert [e["actor"] for e in shown["edits"]] == [world.bob]

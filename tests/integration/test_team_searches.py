# ruff: noqa: F811  (the `world` fixture, imported, is every test's argument)
"""Searches are recorded and counted by the database (sql/025_searches_and_changes.sql). A member attacks
with raw SQL on their own login: each test is one attack that came through before 025 (the audit row and
the quota were the application's) and must now come to nothing.

Red: alice (admin) and bob; blue: bob (admin). See tests/integration/test_teams_rls.py for the world.
"""

from __future__ import annotations

import random
import string

import psycopg
import pytest
from psycopg import sql

from tests.integration.test_teams_rls import World, begin_search, world  # noqa: F401  (the fixture)

VECTOR = "[" + ",".join(["0.05"] * 384) + "]"
REFUSED = psycopg.errors.ObjectNotInPrerequisiteState  # no search under way in this session
RED_HITS = "SELECT * FROM cems_vector_hits(%s::vector, 10, 'both', %s)"


def _word() -> str:
    """A word no other test stores (letters only: the English stemmer keeps it whole)."""
    return "zq" + "".join(random.choices(string.ascii_lowercase, k=12))


def _searches(conn: psycopg.Connection, word: str, team: str | None) -> dict[str, set[str]]:
    """The memories each search function finds for `word` over `team`'s memories (chunk counts for
    cems_fts_counts)."""
    vector = {str(r[0]) for r in conn.execute(
        "SELECT document_id FROM cems_vector_hits(%s::vector, 10000, 'both', %s)", (VECTOR, team))}
    text = {str(r[0]) for r in conn.execute(
        "SELECT document_id FROM cems_fts_chunks(to_tsquery('english', %s), 'both', %s)", (word, team))}
    counted = conn.execute("SELECT cems_fts_counts(ARRAY[to_tsquery('english', %s)], 'both', %s)",
                           (word, team)).fetchone()[0]
    return {"vector": vector, "text": text, "counted": {str(n) for n in counted}}


def _search_rows(world: World, actor: str) -> list[tuple[str, str | None, dict]]:
    return [(r[0], r[1], r[2]) for r in world.admin.execute(
        "SELECT action, team_id, detail FROM cems_audit WHERE actor = %s AND action IN ('search', 'recall') "
        "ORDER BY id", (actor,))]


def test_a_member_cannot_search_without_the_search_being_recorded(world):
    word = _word()
    red = world.ok(world.alice, "remember", f"red's shared {word} note", "--scope", "shared",
                   team=world.red)["id"]
    with world.connect(world.bob) as bob:
        for search in ("SELECT document_id FROM cems_vector_hits(%s::vector, 10000, 'both', %s)",
                       "SELECT document_id FROM cems_fts_chunks(to_tsquery('english', %s), 'both', %s)",
                       "SELECT cems_fts_counts(ARRAY[to_tsquery('english', %s)], 'both', %s)"):
            with pytest.raises(REFUSED):
                bob.execute(search, (VECTOR if "vector" in search else word, world.red)).fetchall()
                pytest.fail(f"searched unrecorded: {search}")
        with pytest.raises(psycopg.errors.UndefinedFunction):  # the id oracle the application no longer uses
            bob.execute("SELECT * FROM cems_fts_match(to_tsquery('english', %s), 'both', %s)",
                        (word, world.red))
        assert _search_rows(world, world.bob) == []
        # Begun, the search reads red's memories, and the trail has its one row.
        assert begin_search(bob, world.red) is True
        found = _searches(bob, word, world.red)
        assert red in found["vector"] and found["text"] == {red} and found["counted"] == {"1"}
        bob.execute("SELECT cems_end_search(1, %s::uuid[])", ([red],))
    assert _search_rows(world, world.bob) == [("search", world.red,
                                               {"results": 1, "shared": [red], "calls": 3})]


def test_a_search_rolled_back_takes_nothing_back(world):
    with world.connect(world.bob) as bob:
        # Begun and used in one transaction, then rolled back, the audit row and the count would go too:
        # a search reads only once its beginning is committed.
        with pytest.raises(REFUSED):
            with bob.transaction():
                begin_search(bob, world.red)
                bob.execute("SELECT * FROM cems_vector_hits(%s::vector, 10)", (VECTOR,)).fetchall()
        with pytest.raises(REFUSED):  # and rolled back, it left nothing to search with
            bob.execute("SELECT * FROM cems_vector_hits(%s::vector, 10)", (VECTOR,))
        assert _search_rows(world, world.bob) == []
        # A search allows 1000 calls, however many transactions roll back what they did.
        begin_search(bob)
        calls = ("SELECT count(*) FROM generate_series(1, %s) g, "
                 "LATERAL cems_vector_hits(%s::vector, 1 + g %% 1) v")
        for _ in range(3):
            try:
                with bob.transaction():
                    bob.execute(calls, (400, VECTOR)).fetchall()
                    raise RuntimeError("roll back")
            except RuntimeError:
                pass
            except REFUSED:
                break
        else:
            pytest.fail("1200 calls on one search")
        with pytest.raises(REFUSED):
            bob.execute(calls, (1, VECTOR))


def test_a_search_is_the_sessions_that_began_it(world):
    with world.connect(world.bob) as bob, world.connect(world.bob) as second, \
            world.connect(world.alice) as alice:
        begin_search(bob, world.red)
        bob.execute("SELECT * FROM cems_vector_hits(%s::vector, 10, 'both', %s)", (VECTOR, world.red))
        for other in (second, alice):  # bob's other connection, a teammate's
            with pytest.raises(REFUSED):
                other.execute(RED_HITS, (VECTOR, world.red))
        # A later session given the same pid (the operating system reuses them) finds the search dead: its
        # calls are numbered in a block of its own. Played here by moving bob's ticket to his second
        # connection's pid, as the superuser.
        pid = second.execute("SELECT pg_backend_pid()").fetchone()[0]
        world.admin.execute("UPDATE cems_search_tickets SET backend = %s WHERE backend = %s",
                            (pid, bob.execute("SELECT pg_backend_pid()").fetchone()[0]))
        with pytest.raises(REFUSED):
            second.execute("SELECT * FROM cems_vector_hits(%s::vector, 10, 'both', %s)", (VECTOR, world.red))
        # DISCARD SEQUENCES starts the session's next block: it ends only the caller's own search.
        begin_search(bob, world.red)
        bob.execute("DISCARD SEQUENCES")
        with pytest.raises(REFUSED):
            bob.execute("SELECT * FROM cems_vector_hits(%s::vector, 10, 'both', %s)", (VECTOR, world.red))
        # Five minutes, then it is over.
        begin_search(bob, world.red)
        world.admin.execute("UPDATE cems_search_tickets SET expires_at = now() - interval '1 second' "
                            "WHERE user_id = %s", (world.bob,))
        with pytest.raises(REFUSED):
            bob.execute("SELECT * FROM cems_vector_hits(%s::vector, 10, 'both', %s)", (VECTOR, world.red))


def test_a_search_reads_only_the_team_it_was_begun_for(world):
    word = _word()
    red = world.ok(world.alice, "remember", f"red's shared {word} note", "--scope", "shared",
                   team=world.red)["id"]
    mine = world.ok(world.bob, "remember", f"bob's own {word} note")["id"]
    with world.connect(world.bob) as bob:
        for ticket in (world.blue, None):  # a search of blue (recorded there), one of his own memories
            assert begin_search(bob, ticket) is (ticket is not None)
            with pytest.raises(REFUSED):
                _searches(bob, word, world.red)
            begin_search(bob, ticket)
            assert _searches(bob, word, None)["text"] == {mine}  # his own: no team's memories
        begin_search(bob, world.red, scope="personal")  # a personal search reads no team's either
        with pytest.raises(REFUSED):
            _searches(bob, word, world.red)
        assert not any(team == world.red for _, team, _ in _search_rows(world, world.bob))
        begin_search(bob, world.red)
        assert red in _searches(bob, word, world.red)["text"]
    with world.connect(world.alice) as alice:  # not a member of blue: no search of it begins
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            begin_search(alice, world.blue)


def test_the_search_quota_and_the_trail_hold_against_a_flood(world):
    world.ok(None, "admin", "quota", world.bob, "--searches-per-minute", "3")
    try:
        with world.connect(world.bob) as bob:
            refused = 0
            for _ in range(50):
                try:
                    begin_search(bob, world.red)
                except psycopg.errors.ConfigurationLimitExceeded as error:
                    assert f"search quota reached: {world.bob} may search 3 times a minute" in str(error)
                    refused += 1
            # A minute may straddle two calendar minutes: at most twice the quota.
            assert 44 <= refused <= 47
            assert len(_search_rows(world, world.bob)) == 50 - refused
    finally:
        world.ok(None, "admin", "quota", world.bob, "--clear")


def test_a_member_cannot_forge_or_extend_a_search(world):
    schema = sql.Identifier(str(world.admin.execute("SELECT current_schema()").fetchone()[0]))
    with world.connect(world.bob) as bob:
        pid = bob.execute("SELECT pg_backend_pid()").fetchone()[0]
        for forged, args in (
            ("INSERT INTO {}.cems_search_tickets VALUES (%s, %s, %s, 1, pg_current_xact_id(), NULL, "
             "now() + interval '1 day')", (pid, world.bob, world.red)),
            ("UPDATE {}.cems_search_tickets SET expires_at = now() + interval '1 day'", None),
            ("SELECT * FROM {}.cems_search_tickets", None),
            ("SELECT setval('{}.cems_search_calls', 1)", None),
            ("SELECT nextval('{}.cems_search_calls')", None),
            ("SELECT {}.cems_search_step(%s, 'both', %s)", (world.bob, world.red)),
        ):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                bob.execute(sql.SQL(forged).format(schema), args)
                pytest.fail(f"not refused: {forged}")
        # A setting is no ticket: members may set any custom one.
        bob.execute("SELECT set_config('cems.search', 'begun', false)")
        with pytest.raises(REFUSED):
            bob.execute("SELECT * FROM cems_vector_hits(%s::vector, 10)", (VECTOR,))
        # Ending a search writes its own row once, nothing else.
        begin_search(bob, world.red)
        bob.execute("SELECT cems_end_search(2, '{}'::uuid[])")
        bob.execute("SELECT cems_end_search(9, '{}'::uuid[])")  # nothing under way: nothing written
        begin_search(bob, world.red)
        bob.execute("SELECT cems_end_search(0, '{}'::uuid[])")
        # Searching in a teammate's name: only a privileged session names who it acts for.
        bob.execute("SELECT cems_begin_search('search', 'both', %s, repeat('a', 64), %s)",
                    (world.red, world.alice))
    details = [detail for _, _, detail in _search_rows(world, world.bob)]
    assert [d.get("results") for d in details] == [2, 0, None]  # the last one never ended
    assert _search_rows(world, world.alice) == []


def test_a_search_through_cems_writes_one_audit_row(world):
    word = _word()
    red = world.ok(world.alice, "remember", f"red's shared {word} note", "--scope", "shared",
                   team=world.red)["id"]
    found = world.ok(world.bob, "search", word, "--mode", "hybrid", team=world.red)["results"]
    assert red in [r["id"] for r in found]
    rows = _search_rows(world, world.bob)
    assert len(rows) == 1
    action, team, detail = rows[0]
    assert (action, team, detail["results"], detail["shared"]) == ("search", world.red, len(found), [red])
    assert 1 <= detail["calls"] <= 1000
    # A search of one's own memories alone is counted (a quota holds for it too), not recorded.
    world.ok(world.bob, "search", word, "--scope", "personal", team=world.red)
    world.ok(world.bob, "search", word)
    assert len(_search_rows(world, world.bob)) == 1


def test_a_members_long_memory_shows_the_window_of_the_querys_rare_word(world):
    """A long result's window weighs the query's words by their rarity (retrieval/_present.py), counted for
    a member through cems_fts_counts after the lexical stage: within the search's ticket, the member's
    search still answers with the window of the rare word, and is still one audit row."""
    word = _word()
    long_note = ("red's deploy checklist: " + "; ".join(f"step {n} checks the deploy of service {n}"
                                                       for n in range(40)) + f"; finally {word} runs.")
    red = world.ok(world.alice, "remember", long_note, "--scope", "shared", team=world.red)["id"]
    found = world.ok(world.bob, "search", f"deploy {word}", "--mode", "hybrid", team=world.red)["results"]
    shown = next(r for r in found if r["id"] == red)
    assert word in shown["snippet"] and len(shown["snippet"]) < len(long_note)
    assert len(_search_rows(world, world.bob)) == 1


def test_a_members_bm25_past_its_floor_is_exact_through_the_search_function(world, monkeypatch):
    """A member's chunks are matched through cems_fts_chunks: the floor, then the sets that may beat it
    scored up to the rarest term's chunks (store/lexical.py), return what scoring every match returns, with
    and without giving up at the cap."""
    from cems_cli.config import load_settings
    from cems_cli.engine.bulk import import_memories
    from cems_cli.engine.service import MemoryService
    from cems_cli.store import lexical
    from cems_cli.store.search import SearchFilters
    from tests.integration.test_lexical_pruning import FLOOR_SETS_TEXTS, _recorded

    monkeypatch.setenv("CEMS_DATABASE_URL", world.urls[world.bob])
    monkeypatch.delenv("CEMS_USER", raising=False)
    with MemoryService(load_settings()) as svc:
        assert svc.restricted
        import_memories(svc, [svc.prepare(text) for text in FLOOR_SETS_TEXTS])
        svc.begin_search("search", "beta gamma delta", "both")

        def hits() -> list[tuple[str, float]]:
            filters = SearchFilters(identity=svc.identity)
            found = lexical.lexical_hits(svc.conn, "beta gamma delta", filters, 3)
            return [(hit.document_id, round(hit.score, 9)) for hit in found]

        with monkeypatch.context() as patch:
            patch.setattr(lexical, "FLOOR_FIRST_FROM", 10**9)
            patch.setattr(lexical, "PRUNE_FIRST_CHUNKS", 10**9)
            every = hits()
        assert len(every) == 3
        monkeypatch.setattr(lexical, "FLOOR_FIRST_FROM", 10)
        for cap_instead in (None, 1):
            with monkeypatch.context() as patch:
                caps: list[int | None] = []
                _recorded(patch, caps, cap_instead)
                assert hits() == every
                assert caps[:2] == [None, 20]


def test_a_members_bm25_raising_its_floor_is_exact_through_the_search_function(world, monkeypatch):
    """A member's floor raised by the chunks holding all the other terms (store/lexical.py), read whole or
    cut short by the cap, returns what scoring every match returns."""
    from cems_cli.config import load_settings
    from cems_cli.engine.bulk import import_memories
    from cems_cli.engine.service import MemoryService
    from cems_cli.store import lexical
    from cems_cli.store.search import SearchFilters
    from tests.integration.test_lexical_pruning import RAISE_TEXTS, _recorded

    query = "alpha beta gamma delta"
    monkeypatch.setenv("CEMS_DATABASE_URL", world.urls[world.bob])
    monkeypatch.delenv("CEMS_USER", raising=False)
    with MemoryService(load_settings()) as svc:
        assert svc.restricted
        import_memories(svc, [svc.prepare(text) for text in RAISE_TEXTS])
        svc.begin_search("search", query, "both")

        def hits() -> list[tuple[str, float]]:
            found = lexical.lexical_hits(svc.conn, query, SearchFilters(identity=svc.identity), 3)
            return [(hit.document_id, round(hit.score, 9)) for hit in found]

        with monkeypatch.context() as patch:
            patch.setattr(lexical, "PRUNE_FIRST_CHUNKS", 10**9)
            every = hits()
        assert len(every) == 3
        monkeypatch.setattr(lexical, "PRUNE_FIRST_CHUNKS", 1)
        monkeypatch.setattr(lexical, "RAISE_FLOOR_FROM", 1)
        for cap_instead in (None, 1):
            with monkeypatch.context() as patch:
                caps: list[int | None] = []
                seen = _recorded(patch, caps, cap_instead)
                assert hits() == every
                assert caps[:2] == [None, lexical.RAISE_FLOOR_CHUNKS]
                assert len(seen) == (2 if cap_instead is None else 3)

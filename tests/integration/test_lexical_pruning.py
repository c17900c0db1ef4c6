"""BM25 at scale: statistics kept per connection and max-score pruning (store/lexical.py) against the real
server. Pruning must return exactly what scoring every matching chunk returns; a small store's statistics are
counted afresh on every search, so a memory just written counts at once."""

from __future__ import annotations

import pytest

from cems_cli.config import get_settings
from cems_cli.engine.service import MemoryService
from cems_cli.store import lexical
from cems_cli.store.search import SearchFilters

# Every memory says "deploy"; "pipeline", "staging" and "rollback" are ever rarer, "canary" is held by two.
TEXTS = [
    f"Memo {n}: the deploy "
    + ("pipeline " if n % 2 == 0 else "")
    + ("staging " if n % 5 == 0 else "")
    + ("rollback " if n % 9 == 0 else "")
    + ("canary " if n in (7, 31) else "")
    + "notes for the team."
    for n in range(48)
]


@pytest.fixture
def service(env):
    from cems_cli.engine.bulk import import_memories

    with MemoryService(get_settings()) as svc:
        import_memories(svc, [svc.prepare(text) for text in TEXTS])
        svc.remember("A preference: the deploy pipeline runs on staging first.", category="preferences")
        yield svc


def _hits(service: MemoryService, query: str, limit: int, **filters) -> list[tuple[str, float]]:
    found = lexical.lexical_hits(service.conn, query, SearchFilters(identity=service.identity, **filters),
                                 limit)
    return [(hit.document_id, round(hit.score, 9)) for hit in found]


@pytest.mark.parametrize("query", [
    "deploy pipeline staging rollback",  # the rare term decides: pruned to its chunks
    "canary deploy pipeline",  # two chunks hold the rarest term: fewer than the limit, the next term joins
    "deploy notes",  # every chunk holds both
    "staging rollback canary xylophone",  # a term no chunk holds
])
@pytest.mark.parametrize("limit", [3, 10])
def test_pruned_scoring_returns_what_scoring_every_match_returns(service, monkeypatch, query, limit):
    monkeypatch.setattr(lexical, "PRUNE_FIRST_CHUNKS", 10**9)  # every term first: no pruning
    every = _hits(service, query, limit)
    monkeypatch.setattr(lexical, "PRUNE_FIRST_CHUNKS", 1)  # the rarest term alone first
    assert _hits(service, query, limit) == every
    assert len(every) == limit
    monkeypatch.setattr(lexical, "FLOOR_FIRST_FROM", 1)  # the chunks holding every term first, for a floor
    assert _hits(service, query, limit) == every


@pytest.mark.parametrize("query", ["deploy canary", "deploy pipeline rollback canary",
                                   "notes deploy staging"])
@pytest.mark.parametrize("limit", [3, 10])
def test_a_term_most_chunks_hold_brings_none_in_alone(service, monkeypatch, query, limit):
    """In a big store a term held by a large share of the chunks ("deploy", in all of them here) is no
    evidence on its own: the result is the best of the chunks holding one of the query's other terms, scored
    on every term, exactly; and fewer than the limit when fewer hold them."""
    every = _hits(service, query, 100)
    texts = dict(service.conn.execute("SELECT id::text, content FROM memory_documents").fetchall())
    others = [word for word in query.split() if word not in ("deploy", "notes")]
    expected = [hit for hit in every if any(word in texts[hit[0]] for word in others)][:limit]
    monkeypatch.setattr(lexical, "COMMON_FROM", 40)
    monkeypatch.setattr(lexical, "COMMON_SHARE", 0.5)  # "deploy" (49 chunks) and "notes" (48)
    assert _hits(service, query, limit) == expected
    monkeypatch.setattr(lexical, "PRUNE_FIRST_CHUNKS", 1)  # the rarest term first: bounds with "deploy" in
    assert _hits(service, query, limit) == expected
    # A query of common terms alone is scored as before.
    with monkeypatch.context() as patch:
        patch.setattr(lexical, "COMMON_FROM", 10**9)
        before = _hits(service, "deploy notes", limit)
    assert _hits(service, "deploy notes", limit) == before and len(before) == limit


def _recorded(monkeypatch, caps: list[int | None] | None = None,
              cap_instead: int | None = None) -> list[tuple[list[tuple[str, ...]], list[str]]]:
    """The passes scored: (matching sets, excluded terms) each; each pass's cap into `caps`, and a pass with
    a cap made with `cap_instead` when given."""
    seen: list[tuple[list[tuple[str, ...]], list[str]]] = []
    run, run_capped = lexical._Scoring.run, lexical._Scoring.run_capped

    def recording(self, conn, matching, excluding=()):
        seen.append((list(matching), list(excluding)))
        if caps is not None:
            caps.append(None)
        return run(self, conn, matching, excluding)

    def recording_capped(self, conn, matching, cap, excluding=()):
        seen.append((list(matching), list(excluding)))
        if caps is not None:
            caps.append(cap)
        return run_capped(self, conn, matching, cap if cap_instead is None else cap_instead, excluding)

    monkeypatch.setattr(lexical._Scoring, "run", recording)
    monkeypatch.setattr(lexical._Scoring, "run_capped", recording_capped)
    return seen


def test_pruning_scores_fewer_chunks(service, monkeypatch):
    seen = _recorded(monkeypatch)
    monkeypatch.setattr(lexical, "PRUNE_FIRST_CHUNKS", 1)
    _hits(service, "deploy pipeline rollback", 3)
    assert seen == [([("rollback",)], [])]  # six chunks hold it, each above "deploy pipeline" alone


FILLER = ("zebra yak xerus walrus vole urchin tapir skunk raven quail puma otter newt moose lynx koala "
          "jackal ibis hyena gecko ferret eland dingo camel bison")
# "alpha" is rare but said in long memories (low scores); "beta" and "gamma" are common, and together in a
# few short ones: they beat "alpha", though neither alone could.
SETS_TEXTS = ([f"alpha {FILLER} {n}" for n in range(3)] + [f"beta gamma note {n}." for n in range(5)]
              + [f"beta item {n}" for n in range(25)] + [f"gamma item {n}" for n in range(25)])


def test_past_the_first_terms_only_chunks_holding_enough_of_the_others_are_scored(env, monkeypatch):
    """After the rarest term, a chunk holding "beta" alone or "gamma" alone cannot reach the scores found,
    but one holding both can: only chunks holding both are scored (an AND), and the result is what scoring
    every match gives."""
    from cems_cli.engine.bulk import import_memories

    with MemoryService(get_settings()) as svc:
        import_memories(svc, [svc.prepare(text) for text in SETS_TEXTS])
        seen = _recorded(monkeypatch)
        monkeypatch.setattr(lexical, "PRUNE_FIRST_CHUNKS", 1)
        found = _hits(svc, "alpha beta gamma", 3)
        assert seen == [([("alpha",)], []), ([("beta", "gamma")], ["alpha"])]
        unpruned = _hits_unpruned(svc, monkeypatch, "alpha beta gamma", 3)
        assert found == unpruned and len(found) == 3
        texts = dict(svc.conn.execute(
            "SELECT id::text, content FROM memory_documents WHERE id = ANY(%s::uuid[])",
            ([doc for doc, _ in found],)).fetchall())
        assert all(text.startswith("beta gamma note") for text in texts.values())


COMMON_TEXTS = ([f"beta gamma note {n}." for n in range(12)] + [f"beta item {n}" for n in range(60)]
                + [f"gamma item {n}" for n in range(60)])


def test_when_every_term_is_common_the_chunks_holding_them_all_set_the_floor(env, monkeypatch):
    """Even the rarest term holds too many chunks to score whole: the chunks holding every term are scored
    first, and since a chunk holding "beta" or "gamma" alone cannot beat the limit-th of them, that is the
    only pass (72 chunks hold "beta"; 12 hold both). The result is what scoring every match gives."""
    from cems_cli.engine.bulk import import_memories

    with MemoryService(get_settings()) as svc:
        import_memories(svc, [svc.prepare(text) for text in COMMON_TEXTS])
        seen = _recorded(monkeypatch)
        monkeypatch.setattr(lexical, "FLOOR_FIRST_FROM", 50)
        found = _hits(svc, "beta gamma", 3)
        assert seen == [([("beta", "gamma")], [])]
        assert found == _hits_unpruned(svc, monkeypatch, "beta gamma", 3) and len(found) == 3


# Every term is common: "delta" is the rarest (20 chunks). 4 long chunks hold all three, a low floor: a short
# chunk holding "delta" and one more term could beat them, and those ANDs match only the same 4.
FLOOR_SETS_TEXTS = ([f"beta gamma delta {FILLER} {n}." for n in range(4)]
                    + [f"delta {FILLER} {n}" for n in range(16)]
                    + [f"beta gamma {FILLER} {n}" for n in range(30)]
                    + [f"beta {n}" for n in range(30)] + [f"gamma {n}" for n in range(30)])


@pytest.mark.parametrize("cap_hit", [False, True])
def test_past_the_floor_the_sets_that_may_beat_it_are_scored_up_to_the_rarest_terms_chunks(env, monkeypatch,
                                                                                            cap_hit):
    """After the floor, the smallest sets of terms that may beat it are scored, unless more chunks hold them
    than the rarest term does (an AND of co-occurring terms: its size is known only by reading it): then
    pruning starts again from the rarest term. Either way the result is what scoring every match gives."""
    from cems_cli.engine.bulk import import_memories

    with MemoryService(get_settings()) as svc:
        import_memories(svc, [svc.prepare(text) for text in FLOOR_SETS_TEXTS])
        caps: list[int | None] = []
        # With a cap of 1 the sets' chunks are as many as the cap: as if the AND matched as many as "delta".
        seen = _recorded(monkeypatch, caps, cap_instead=1 if cap_hit else None)
        monkeypatch.setattr(lexical, "FLOOR_FIRST_FROM", 10)
        found = _hits(svc, "beta gamma delta", 3)
        assert seen[0] == ([("delta", "beta", "gamma")], [])
        assert {frozenset(group) for group in seen[1][0]} <= {frozenset(("delta", "beta")),
                                                             frozenset(("delta", "gamma"))}
        assert caps[:2] == [None, 20]
        assert len(seen) == (3 if cap_hit else 2)
        if cap_hit:  # given up: scored from the rarest term (with the others too, in a store this small)
            assert seen[2][0][0] == ("delta",)
        assert found == _hits_unpruned(svc, monkeypatch, "beta gamma delta", 3) and len(found) == 3


# "alpha" is rare and said in long memories (a low floor); "delta" with "beta" or "gamma" could beat it, and
# five short memories hold all three: scored first, they set a floor that no chunk lacking one of them beats.
RAISE_TEXTS = ([f"alpha {FILLER} {n}" for n in range(3)] + [f"beta gamma delta note {n}." for n in range(5)]
               + [f"beta gamma {n}" for n in range(25)] + [f"delta {FILLER} {n}" for n in range(10)])


@pytest.mark.parametrize("cap_hit", [False, True])
def test_the_chunks_holding_all_the_other_terms_raise_the_floor_before_the_sets(env, monkeypatch, cap_hit):
    """Past the rarest term, when the sets that may beat its floor can match many chunks, the chunks holding
    every other term are scored first: when all of them were read, the sets they cover need no pass. Cut
    short by the cap, their scores still raise the floor and the sets are scored. Either way the result is
    what scoring every match gives."""
    from cems_cli.engine.bulk import import_memories

    with MemoryService(get_settings()) as svc:
        import_memories(svc, [svc.prepare(text) for text in RAISE_TEXTS])
        caps: list[int | None] = []
        seen = _recorded(monkeypatch, caps, cap_instead=1 if cap_hit else None)
        monkeypatch.setattr(lexical, "PRUNE_FIRST_CHUNKS", 1)
        monkeypatch.setattr(lexical, "RAISE_FLOOR_FROM", 1)
        found = _hits(svc, "alpha beta gamma delta", 3)
        assert seen[:2] == [([("alpha",)], []), ([("delta", "beta", "gamma")], ["alpha"])]
        assert caps[:2] == [None, lexical.RAISE_FLOOR_CHUNKS]
        if cap_hit:  # one chunk of the five read: the sets are scored, from the floor it raised
            assert len(seen) == 3 and all(len(group) >= 2 for group in seen[2][0])
        else:
            assert len(seen) == 2
        assert found == _hits_unpruned(svc, monkeypatch, "alpha beta gamma delta", 3) and len(found) == 3
        texts = dict(svc.conn.execute(
            "SELECT id::text, content FROM memory_documents WHERE id = ANY(%s::uuid[])",
            ([doc for doc, _ in found],)).fetchall())
        assert all(text.startswith("beta gamma delta note") for text in texts.values())


def _hits_unpruned(service, monkeypatch, query: str, limit: int) -> list[tuple[str, float]]:
    with monkeypatch.context() as patch:
        patch.setattr(lexical, "PRUNE_FIRST_CHUNKS", 10**9)
        patch.setattr(lexical, "FLOOR_FIRST_FROM", 10**9)
        return _hits(service, query, limit)


def test_too_many_term_sets_fall_back_to_one_term_at_a_time(service, monkeypatch):
    monkeypatch.setattr(lexical, "MAX_TERM_SETS", 0)
    monkeypatch.setattr(lexical, "PRUNE_FIRST_CHUNKS", 1)
    query = "deploy pipeline staging rollback notes team"
    assert _hits(service, query, 3) == _hits_unpruned(service, monkeypatch, query, 3)


def test_a_long_query_takes_its_terms_one_at_a_time_only_so_long(service, monkeypatch):
    """Past MAX_TERM_ROUNDS terms taken in one by one, the chunks holding any of the rest are scored in one
    pass: a long prompt is a bounded number of statements, and the result is what scoring every match
    gives."""
    seen = _recorded(monkeypatch)
    monkeypatch.setattr(lexical, "MAX_TERM_SETS", 0)
    monkeypatch.setattr(lexical, "PRUNE_FIRST_CHUNKS", 1)
    monkeypatch.setattr(lexical, "MAX_TERM_ROUNDS", 2)
    query = "deploy pipeline staging rollback canary notes team memo"
    found = _hits(service, query, 45)  # more than the rarer terms' chunks: no bound until the end
    assert len(seen) == 4  # the rarest term, two more one by one, then the rest together
    assert len(seen[-1][0]) > 1 and seen[-1][1]
    assert found == _hits_unpruned(service, monkeypatch, query, 45)


def test_filters_that_drop_the_best_chunks_still_fill_the_limit(service, monkeypatch):
    """The best chunks are checked against the memories' filters first; when those drop too many (here a
    category filter, and no room beyond the limit itself), every match is joined."""
    monkeypatch.setattr(lexical, "FIRST_LIMIT_FACTOR", 1)
    found = _hits(service, "deploy pipeline staging", 3, category="preferences")
    assert len(found) == 1
    assert _hits(service, "deploy pipeline staging", 3, category="general")[0][1] > 0


def test_a_memory_just_written_counts_at_once_in_a_small_store(service):
    assert _hits(service, "zeppelin", 5) == []
    made, _ = service.remember("The zeppelin hangar holds the deploy notes.")
    assert [doc for doc, _ in _hits(service, "zeppelin", 5)] == [made]


def test_statistics_are_kept_for_a_while_and_a_connections_own_writes_drop_them(service):
    lexical.forget_stats(service.conn)
    before = _hits(service, "canary", 5)
    with MemoryService(get_settings()) as writer:  # another process's write, as the capture worker's
        writer.remember("A third canary note, written after the statistics were counted.")
    # N and the term's frequency are those of the first search: the two old chunks score as before.
    after = dict(_hits(service, "canary", 5))
    assert len(after) == 3 and all(after[doc] == score for doc, score in before)
    service.remember("A fourth canary note, written through the searching connection.")
    assert all(dict(_hits(service, "canary", 5))[doc] != score for doc, score in before)

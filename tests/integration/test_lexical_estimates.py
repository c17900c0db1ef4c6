"""BM25 statistics from the planner's estimates (store/lexical.py): in a large store whose every chunk the
asker sees, a common lexeme's document frequency is the share ANALYZE found, not a count; never when a
context would be counted in, never for what the estimates do not hold, and the hits stay those of counting."""

from __future__ import annotations

import re

import pytest

from cems_cli.engine.service import MemoryService
from cems_cli.store import lexical
from cems_cli.store.search import SearchFilters
from tests.integration.test_lexical_pruning import TEXTS


@pytest.fixture
def lone(lone_store):
    from cems_cli.engine.bulk import import_memories

    import_memories(lone_store, [lone_store.prepare(text) for text in TEXTS])
    lone_store.conn.execute("ANALYZE memory_chunks")
    lexical.forget_stats(lone_store.conn)
    return lone_store


def _exact(svc: MemoryService, lexeme: str) -> int:
    return svc.conn.execute("SELECT count(*) FROM memory_chunks WHERE search_vector @@ %s::tsquery",
                            (lexical.quoted(lexeme) + ":A",)).fetchone()[0]


def _hits(svc: MemoryService, query: str) -> list[tuple[str, float]]:
    found = lexical.lexical_hits(svc.conn, query, SearchFilters(identity=svc.identity), 5)
    return [(hit.document_id, round(hit.score, 9)) for hit in found]


def test_common_lexemes_take_the_planners_share_and_the_hits_stay_the_same(lone, monkeypatch):
    query = "deploy pipeline staging canary zeppelin"
    counted = _hits(lone, query)
    monkeypatch.setattr(lexical, "ESTIMATE_FROM", 1)
    lexical.forget_stats(lone.conn)
    estimates = lexical._planner_frequencies(lone.conn)
    assert estimates["deploy"] == pytest.approx(1.0) and estimates["pipelin"] == pytest.approx(0.5)
    assert "zeppelin" not in estimates  # held by no chunk: counted (as 0)
    lexemes = lexical.lexical_terms(lone.conn, query).lexemes
    total, _average, frequencies = lexical.collection_stats(lone.conn, lone.identity, "both", lexemes)
    # ANALYZE read every row of so small a table: its shares are exact.
    assert total == len(TEXTS) and frequencies == [_exact(lone, lexeme) for lexeme in lexemes]
    assert _hits(lone, query) == counted


def test_no_estimates_when_a_chunk_has_a_context(lone, monkeypatch):
    lone.remember("The deploy runbook lives in the wiki.", context="Asked about the deploy pipeline")
    lone.conn.execute("ANALYZE memory_chunks")
    assert lexical._planner_frequencies(lone.conn) == {}


def _counts_every_chunk(statement: str) -> bool:
    return re.search(r"count\(\*\) FROM memory_chunks($|\))", statement) is not None


def test_a_large_stores_chunks_are_the_row_count_analyze_keeps_not_a_count(lone, monkeypatch):
    statements: list[str] = []
    execute = lone.conn.execute

    def recording(query, params=None, *args, **kwargs):
        statements.append(str(query))
        return execute(query, params, *args, **kwargs)

    monkeypatch.setattr(lone.conn, "execute", recording)
    lexemes = lexical.lexical_terms(lone.conn, "deploy pipeline").lexemes
    small, _average, _frequencies = lexical.collection_stats(lone.conn, lone.identity, "both", lexemes)
    assert small == len(TEXTS) and any(_counts_every_chunk(s) for s in statements)
    # A million chunks were counted by reading the whole table, 0.5 s of a prompt every few minutes.
    monkeypatch.setattr(lexical, "ESTIMATE_FROM", 1)
    lexical.forget_stats(lone.conn)
    statements.clear()
    large, _average, _frequencies = lexical.collection_stats(lone.conn, lone.identity, "both", lexemes)
    assert large == len(TEXTS)  # ANALYZE read every row of so small a table
    assert not any(_counts_every_chunk(s) for s in statements), statements

"""BM25 phrase bonus against the real server: side-by-side query terms in a memory's content count more."""

from __future__ import annotations

import pytest

from cems_cli.config import get_settings
from cems_cli.engine.service import MemoryService
from cems_cli.store import lexical as store_lexical
from cems_cli.store import search as store_search

PHRASE = "Caroline went to the support group meeting on Tuesday evening."
APART = "Caroline offered support to a group of new volunteers on Tuesday evening."
CONTEXT_ONLY = "Caroline stayed home on Tuesday evening."


@pytest.fixture
def service(env):
    with MemoryService(get_settings()) as svc:
        yield svc


def _scores(service: MemoryService, query: str) -> dict[str, float]:
    filters = store_search.SearchFilters(identity=service.identity)
    hits = store_lexical.lexical_hits(service.conn, query, filters, 10)
    return {hit.document_id: hit.score for hit in hits}


def test_terms_side_by_side_outrank_the_same_terms_apart(service):
    near, _ = service.remember(PHRASE)
    apart, _ = service.remember(APART)
    scores = _scores(service, "support group")
    assert scores[near] > scores[apart] > 0
    # Without the bonus both memories hold the same two terms: the bonus is what separates them.
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(store_lexical, "PHRASE_WEIGHT", 0.0)
        plain = _scores(service, "support group")
    assert scores[near] > plain[near]
    assert scores[apart] == pytest.approx(plain[apart])


def test_a_phrase_only_in_the_context_earns_no_bonus(service):
    memory, _ = service.remember(CONTEXT_ONLY, context="She skipped the support group this week.")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(store_lexical, "PHRASE_WEIGHT", 0.0)
        plain = _scores(service, "support group")
    assert _scores(service, "support group")[memory] == pytest.approx(plain[memory])


def test_queries_with_quotes_and_backslashes_still_search(service):
    memory, _ = service.remember("The path C:\\temp\\it's holds the support group's notes.")
    assert memory in _scores(service, "it's C:\\temp support group's")
    assert _scores(service, "the of and") == {}

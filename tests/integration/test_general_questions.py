"""A question about the world ("Explain what React.memo does") is not a question about the user's work: the
prompt hook injects a memory for it only when one is plainly about what it asks, while `cems search` still
finds whatever matches."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.real_model  # judges ranking: the real model

PROJECT = "project:acme/storefront"
I18N = "We'll use next-intl rather than react-i18next since it supports server components."
STATE = "We decided to move terraform state to a separate S3 bucket per environment."
MEMO = ("The product grid re-rendered on every cart change: wrapping ProductCard in React.memo fixed it, "
        "and React.memo needs stable props, so the handlers are wrapped in useCallback.")


def _store(svc, text: str, category: str = "decisions") -> None:
    svc.store(svc.prepare(text, category=category, project=PROJECT))


def test_a_general_question_gets_no_memory_that_only_shares_a_topic(lone_store):
    for text in (I18N, STATE):
        _store(lone_store, text)
    for question in ("Explain what React.memo does.",
                     "What's the difference between a Deployment and a StatefulSet?"):
        assert lone_store.recall(question, lone_store.recall_options(current_project=PROJECT)) == []
    # An explicit search is not the hook: it finds what matches, weakly or not.
    found = lone_store.search("Explain what React.memo does.", lone_store.search_options(project=PROJECT))
    assert I18N in [r.content for r in found]
    # A question about the user's own work gets the memory.
    asked = lone_store.recall_options(current_project=PROJECT)
    recalled = lone_store.recall("Which i18n library do we use with React?", asked)
    assert [r.content for r in recalled][:1] == [I18N]


def test_a_general_question_gets_the_memory_about_what_it_asks(lone_store):
    for text in (I18N, MEMO):
        _store(lone_store, text, "learnings" if text == MEMO else "decisions")
    asked = lone_store.recall_options(current_project=PROJECT)
    recalled = [r.content for r in lone_store.recall("Explain what React.memo does.", asked)]
    assert recalled == [MEMO]


def test_the_explanation_says_what_the_gate_kept(lone_store):
    from cems_cli.retrieval.options import SearchOptions
    from cems_cli.retrieval.pipeline import run_search

    for text in (I18N, MEMO):
        _store(lone_store, text)
    options = SearchOptions.from_settings(lone_store.settings, limit=5, current_project=PROJECT,
                                          mode="hybrid", explain=True, general_needs_evidence=True,
                                          include_weak=True)
    [result] = run_search(lone_store, "Explain what React.memo does.", options)
    assert result.content == MEMO
    assert result.explain["pipeline"]["stages"]["general_knowledge"] == {"candidates": 2, "kept": 1}

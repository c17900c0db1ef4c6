"""How a query is split into terms (cems_cli/text/terms.py), the one definition the retrieval stages share;
and BM25's query without the words of the current project's name (in `billing-worker` every memory naming
the project matched "worker")."""

from __future__ import annotations

import pytest

from cems_cli.text.terms import name_tokens, query_terms, without_project_words, words


@pytest.mark.parametrize(("query", "project", "expected"), [
    ("How do I check that the worker is alive?", "project:billing-worker",
     "How do I check that the is alive?"),
    ("What feeds the gateway's event stream?", "project:acme/ingest-gateway", "What feeds the event stream?"),
    ("worker", "project:billing-worker", "worker"),  # nothing else left: kept whole
    ("billing worker", "project:billing-worker", "billing worker"),
    ("How do I run the tests?", "project:billing-worker", "How do I run the tests?"),
    ("How do I check that the worker is alive?", None, "How do I check that the worker is alive?"),
    # Every memory of ledger-api names it: "api" tells them apart no more than "ledger".
    ("Where is the API client?", "project:ledger-api", "Where is the client?"),
    ("Is it on CI?", "project:ci", "Is it on CI?"),  # a name of two letters is not taken out
])
def test_project_words_leave_the_lexical_query(query, project, expected):
    assert without_project_words(query, project) == expected


def test_words_keep_identifiers_whole_and_lower_cased():
    assert words("Why ERR_MODULE_NOT_FOUND in src/app.ts? It's 2x") == [
        "why", "err_module_not_found", "in", "src", "app", "ts", "it", "s", "2x"]


def test_query_terms_are_content_words_in_order_once_each():
    assert query_terms("How do I fix the Redis cache? The cache of a worker, I mean.") == [
        "fix", "redis", "cache", "worker", "mean"]
    assert query_terms("what is it?") == []


def test_name_tokens_keep_names_as_written_and_their_parts():
    assert name_tokens("Deploy Next.js with docker-compose from the front-end") == {
        "deploy", "next.js", "next", "js", "with", "docker-compose", "docker", "compose", "from", "the",
        "front-end", "front", "end"}
    assert "c#" not in name_tokens("c# code")  # a joiner joins two names; "c#" alone is "c"

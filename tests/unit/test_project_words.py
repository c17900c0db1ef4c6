"""BM25's query leaves out the words of the current project's name (retrieval/pipeline.py): in
`billing-worker` every memory naming the project matched "worker"."""

from __future__ import annotations

import pytest

from cems_cli.retrieval.pipeline import _without_project_words


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
    assert _without_project_words(query, project) == expected

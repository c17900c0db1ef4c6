"""A memory a newer one of the same project says was replaced ranks below it (retrieval/supersede.py),
through the real pipeline; `CEMS_SUPERSEDED_WEIGHT=1` turns it off."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.real_model  # judges ranking: the real model

OLD = "We'll use Kafka for the event stream between the gateway and the indexer, one topic per tenant."
NEW = ("Kafka is too heavy to operate for our volume. Let's switch the event stream from Kafka to NATS "
       "JetStream.")
QUESTION = "What do we use for the event stream between the gateway and the indexer?"


def _search(cli, *extra: str, env: dict[str, str] | None = None) -> list[dict]:
    result = cli("search", QUESTION, "--json", "--all", *extra, extra_env=env)
    assert result.code == 0, result.stderr
    return result.json()["results"]


def test_the_replaced_decision_ranks_below_the_one_that_replaced_it(cli):
    old = cli("remember", OLD, "--category", "decisions", "--json").json()["id"]
    new = cli("remember", NEW, "--category", "decisions", "--json").json()["id"]
    off = _search(cli, env={"CEMS_SUPERSEDED_WEIGHT": "1"})
    assert [r["id"] for r in off[:2]] == [old, new]  # the old one says it in the question's own words
    on = _search(cli, "--explain", env={"CEMS_SUPERSEDED_WEIGHT": "0.5"})
    assert [r["id"] for r in on[:2]] == [new, old]
    demoted = on[1]["explain"]["adjust"]["superseded_by"]
    assert demoted["id"] == new and demoted["replaced"] == ["kafka"] and demoted["weight"] == 0.5
    assert on[0]["explain"]["pipeline"]["stages"]["superseded"] == 1


def test_a_pinned_memory_is_never_demoted(cli):
    old = cli("remember", OLD, "--category", "decisions", "--json").json()["id"]
    assert cli("pin", old, "--json").code == 0
    cli("remember", NEW, "--category", "decisions", "--json")
    assert _search(cli)[0]["id"] == old

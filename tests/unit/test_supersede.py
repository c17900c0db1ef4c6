"""Superseded memories (retrieval/supersede.py): which names a text says were replaced, and which
candidates a newer one of the same project demotes."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from cems_cli.retrieval.supersede import apply_supersession, replaced_names
from cems_cli.retrieval.types import Candidate

DAY = datetime(2026, 10, 1, tzinfo=UTC)


@pytest.mark.parametrize(("text", "names"), [
    ("Let's switch the event stream from Kafka to NATS JetStream.", {"kafka"}),
    ("Memcached keeps evicting sessions. Switch the session cache from Memcached to Redis.", {"memcached"}),
    ("Let's drop Redux Toolkit and use Zustand for client state.", {"redux toolkit"}),
    ("Let's replace sealed-secrets with external-secrets.", {"sealed-secrets"}),
    ("Use WeasyPrint rather than wkhtmltopdf.", {"wkhtmltopdf"}),
    ("We'll use Postgres advisory locks instead of Redis locks.", {"redis"}),
    ("We migrated off Travis last spring.", {"travis"}),
    ("The API no longer uses Flask.", {"flask"}),
    ("Move state to a bucket per environment instead of one shared bucket.", set()),
    ("We use Redis for the session cache.", set()),
    ("Run the tests with pytest -q.", set()),
])
def test_replaced_names(text, names):
    assert replaced_names(text) == names


def candidate(doc: str, text: str, days: int, vector: tuple[float, ...], *, project: str = "project:api",
              pinned: bool = False, score: float = 0.8) -> Candidate:
    cand = Candidate(document_id=doc, chunk_id=doc, chunk_index=0, content=text, category="decisions",
                     created_at=DAY + timedelta(days=days), source_ref=project, pinned=pinned,
                     embedding=list(vector), score=score)
    cand.explain["adjust"] = {"unclamped": score, "score": score}
    return cand


def test_the_older_memory_of_what_was_replaced_is_demoted_the_rest_untouched():
    old = candidate("old", "We'll use Kafka for the event stream, one topic per tenant.", 0, (1.0, 0.2))
    record = candidate("record", "Asked: switch the event stream from Kafka to NATS. Ran: `go test`.", 30,
                       (1.0, 0.25))
    new = candidate("new", "Let's switch the event stream from Kafka to NATS JetStream.", 30, (1.0, 0.3),
                    score=0.6)
    other_project = candidate("other", "Kafka runs the billing events.", 0, (1.0, 0.2), project="project:web")
    unrelated = candidate("far", "Kafka's retention is 7 days.", 0, (0.0, 1.0))
    pinned = candidate("pinned", "Kafka is our event bus.", 0, (1.0, 0.2), pinned=True)
    found = [old, record, new, other_project, unrelated, pinned]
    assert apply_supersession(found, 0.5, 0.4) == 1
    assert old.score == pytest.approx(0.4) and old.explain["adjust"]["unclamped"] == pytest.approx(0.4)
    assert old.explain["adjust"]["superseded_by"]["id"] in {"new", "record"}  # either says so
    assert old.explain["adjust"]["superseded_by"]["replaced"] == ["kafka"]
    for kept in (record, new, other_project, unrelated, pinned):
        assert kept.score == pytest.approx(0.8 if kept is not new else 0.6)
        assert "superseded_by" not in kept.explain["adjust"]


def test_a_memory_newer_than_the_change_is_not_demoted_and_weight_one_is_off():
    change = candidate("change", "Switch the cache from Memcached to Redis.", 0, (1.0, 0.0))
    later = candidate("later", "Memcached is still used by the legacy admin.", 10, (1.0, 0.1))
    assert apply_supersession([change, later], 0.5, 0.4) == 0
    earlier = candidate("earlier", "We use Memcached for the cache.", -5, (1.0, 0.1))
    assert apply_supersession([change, earlier], 1.0, 0.4) == 0
    assert apply_supersession([change, earlier], 0.5, 0.4) == 1

"""Summaries of groups of memories without a database: grouping, gists, titles, the summaries' text, and
which questions ask for an overview."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from cems_cli.retrieval import raptor
from cems_cli.retrieval.raptor import Member
from cems_cli.retrieval.understand import is_overview, overview_topic

DAY = datetime(2026, 10, 1, 12, tzinfo=UTC)


def unit(*values: float) -> np.ndarray:
    v = np.array(values, dtype=np.float32)
    return v / np.linalg.norm(v)


def member(text: str, days: int = 0, category: str = "decisions", source: str | None = "manual",
           entities: tuple[str, ...] = ()) -> Member:
    return Member(f"{days}:{text[:40]}", category, text, DAY + timedelta(days=days), source, entities)


def test_alike_memories_share_a_group_and_unlike_ones_do_not():
    vectors = np.vstack([unit(1, 0, 0), unit(0, 1, 0), unit(0.95, 0.1, 0), unit(0.1, 0.97, 0), unit(0, 0, 1)])
    groups = raptor.group_memories(vectors, similarity=0.8, max_size=10)
    assert [g.members for g in groups] == [[0, 2], [1, 3], [4]]


def test_a_new_memory_never_moves_the_old_ones():
    rng = np.random.default_rng(7)
    vectors = rng.normal(size=(40, 8)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    before = raptor.group_memories(vectors[:30], similarity=0.3, max_size=5)
    after = raptor.group_memories(vectors, similarity=0.3, max_size=5)
    old = {tuple(m for m in g.members if m < 30) for g in after} - {()}
    assert old == {tuple(g.members) for g in before}


def test_a_full_group_takes_no_more():
    vectors = np.vstack([unit(1, 0)] * 7)
    groups = raptor.group_memories(vectors, similarity=0.5, max_size=3)
    assert [g.size for g in groups] == [3, 3, 1]


def test_no_memories_no_groups():
    assert raptor.group_memories(np.zeros((0, 4), dtype=np.float32)) == []


def test_the_gist_of_a_captured_session_record_skips_its_session_line():
    record = member("Claude Code session 1a2b3c4d in api on branch main, 2026-10-01 12:00 UTC.\n"
                    "Asked: Move the session cache to Redis. Ran: `pytest`.", category="context",
                    source="session")
    assert raptor.gist(record) == "Asked: Move the session cache to Redis. Ran: `pytest`"
    written = member("Claude Code session notes are kept here.\nSecond line.", category="context")
    assert raptor.gist(written).startswith("Claude Code session notes")


def test_the_gist_keeps_whole_sentences_within_its_limit():
    said = "Memcached keeps evicting sessions. Let's switch the session cache to Redis"
    assert raptor.gist(member(said + ". " + "Padding " * 60)) == said
    long = member("word " * 100)
    cut = raptor.gist(long, limit=50)
    assert len(cut) <= 50 and cut.endswith("…")


def test_titles_name_what_sets_a_group_apart():
    members = [
        member("We moved the session cache from Memcached to Redis", entities=("redis", "memcached")),
        member("Session cache keys in Redis expire after 30 minutes", 1, entities=("redis",)),
        member("Invoices are rendered to PDF with WeasyPrint", 2, entities=("weasyprint",)),
        member("The invoice PDF needs the Pango libraries in the Dockerfile", 3,
               entities=("pango", "dockerfile")),
    ]
    groups = [raptor.Group([0, 1]), raptor.Group([2, 3])]
    titles = raptor.group_titles(members, groups, "project:ledger-api")
    assert titles[0].split(", ")[0] in {"redis", "session", "cache"}
    assert "redis" in titles[0] and "ledger-api" not in titles[0]
    assert any(word in titles[1] for word in ("pdf", "invoice", "invoices"))


def test_a_group_summary_quotes_its_central_memories_in_time_order_without_repeats():
    members = [
        member("We'll use Memcached for the session cache.", 0),
        member("Claude Code session 1a2b3c4d in api.\nWe'll use Memcached for the session cache. / Tests.", 0,
               category="context", source="session"),
        member("Let's switch the session cache from Memcached to Redis.", 9),
    ]
    vectors = np.vstack([unit(1, 0.1), unit(1, 0.12), unit(1, 0.3)])
    group = raptor.Group([0, 1, 2], centroid=unit(1, 0.17))
    summary = raptor.summarise_group(members, vectors, group, "redis, memcached", "project:api")
    assert summary.level == 1 and summary.method == "extractive"
    assert summary.content.startswith("api — redis, memcached (3 memories, 2026-10-01 – 2026-10-10): ")
    assert summary.content.count("Memcached for the session cache") == 1  # the record repeats the decision
    assert summary.content.index("Memcached for") < summary.content.index("switch the session cache")
    assert summary.content.endswith("(+1 more).")
    assert set(summary.members) == {m.id for m in members}
    assert summary.period_start == DAY and summary.period_end == DAY + timedelta(days=9)


def test_the_project_summary_lists_its_largest_topics_in_time_order():
    def group(title: str, size: int, start: int, said: str) -> raptor.Summary:
        ids = tuple(f"{title}-{i}" for i in range(size))
        text = f"api — {title} ({size} memories, x): 2026-10-01 decisions: {said}; more."
        first = DAY + timedelta(days=start)
        return raptor.Summary(1, title, text, ids, first, first + timedelta(days=1))

    topics = [group(f"topic{i}", size=i + 2, start=i, said=f"Said {i}.") for i in range(10)]
    summary = raptor.summarise_project("project:api", topics, member_count=80)
    assert summary.level == 2 and summary.title == "api overview"
    assert summary.content.startswith("api: 80 memories in 10 topics, 2026-10-01 – 2026-10-11. Topics: ")
    assert "topic0" not in summary.content and "topic1 " not in summary.content  # the two smallest
    assert summary.content.index("topic2") < summary.content.index("topic9")
    assert "topic9 (11, 2026-10-10 – 2026-10-11: Said 9)" in summary.content
    assert summary.content.endswith("; and 2 more topics.")
    assert len(summary.members) == sum(len(t.members) for t in topics)


def test_member_key_ignores_order():
    assert raptor.member_key(["b", "a"]) == raptor.member_key(["a", "b"]) != raptor.member_key(["a"])


@pytest.mark.parametrize("question", [
    "catch me up", "Give me an overview of the project", "what have we done on billing this month?",
    "Summarize the work on the gateway", "where are we on the migration?", "what did we do last week?",
    "What did we work on in ledger-api?", "what's been going on in the infra repo", "recap please",
    "What has happened since Monday?", "status of the payments refactor",
])
def test_overview_questions(question):
    assert is_overview(question)


@pytest.mark.parametrize("question", [
    "What did we decide about the session cache?", "alembic complains about multiple heads, what did we do?",
    "What happened to Melanie's son on their road trip?", "What did James lose progress on?",
    "How do I run the tests?", "Which linter does this repo use?", "what happened to the build?",
])
def test_questions_about_one_thing_are_not_overviews(question):
    assert not is_overview(question)


def test_an_overview_topic_is_what_remains_besides_the_overview_words():
    assert overview_topic("what have we done on billing this month?") == ["billing"]
    assert overview_topic("Catch me up on the project") == []
    assert overview_topic("give me a quick overview") == []

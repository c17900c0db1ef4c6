"""Which memory survives a merge, and which near duplicates go into it (engine/maintain.plan_merges)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from cems_cli.engine.maintain import MaintenanceReport, MergeGroup, mergeable, plan_merges
from cems_cli.store.lifecycle import Candidate, kept_apart, project_of

NOW = datetime(2026, 11, 1, tzinfo=UTC)


def memory(memory_id: str, *, pinned: bool = False, priority: float = 1.0, age_days: float = 10,
           accessed_days_ago: float | None = None, source: str | None = None,
           source_ref: str | None = None, category: str = "general",
           merged_from: list | None = None) -> Candidate:
    return Candidate(
        id=memory_id, content="Run the unit tests before pushing.",
        category=category, pinned=pinned, priority=priority, access_count=0,
        last_accessed=None if accessed_days_ago is None else NOW - timedelta(days=accessed_days_ago),
        last_recalled=None, created_at=NOW - timedelta(days=age_days), expires_at=None, title=None, tags=[],
        source=source, source_ref=source_ref, merged_from=merged_from or [], chunks=1,
    )


def plan(memories: list[Candidate], pairs: list[tuple[str, str]]) -> list[tuple[str, list[str]]]:
    found = {m.id: m for m in memories}
    return [(kept.id, [m.id for m in merged]) for kept, merged in plan_merges(found, pairs)]


def test_pinned_survives_before_priority_and_priority_before_recency():
    assert plan([memory("a", priority=2.0), memory("b", pinned=True)], [("a", "b")]) == [("b", ["a"])]
    assert plan([memory("a", priority=1.2, age_days=30), memory("b", age_days=1)], [("a", "b")]) == [
        ("a", ["b"])
    ]


@pytest.mark.parametrize("captured", ["session", "observer", "tool"])
def test_the_users_own_text_survives_a_captured_copy(captured):
    # The captured copy is used more, more recent and of higher priority: the user's wording still stays.
    mine = memory("a", source="manual", age_days=300)
    copy = memory("b", source=captured, priority=2.0, age_days=1, accessed_days_ago=0.1)
    assert plan([mine, copy], [("a", "b")]) == [("a", ["b"])]
    # No source at all (an import of old data, say) is not known to be captured.
    assert plan([memory("a", age_days=300), copy], [("a", "b")]) == [("a", ["b"])]
    # Pinned still comes first, and between two captured copies priority decides as before.
    assert plan([mine, memory("b", source=captured, pinned=True)], [("a", "b")]) == [("b", ["a"])]
    other = memory("c", source=captured, priority=1.5, age_days=300)
    assert plan([other, copy], [("b", "c")]) == [("b", ["c"])]


def test_the_project_is_the_source_ref_up_to_its_next_colon():
    assert project_of("project:acme/api") == "project:acme/api"
    assert project_of("project:acme/api:session:5e1f:L12") == "project:acme/api"
    assert project_of("project:acme/api:src/app.py") == "project:acme/api"
    assert project_of("project:acme/api-v2") == "project:acme/api-v2"
    assert project_of(None) == project_of("") == project_of("https://example.com/a:b") == ""


def test_only_memories_of_one_category_and_project_are_mergeable():
    api = memory("a", source_ref="project:acme/api")
    assert mergeable(api, memory("b", source_ref="project:acme/api:session:5e1f:L12"))
    assert not mergeable(api, memory("b", source_ref="project:acme/web:session:5e1f:L12"))
    assert not mergeable(api, memory("b", source_ref="project:acme/api-v2"))
    assert not mergeable(api, memory("b"))
    assert mergeable(memory("a"), memory("b", source_ref="https://example.com/notes"))
    assert not mergeable(api, memory("b", source_ref="project:acme/api", category="decisions"))


def test_recently_accessed_counts_like_recently_created():
    old_but_used = memory("a", age_days=300, accessed_days_ago=0.5)
    assert plan([old_but_used, memory("b", age_days=1)], [("a", "b")]) == [("a", ["b"])]
    assert plan([memory("a", age_days=300), memory("b", age_days=1)], [("a", "b")]) == [("b", ["a"])]


def test_two_pinned_memories_are_never_merged():
    assert plan([memory("a", pinned=True), memory("b", pinned=True)], [("a", "b")]) == []


def test_similarity_is_not_taken_as_transitive():
    # a~b and b~c, but a and c are not alike: the best of the three takes only its own near duplicates.
    memories = [memory("a", priority=1.5), memory("b"), memory("c", age_days=20)]
    assert plan(memories, [("a", "b"), ("b", "c")]) == [("a", ["b"])]
    # A best memory alike to both takes both.
    memories = [memory("a"), memory("b", priority=1.5), memory("c", age_days=20)]
    assert plan(memories, [("a", "b"), ("b", "c")]) == [("b", ["a", "c"])]


def test_pairs_with_a_memory_no_longer_mergeable_are_ignored():
    assert plan([memory("a")], [("a", "gone")]) == []


def test_report_json_has_exactly_the_documented_keys():
    groups = [MergeGroup("k", ["m1", "m2"], "kept text", ["first text", "second text"])]
    report = MaintenanceReport(dry_run=True, consolidated=groups, expired=3, pruned=4)
    assert report.to_json() == {
        "dry_run": True,
        "consolidated": [{"kept": "k", "merged": ["m1", "m2"], "kept_text": "kept text",
                          "merged_texts": ["first text", "second text"]}],
        "expired": 3, "pruned": 4,
    }
    assert report.merged == 2


def test_a_pair_restore_separated_is_kept_apart_also_after_later_merges():
    # m was merged into k and restored: k's entry says so, m names k.
    k = memory("k", merged_from=[{"id": "m", "restored": True}])
    m = memory("m", merged_from=[{"kept_apart_from": "k"}])
    assert kept_apart(k, m) and kept_apart(m, k)
    # k pinned (left as it was): m's mark alone keeps them apart.
    assert kept_apart(memory("k", pinned=True), m)
    # k merged into j since: j carries k's history, and m names k.
    j = memory("j", merged_from=[{"id": "k"}, {"id": "x"}])
    assert kept_apart(j, m) and kept_apart(m, j)
    # A memory that absorbed m (and so its mark) stays apart from k too.
    assert kept_apart(memory("n", merged_from=[{"id": "m"}, {"kept_apart_from": "k"}]), k)
    assert not kept_apart(memory("a"), memory("b", merged_from=[{"id": "c"}]))
    assert not kept_apart(memory("a"), m)

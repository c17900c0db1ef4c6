"""Which memory survives a merge, and which near duplicates go into it (cems_cli/maintain.plan_merges)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from cems_cli.maintain import MaintenanceReport, MergeGroup, plan_merges
from cems_cli.store.lifecycle import Candidate

NOW = datetime(2026, 11, 1, tzinfo=UTC)


def memory(memory_id: str, *, pinned: bool = False, priority: float = 1.0, age_days: float = 10,
           accessed_days_ago: float | None = None) -> Candidate:
    return Candidate(
        id=memory_id, pinned=pinned, priority=priority, access_count=0,
        last_accessed=None if accessed_days_ago is None else NOW - timedelta(days=accessed_days_ago),
        created_at=NOW - timedelta(days=age_days), expires_at=None, title=None, tags=[], source=None,
        source_ref=None, merged_from=[], chunks=1,
    )


def plan(memories: list[Candidate], pairs: list[tuple[str, str]]) -> list[tuple[str, list[str]]]:
    found = {m.id: m for m in memories}
    return [(kept.id, [m.id for m in merged]) for kept, merged in plan_merges(found, pairs)]


def test_pinned_survives_before_priority_and_priority_before_recency():
    assert plan([memory("a", priority=2.0), memory("b", pinned=True)], [("a", "b")]) == [("b", ["a"])]
    assert plan([memory("a", priority=1.2, age_days=30), memory("b", age_days=1)], [("a", "b")]) == [
        ("a", ["b"])
    ]


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
    groups = [MergeGroup("k", ["m1", "m2"])]
    report = MaintenanceReport(dry_run=True, consolidated=groups, expired=3, pruned=4)
    assert report.to_json() == {
        "dry_run": True, "consolidated": [{"kept": "k", "merged": ["m1", "m2"]}], "expired": 3, "pruned": 4,
    }
    assert report.merged == 2

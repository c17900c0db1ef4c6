"""The compact index's shapes: titles, dates, token costs, and what `get` answers for one memory."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

from cems_cli import progressive
from cems_cli.progressive import (
    TITLE_CHARS,
    IndexEntry,
    Timeline,
    compact_date,
    entry_of_result,
    full_entry,
    short_title,
)
from cems_cli.results import SearchResult
from cems_cli.store.records import MemoryRecord

WHEN = datetime(2026, 11, 20, 10, 12, 40, tzinfo=timezone(timedelta(hours=1)))


def test_a_title_is_one_short_line():
    assert short_title("  Deploys\n go  through staging ", "ignored") == "Deploys go through staging"
    assert short_title(None, "line one\nline two") == "line one line two"
    long = short_title("", "word " * 100)
    assert len(long) == TITLE_CHARS and long.endswith("…") and "\n" not in long


def test_dates_are_utc_to_the_minute():
    assert compact_date(WHEN) == "2026-11-20T09:12Z"


def test_a_search_entry_costs_what_its_full_text_costs(monkeypatch):
    # The counter itself (cl100k_base, loaded from the data folder) is checked over MCP, with a store.
    monkeypatch.setattr(progressive, "token_cost", lambda text: len(text) // 4)
    content = "We use pnpm in this repo, never npm or yarn. " * 20
    result = SearchResult(id="1a2b", score=0.5, category="preferences", content=content,
                          snippet="never npm or yarn", title=None, tags=[], scope="personal", source_ref=None,
                          pinned=False, created_at=WHEN, confidence=0.7134)
    entry = entry_of_result(result)
    assert entry == IndexEntry("1a2b", "never npm or yarn", "2026-11-20T09:12Z", "preferences",
                               len(content) // 4, confidence=0.7134)
    assert entry.to_json() == {"id": "1a2b", "title": "never npm or yarn", "date": "2026-11-20T09:12Z",
                               "category": "preferences", "tokens": len(content) // 4, "confidence": 0.71}


def test_get_gives_the_text_and_its_citation_without_bookkeeping():
    record = MemoryRecord(
        id="1a2b", content="Fixed with alembic stamp head.", content_hash="h", user_id="u", team_id=None,
        scope="personal", category="learnings", title=None, tags=[], source="manual",
        source_ref="project:acme/api", pinned=False, pin_reason=None, pin_category=None, priority=1.0,
        access_count=0, last_accessed=None, expires_at=None, archived=False, created_at=WHEN.astimezone(UTC),
        updated_at=WHEN,
    )
    assert full_entry(record) == {"id": "1a2b", "category": "learnings", "date": "2026-11-20T09:12Z",
                                  "content": "Fixed with alembic stamp head.",
                                  "citation": "written by hand (project acme/api)"}


def test_a_timeline_leaves_out_what_it_does_not_know():
    entry = IndexEntry("1a2b", "t", "2026-11-20T09:12Z", "context", 3, anchor=True)
    assert Timeline("all", [entry], anchor="1a2b").to_json() == {
        "within": "all", "anchor": "1a2b", "before": 0, "after": 0, "count": 1,
        "memories": [{"id": "1a2b", "title": "t", "date": "2026-11-20T09:12Z", "category": "context",
                      "tokens": 3, "anchor": True}],
    }

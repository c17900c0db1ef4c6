"""Progressive recall: find a fact without reading every candidate in full.

A search answers with a compact index (id, title, date, category, and what the full text costs in tokens);
a timeline lists what was stored around a memory or a session, in the same compact form; `get` returns
the full texts of the ids chosen. An agent reads titles first and pays for the texts it needs, instead of
every result's text up front (bench/progressive_recall.py measures the difference).

These are the shapes, one definition for every front end (the MCP tools, the CLI, the web viewer); the
reading is engine/lookup.py's, reached through `cems.Memory` (`search_index`, `timeline`, `get_many`).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cems_cli.results import SearchResult
    from cems_cli.store.records import MemoryRecord

# An index line's title: the memory's own title, else the start of its text (a search's best-matching
# passage), cut here. Long enough to tell memories apart, short enough that ten cost ~250 tokens.
TITLE_CHARS = 80
TIMELINE_WINDOW_MAX = 50  # before/after: a page of context, not the store
SESSION_MEMORIES_MAX = 50  # a session's own memories listed at most (the count says how many it has)
GET_IDS_MAX = 20


def token_cost(text: str) -> int:
    """What a text costs in an agent's context: the tokens the retrieval assembly counts (cl100k_base)."""
    from cems_cli.text.tokens import count_tokens

    return count_tokens(text)


def short_title(title: str | None, text: str) -> str:
    """One line naming a memory: its title, else the start of its text, whitespace folded, cut at
    TITLE_CHARS."""
    line = " ".join((title or "").split()) or " ".join(text.split())
    return line if len(line) <= TITLE_CHARS else line[: TITLE_CHARS - 1].rstrip() + "…"


def compact_date(moment: datetime) -> str:
    """UTC to the minute ("2026-11-23T09:30Z"): enough to order and place a memory, a few tokens."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%MZ")


@dataclass(frozen=True)
class IndexEntry:
    """One memory as an index line."""

    id: str
    title: str
    date: str
    category: str
    tokens: int  # what `get` of this id costs for its text
    confidence: float | None = None  # a search's: how likely it answers (0..1)
    anchor: bool = False  # a timeline's: the memory (or the session's memories) it is drawn around

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"id": self.id, "title": self.title, "date": self.date,
                                "category": self.category, "tokens": self.tokens}
        if self.confidence is not None:
            data["confidence"] = round(self.confidence, 2)
        if self.anchor:
            data["anchor"] = True
        return data


def entry_of_result(result: SearchResult) -> IndexEntry:
    # Without a title the best-matching passage says more about why it was found than the text's start.
    return IndexEntry(result.id, short_title(result.title, result.snippet or result.content),
                      compact_date(result.created_at), result.category, token_cost(result.content),
                      confidence=result.confidence)


def entry_of_record(record: MemoryRecord, *, anchor: bool = False) -> IndexEntry:
    return IndexEntry(record.id, short_title(record.title, record.content), compact_date(record.created_at),
                      record.category, token_cost(record.content), anchor=anchor)


# --- timeline ---------------------------------------------------------------------------------------------


class Within(StrEnum):
    SESSION = "session"
    PROJECT = "project"
    ALL = "all"


SESSION_TAG_PREFIX = "session:"


def session_of(record: MemoryRecord) -> str | None:
    """The session id a memory was captured in (its `session:<id>` tag), if any."""
    tag = next((t for t in record.tags if t.startswith(SESSION_TAG_PREFIX)), None)
    return tag[len(SESSION_TAG_PREFIX) :] if tag else None


@dataclass(frozen=True)
class Timeline:
    """What was stored around a memory or a session, oldest first; the anchor's entries are marked."""

    within: str  # session, project or all: which memories were walked
    entries: list[IndexEntry]
    anchor: str | None = None  # the memory id it is drawn around
    session: str | None = None  # the session (the anchor's, or the one asked for)
    project: str | None = None
    session_total: int | None = None  # a session asked for: how many memories it has (only the first
    # SESSION_MEMORIES_MAX are listed)
    before: int = 0  # how many entries precede the anchor's
    after: int = 0

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"within": self.within}
        for key in ("anchor", "session", "project", "session_total"):
            value = getattr(self, key)
            if value is not None:
                data[key] = value
        data.update(before=self.before, after=self.after, count=len(self.entries),
                    memories=[e.to_json() for e in self.entries])
        return data


# --- get --------------------------------------------------------------------------------------------------


@dataclass
class Fetched:
    """One id asked for: its memory, or why there is none (unknown, another user's, forgotten)."""

    asked: str
    record: MemoryRecord | None = None
    error: str | None = None


def full_entry(record: MemoryRecord) -> dict[str, Any]:
    """A memory as `get` gives it: the full text and where it came from, without the bookkeeping a list
    shows (scope, pin, source_ref: the citation says it in words); title and tags only when it has them."""
    from cems_cli.results import citation

    data: dict[str, Any] = {"id": record.id, "category": record.category,
                            "date": compact_date(record.created_at)}
    if record.title:
        data["title"] = record.title
    if record.tags:
        data["tags"] = record.tags
    data.update(content=record.content, citation=citation(record.source, record.source_ref))
    return data

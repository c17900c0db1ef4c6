"""Progressive recall: find a fact without reading every candidate in full.

A search answers with a compact index (id, title, date, category, and what the full text costs in tokens);
a timeline lists what was stored around a memory or a session, in the same compact form; `fetch` returns
the full texts of the ids chosen. An agent reads titles first and pays for the texts it needs, instead of
every result's text up front (bench/progressive_recall.py measures the difference).

One definition for every front end: the MCP tools, the CLI and the web viewer call these through
`cems.Memory` (`search_index`, `timeline`, `get_many`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from cems_cli.errors import UserError

if TYPE_CHECKING:
    from cems_cli.results import SearchResult
    from cems_cli.service import MemoryService
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


def _window(name: str, value: int) -> int:
    if not 0 <= value <= TIMELINE_WINDOW_MAX:
        raise UserError(f"{name} must be between 0 and {TIMELINE_WINDOW_MAX}")
    return value


def timeline(service: MemoryService, memory_id: str | None = None, *, session: str | None = None,
             before: int = 5, after: int = 5, within: str | None = None) -> Timeline:
    """Around a memory (id or prefix): up to `before` memories recorded just before it and `after` just
    after, within its session when it has one, else its project, else everything (`within` chooses).
    Around a session (id or unique prefix): its memories, and the memories of its project recorded before
    and after it (`within="all"`: of every project)."""
    from cems_cli.models import project_of
    from cems_cli.store import timeline as store

    _window("before", before)
    _window("after", after)
    if (memory_id is None) == (session is None):
        raise UserError("give a memory id or a session, not both and not neither")
    chosen = _within(within) if within else None
    conn, identity = service.conn, service.identity
    if memory_id is not None:
        record = service.get(memory_id)
        if record.archived:
            raise UserError(f"memory {record.id} is forgotten (archived)")
        own_session, project = session_of(record), project_of(record.source_ref) or None
        walk = chosen or (Within.SESSION if own_session else Within.PROJECT if project else Within.ALL)
        if walk is Within.SESSION and own_session is None:
            raise UserError(f"memory {record.id} was not captured in a session (use within project or all)")
        if walk is Within.PROJECT and project is None:
            raise UserError(f"memory {record.id} has no project (use within all)")
        scope = store.Within(
            session_tag=SESSION_TAG_PREFIX + own_session if walk is Within.SESSION and own_session else None,
            project=project if walk is Within.PROJECT else None,
        )
        place = store.place_of(conn, record.id)
        earlier = store.neighbours(conn, identity, scope, place, after=False, limit=before)
        later = store.neighbours(conn, identity, scope, place, after=True, limit=after)
        entries = [*map(entry_of_record, earlier), entry_of_record(record, anchor=True),
                   *map(entry_of_record, later)]
        return Timeline(walk.value, entries, anchor=record.id, session=own_session,
                        project=project, before=len(earlier), after=len(later))
    assert session is not None
    tag = _session_tag(service, session)
    own, total = store.in_session(conn, identity, tag, SESSION_MEMORIES_MAX)
    projects = {project_of(r.source_ref) for r in own} - {""}
    walk = chosen or (Within.PROJECT if len(projects) == 1 else Within.ALL)
    if walk is Within.SESSION:
        earlier, later = [], []
    else:
        project = next(iter(projects)) if walk is Within.PROJECT and len(projects) == 1 else None
        if walk is Within.PROJECT and project is None:
            raise UserError(f"session {tag[len(SESSION_TAG_PREFIX):]} has no single project (use within all)")
        scope = store.Within(project=project, leave_out_tag=tag)
        first, last = store.place_of(conn, own[0].id), store.place_of(conn, own[-1].id)
        earlier = store.neighbours(conn, identity, scope, first, after=False, limit=before)
        later = store.neighbours(conn, identity, scope, last, after=True, limit=after)
    entries = [*map(entry_of_record, earlier), *(entry_of_record(r, anchor=True) for r in own),
               *map(entry_of_record, later)]
    return Timeline(walk.value, entries, session=tag[len(SESSION_TAG_PREFIX) :],
                    project=next(iter(projects)) if len(projects) == 1 else None, session_total=total,
                    before=len(earlier), after=len(later))


def _within(value: str) -> Within:
    try:
        return Within(value.strip().lower())
    except ValueError:
        allowed = ", ".join(w.value for w in Within)
        raise UserError(f"unknown within {value!r} (expected one of: {allowed})") from None


def _session_tag(service: MemoryService, session: str) -> str:
    from cems_cli.store.timeline import session_tags

    value = session.strip().removeprefix(SESSION_TAG_PREFIX)
    if len(value) < 4:
        raise UserError("a session id needs at least 4 characters")
    tags = session_tags(service.conn, service.identity, value)
    if not tags:
        raise UserError(f"no session {value!r} among your memories")
    if len(tags) > 1 and SESSION_TAG_PREFIX + value not in tags:
        raise UserError(f"session {value!r} is ambiguous: give more of its id")
    return SESSION_TAG_PREFIX + value if SESSION_TAG_PREFIX + value in tags else tags[0]


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


def get_many(service: MemoryService, ids: Sequence[str]) -> list[Fetched]:
    """Each id (or unique prefix) in order: the live memory you can see, else a one-line error for that id
    alone. Another user's memory is "no memory", exactly like an id that does not exist."""
    from cems_cli.store.memories import get_memory, resolve_ids

    if not ids:
        raise UserError("give at least one memory id")
    if len(ids) > GET_IDS_MAX:
        raise UserError(f"at most {GET_IDS_MAX} ids at once")
    resolved = resolve_ids(service.conn, service.identity, list(ids))
    fetched: list[Fetched] = []
    for asked in ids:
        full = resolved.get(asked)
        record = get_memory(service.conn, service.identity, full) if full else None
        if record is None:
            fetched.append(Fetched(asked, error=f"no memory with id {asked!r}"))
        elif record.archived:
            fetched.append(Fetched(asked, error=f"memory {record.id} is forgotten (archived)"))
        else:
            fetched.append(Fetched(asked, record))
    return fetched

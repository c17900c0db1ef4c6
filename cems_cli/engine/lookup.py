"""Reading memories for progressive recall: what was stored around a memory or a session (`timeline`), and
chosen memories by id, each id answered on its own (`get_many`). The shapes they return, and the compact
index a search gives, are cems_cli/progressive.py's; `cems.Memory` exposes these to every front end."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from cems_cli.errors import UserError
from cems_cli.progressive import (
    GET_IDS_MAX,
    SESSION_MEMORIES_MAX,
    SESSION_TAG_PREFIX,
    TIMELINE_WINDOW_MAX,
    Fetched,
    Timeline,
    Within,
    entry_of_record,
    session_of,
)

if TYPE_CHECKING:
    from cems_cli.engine.service import MemoryService


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
        scope = store.Walk(
            session_tag=SESSION_TAG_PREFIX + own_session if walk is Within.SESSION and own_session else None,
            project=project if walk is Within.PROJECT else None,
        )
        place = store.place_of(conn, record.id, identity)
        earlier = store.neighbours(conn, identity, scope, place, after=False, limit=before)
        later = store.neighbours(conn, identity, scope, place, after=True, limit=after)
        entries = [*map(entry_of_record, earlier), entry_of_record(record, anchor=True),
                   *map(entry_of_record, later)]
        return Timeline(walk.value, entries, anchor=record.id, session=own_session,
                        project=project, before=len(earlier), after=len(later))
    assert session is not None
    tag = _session_tag(service, session)
    own, total, end = store.in_session(conn, identity, tag, SESSION_MEMORIES_MAX)
    if end is None:  # gone between finding its tag and reading it
        raise UserError(f"no session {tag[len(SESSION_TAG_PREFIX):]!r} among your memories")
    projects = {project_of(r.source_ref) for r in own} - {""}
    walk = chosen or (Within.PROJECT if len(projects) == 1 else Within.ALL)
    if walk is Within.SESSION:
        earlier, later = [], []
    else:
        project = next(iter(projects)) if walk is Within.PROJECT and len(projects) == 1 else None
        if walk is Within.PROJECT and project is None:
            raise UserError(f"session {tag[len(SESSION_TAG_PREFIX):]} has no single project (use within all)")
        scope = store.Walk(project=project, leave_out_tag=tag)
        start = store.place_of(conn, own[0].id, identity)
        earlier = store.neighbours(conn, identity, scope, start, after=False, limit=before)
        later = store.neighbours(conn, identity, scope, end, after=True, limit=after)
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

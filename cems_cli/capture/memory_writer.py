"""Observations into memories, for the capture engine (`cems_cli.capture.observer.Observer`): each one
prepared and stored through the service, a counted one (`key`) kept as one memory whose count grows, and
each closed turn folded into its session's record and the session's one context memory.

Every method runs inside the caller's transaction, which also moves the transcript offset or removes the
backlog items: each observation is stored exactly once."""

from __future__ import annotations

import hashlib
import logging
import re
from dataclasses import replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from cems_cli.capture import sessions
from cems_cli.capture.digests import session_tags
from cems_cli.capture.observations import Chunk, Observation, clip
from cems_cli.store import observer as store

if TYPE_CHECKING:
    from cems_cli.capture.observer import RunReport
    from cems_cli.engine.service import MemoryService
    from cems_cli.store.records import NewMemory

log = logging.getLogger("cems.observer")


class MemoryWriter:
    def __init__(self, service: MemoryService, source: str) -> None:
        self.svc = service
        self.user = service.settings.user
        self.source = source  # the trigger: "observer" (the daemon), "session" (the Stop hook's worker)

    def store(self, observation: Observation, report: RunReport) -> None:
        if observation.key:
            self._store_counted(observation, report)
            return
        if observation.roll and observation.item and observation.project:
            self._store_in_roll(observation, report)
            return
        memory = self.prepare(observation)
        if memory is None:
            return
        _id, created = self.svc.store(memory)
        if created:
            report.observations += 1
        else:
            report.duplicates += 1

    def _store_counted(self, observation: Observation, report: RunReport) -> None:
        """One memory per `key` (a command a rule blocked), however often it is seen: a later sighting
        adds its count to the memory's and moves its date (and citation) to the latest sighting. Runs in the
        caller's transaction, which also moves the transcript offset: each sighting is counted once."""
        from cems_cli.store import memories

        tag = "seen:" + hashlib.blake2b(observation.key.encode("utf-8"), digest_size=8).hexdigest()
        existing = memories.find_live_tagged(self.svc.conn, self.svc.identity, tag)
        count = observation.count + (_seen_count(existing.content) if existing else 0)
        at = _timestamp(observation.created_at)
        latest = at if existing is None or at is None or at > existing.created_at else existing.created_at
        text = observation.text
        if count > 1:
            text = f"{text} Tried {count} times, last on {latest:%Y-%m-%d}." if latest else text
        memory = self.prepare(replace(observation, text=text, tags=[*observation.tags, tag]))
        if memory is None:
            return
        if existing is None:
            memory_id, created = self.svc.store(memory)
            report.observations += int(created)
            report.duplicates += int(not created)
            if not created:  # the same text stored before memories were counted: count on from it
                memories.add_tag(self.svc.conn, memory_id, tag, self.svc.identity)
            return
        if latest is not at:  # an older sighting read late (a backlog): the latest one keeps the citation
            memory = replace(memory, tags=existing.tags, source_ref=None, created_at=None)
        if self.svc.replace(existing.id, memory):
            memories.keep_latest_evidence(self.svc.conn, existing.id, memory, self.svc.identity)
        report.duplicates += 1

    def _store_in_roll(self, observation: Observation, report: RunReport) -> None:
        """A command of the project's roll of its kind (capture/pattern_rolls.py)."""
        from cems_cli.capture.pattern_rolls import store_in_roll

        assert observation.project is not None  # store() sends only observations of a project
        memory_id, created = store_in_roll(
            self.svc, project=observation.project, kind=observation.roll, item=observation.item,
            source=self.source, tags=observation.tags, created_at=_timestamp(observation.created_at),
            source_ref=provenance(observation.project, observation.session_id, observation.line),
        )
        if memory_id is not None:
            report.observations += int(created)
            report.duplicates += int(not created)

    def prepare(self, observation: Observation) -> NewMemory | None:
        from cems_cli.errors import UserError

        try:
            return self.svc.prepare(
                observation.text,
                category=observation.category,
                tags=observation.tags,
                title=observation.title,
                project=provenance(observation.project, observation.session_id, observation.line),
                source=self.source,
                created_at=_timestamp(observation.created_at),
            )
        except UserError as error:  # e.g. nothing left after redaction: there is nothing to store
            log.debug("observation skipped: %s", error)
            return None

    def record_sessions(self, chunks: list[Chunk], report: RunReport) -> None:
        """Fold each closed turn into its session's record and keep the session's one context memory up
        to date, inside the caller's transaction (so exactly once, like the offset)."""
        conn = self.svc.conn
        # A session's turns in one batch are folded together and its context memory embedded once: per
        # turn, a catching-up observer re-embedded the same growing record for every turn (14 of 17 s of a
        # 50 MB transcript). Merging only accumulates: the record stored is the one turn by turn ends with.
        by_session: dict[str, list[Chunk]] = {}
        for chunk in chunks:
            if chunk.session_id:
                by_session.setdefault(chunk.session_id, []).append(chunk)
        for session_id, turns in by_session.items():
            record, memory_id = store.lock_session(conn, self.user, session_id)
            if record is None:
                first = turns[0]
                record = sessions.new_record(session_id, first.project, first.branch, first.sidechain)
                record["line"] = first.line
            for chunk in turns:
                record = sessions.merge(record, chunk.session)
            if sessions.worth_remembering(record):
                memory_id = self._store_context(record, memory_id, report)
            store.save_session(conn, self.user, session_id, record, memory_id)

    def _store_context(self, record: dict, memory_id: str | None, report: RunReport) -> str | None:
        text = sessions.render(record)
        observation = Observation(
            text=text,
            category="context",
            tags=session_tags(record["session_id"], record.get("branch") or ""),
            project=record.get("project"),
            title=clip(f"Session {record['session_id'][:8]}: {(record.get('asked') or ['work'])[0]}", 80),
            created_at=record.get("last_at") or None,
            session_id=record["session_id"],
            line=int(record.get("line") or 0),
        )
        memory = self.prepare(observation)
        if memory is None:
            return memory_id
        if memory_id and self.svc.replace(memory_id, memory):
            report.sessions_updated += 1
            return memory_id
        new_id, created = self.svc.store(memory)
        if created:
            report.observations += 1
        else:
            report.duplicates += 1
        return new_id


def _timestamp(value: str | None) -> datetime | None:
    if not value:
        return None
    try:
        stamp = datetime.fromisoformat(value)
    except ValueError:
        return None
    return stamp if stamp.tzinfo else stamp.replace(tzinfo=UTC)


_SEEN = re.compile(r" Tried (\d+) times, last on \d{4}-\d{2}-\d{2}\.$")


def _seen_count(text: str) -> int:
    """How many sightings a counted memory's text says it stands for (one when it does not say)."""
    match = _SEEN.search(text)
    return int(match.group(1)) if match else 1


def provenance(project: str | None, session_id: str, line: int) -> str | None:
    """`source_ref` of a captured memory: the project, then the session and transcript line it came from
    (`project:acme/api:session:3f1c2a9e-…:L42`), so a result can cite where it was learned. Project filters
    and boosts match `project:<id>` followed by ':' (store/memories.project_clause)."""
    if not session_id:
        return project
    where = f"session:{session_id}" + (f":L{line}" if line else "")
    return f"{project}:{where}" if project else where


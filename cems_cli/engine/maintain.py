"""Lifecycle maintenance of one user's memories: expiry, consolidation of near duplicates, pruning.

`cems maintain` runs it on demand; the observer runs it in the background once a day (PeriodicMaintenance).
Each step is one transaction holding the user's maintenance lock, so a second run at the same moment waits
and then finds the work done (no memory merged twice), and a crash leaves each step done or not done.
Pinned memories are never archived, merged away, changed or deleted by any step.

- Expiry: memories past their expires_at are archived (search, list and the profile already hide them),
  and so are captured session `context` memories neither updated, found by a search nor injected by prompt
  recall for CEMS_CONTEXT_TTL_DAYS.
- Consolidation: two live memories of one owner, scope, team, category and project whose embeddings are at
  least SIMILARITY_THRESHOLD alike and that state the same values (same_fact) become one
  (store/lifecycle.merge); the other is archived, pointing at it, and `cems restore` undoes it. The user's
  own text survives a captured copy of it.
- Pruning: memories archived more than CEMS_ARCHIVE_GRACE_DAYS ago are deleted with their chunks.
- Summaries: each project's groups of alike memories and the project itself are summarised again where
  their memories changed (cems_cli/engine/summaries.py; CEMS_SUMMARIES=false leaves them out).
- Scrubbing, after the user purged memories (`cems forget --purge`) or pruning deleted some: a DELETE leaves
  the text in the database files; the tables are rewritten, the WAL that recorded it retired and the query
  cache emptied (store/scrub.scrub, where what remains is listed).
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

import psycopg

from cems_cli.models import CAPTURED_SOURCES
from cems_cli.store import lifecycle
from cems_cli.store import scrub as scrub_store
from cems_cli.store.lifecycle import Candidate

if TYPE_CHECKING:
    from cems_cli.config import Settings
    from cems_cli.engine.summaries import SummaryReport

log = logging.getLogger("cems.maintain")

# The cosine only finds candidates; `same_fact`'s value check decides. Measured with
# bench/consolidation_pairs.py (416 near misses, 104 paraphrases): 0 near misses merged at any threshold,
# paraphrases merged 65 at 0.92, 90 at 0.80 and 92 at 0.70; bench/maintain_notes.py (1,500 distinct notes)
# merges none at 0.80. Below it the candidates grow faster than the merges.
SIMILARITY_THRESHOLD = 0.80
STEPS = ("expire", "consolidate", "prune", "summarize")
# A step that lost a deadlock to a concurrent writer (row locks taken in another order) is simply retried.
_ATTEMPTS = 3

T = TypeVar("T")


class MaintenanceBusy(RuntimeError):
    """Another process is maintaining this user's memories right now (only when not waiting for it)."""


@dataclass
class MergeGroup:
    kept: str
    merged: list[str]
    kept_text: str = ""
    merged_texts: list[str] = field(default_factory=list)

    def to_json(self, texts: bool = True) -> dict[str, Any]:
        found: dict[str, Any] = {"kept": self.kept, "merged": list(self.merged)}
        if texts:
            found.update(kept_text=self.kept_text, merged_texts=list(self.merged_texts))
        return found


@dataclass
class MaintenanceReport:
    dry_run: bool
    consolidated: list[MergeGroup] = field(default_factory=list)
    expired: int = 0
    pruned: int = 0
    scrub: scrub_store.ScrubReport | None = None  # only when deleted text was waiting to be scrubbed
    summaries: SummaryReport | None = None  # None when summaries are off
    indexes: list[str] = field(default_factory=list)  # search indexes an interrupted import left to build

    @property
    def merged(self) -> int:
        return sum(len(group.merged) for group in self.consolidated)

    def to_json(self, texts: bool = True) -> dict[str, Any]:
        """`texts` false: without the memories' texts (the record of the run kept in the database, which
        must not keep a copy of a text `cems forget --purge` deletes)."""
        return {
            "dry_run": self.dry_run,
            "consolidated": [group.to_json(texts) for group in self.consolidated],
            "expired": self.expired,
            "pruned": self.pruned,
            **({"summaries": self.summaries.to_json()} if self.summaries is not None else {}),
            **({"scrubbed": self.scrub.to_json()} if self.scrub is not None else {}),
            **({"indexes_built": self.indexes} if self.indexes else {}),
        }


def survivor_rank(candidate: Candidate) -> tuple[bool, bool, float, Any, Any, str]:
    """Higher survives: pinned, then what a person wrote over what capture wrote (the survivor keeps its
    content: the user's own wording must not give way to a transcript's paraphrase, however often the copy
    was used), then higher priority, then more recently used or recorded (the id only makes the choice the
    same on every run)."""
    return (
        candidate.pinned,
        candidate.source not in CAPTURED_SOURCES,
        candidate.priority,
        candidate.recency,
        candidate.created_at,
        candidate.id,
    )


def same_fact(a: str, b: str, cosine: float, threshold: float = SIMILARITY_THRESHOLD) -> bool:
    """Whether two memories `cosine` alike say the same thing: alike enough, and stating the same values
    (text/values.py). Embeddings put "Staging runs Kubernetes 1.29" and "Production runs Kubernetes 1.27"
    0.95 apart: by cosine alone, consolidation merged 99 of the 416 near misses of
    tests/fixtures/consolidation_pairs.json (one value changed) and the observer ran it daily."""
    from cems_cli.text.values import same_values

    return cosine >= threshold and same_values(a, b)


def mergeable(a: Candidate, b: Candidate) -> bool:
    """Same category and project (the pair search already asks for both; checked again on the rows as
    locked, which a concurrent command may have changed)."""
    return a.category == b.category and a.project == b.project


def plan_merges(
    found: dict[str, Candidate], pairs: Iterable[tuple[str, str]]
) -> list[tuple[Candidate, list[Candidate]]]:
    """Groups (survivor, memories merged into it). Memories are taken best first; each takes its direct
    near duplicates not yet taken, so every merged memory is itself at least the threshold alike to the one
    it is merged into (similarity is not transitive: A~B and B~C does not make A~C). A pinned memory is never
    merged away, so two pinned near duplicates both stay. What a group leaves behind a later run finds."""
    neighbours: dict[str, set[str]] = {}
    for a, b in pairs:
        if a in found and b in found:
            neighbours.setdefault(a, set()).add(b)
            neighbours.setdefault(b, set()).add(a)
    taken: set[str] = set()
    groups: list[tuple[Candidate, list[Candidate]]] = []
    for memory_id in sorted(neighbours, key=lambda i: survivor_rank(found[i]), reverse=True):
        if memory_id in taken:
            continue
        taken.add(memory_id)
        merged = sorted(
            (found[n] for n in neighbours[memory_id] if n not in taken and not found[n].pinned),
            key=survivor_rank,
            reverse=True,
        )
        taken.update(m.id for m in merged)
        if merged:
            groups.append((found[memory_id], merged))
    return groups


def consolidate(
    conn: psycopg.Connection, user: str, *, dry_run: bool, threshold: float = SIMILARITY_THRESHOLD
) -> list[MergeGroup]:
    """Find near duplicates and (unless dry) merge them, inside the caller's transaction."""
    scored = lifecycle.near_duplicate_pairs(conn, user, threshold)
    if not scored:
        return []
    found = lifecycle.candidates(conn, user, [i for a, b, _ in scored for i in (a, b)], lock=not dry_run)
    # Alike is not the same: two memories one value apart (a version, a port, an environment, a person, a
    # negation) are two facts, and merging them loses one.
    pairs = [
        (a, b) for a, b, cosine in scored
        if a in found and b in found and mergeable(found[a], found[b])
        and not lifecycle.kept_apart(found[a], found[b])
        and same_fact(found[a].content, found[b].content, cosine, threshold)
    ]
    # The pairs come from first chunks; memories of several chunks must match part for part.
    long = [(a, b) for a, b in pairs if found[a].chunks > 1 or found[b].chunks > 1]
    if long:
        aligned = lifecycle.aligned_similarity(conn, long)
        rejected = {
            (a, b)
            for a, b in long
            if found[a].chunks != found[b].chunks or aligned.get((a, b), 0.0) < threshold
        }
        pairs = [pair for pair in pairs if pair not in rejected]
    groups = plan_merges(found, pairs)
    if not dry_run:
        for kept, merged in groups:
            lifecycle.merge(conn, kept, merged)
    return [
        MergeGroup(kept.id, [m.id for m in merged], kept.content, [m.content for m in merged])
        for kept, merged in groups
    ]


def run_maintenance(
    conn: psycopg.Connection,
    settings: Settings,
    *,
    dry_run: bool = False,
    wait: bool = True,
    progress: Callable[[str], None] | None = None,
) -> MaintenanceReport:
    """All three steps for `settings.user`, each in its own transaction. `wait` false: MaintenanceBusy
    instead of waiting when another process holds the lock. `progress(step)` before each step."""
    user = settings.user
    report = MaintenanceReport(dry_run=dry_run)

    def step(name: str, work: Callable[[], T]) -> T:
        if progress:
            progress(name)
        for attempt in range(1, _ATTEMPTS + 1):
            try:
                with conn.transaction():
                    # A dry run changes nothing, so it neither waits for nor blocks a real one.
                    if not dry_run and not lifecycle.take_lock(conn, user, wait=wait):
                        raise MaintenanceBusy(f"maintenance of {user}'s memories is already running")
                    return work()
            except (psycopg.errors.DeadlockDetected, psycopg.errors.SerializationFailure):
                if attempt == _ATTEMPTS:
                    raise
                log.info("maintenance: %s lost a deadlock, retrying", name)
        raise AssertionError("unreachable")

    if not dry_run:
        report.indexes = _build_pending_indexes(conn, settings, progress)
    expired = step(
        "expire", lambda: lifecycle.expire(conn, user, settings.context_ttl_days, dry_run=dry_run)
    )
    report.expired = len(expired)
    report.consolidated = step("consolidate", lambda: consolidate(conn, user, dry_run=dry_run))
    report.pruned = step(
        "prune", lambda: lifecycle.prune(conn, user, settings.archive_grace_days, dry_run=dry_run)
    )
    if settings.summaries:
        if progress:
            progress("summarize")
        report.summaries = summarize(conn, settings, dry_run=dry_run, wait=wait)
    if not dry_run and scrub_store.scrub_pending(conn, user):
        report.scrub = scrub(conn, settings)
    if not dry_run:
        if any(category == "rules" for _id, category in expired):
            # The PreToolUse hook reads only the snapshot: an expired rule must stop applying now.
            from cems_cli.rules.refresh import write_rules_snapshot
            from cems_cli.store.memories import Identity

            write_rules_snapshot(conn, Identity(settings.user, settings.team), settings.home)
        lifecycle.record_run(conn, user, report.to_json(texts=False))
    return report


def _build_pending_indexes(conn: psycopg.Connection, settings: Settings,
                           progress: Callable[[str], None] | None) -> list[str]:
    """First, the search indexes an interrupted large import dropped (searches and the merge probe need
    them). Only the store's owner can build them: on a shared server a member's maintenance leaves them."""
    from cems_cli.engine.bulk import build_memory_mb
    from cems_cli.store import bulk

    if not bulk.pending_search_indexes(conn):
        return []
    if progress:
        progress("indexes")
    try:
        return bulk.build_pending_indexes(conn, memory_mb=build_memory_mb(conn, settings))
    except psycopg.errors.InsufficientPrivilege:
        return []


def summarize(conn: psycopg.Connection, settings: Settings, *, dry_run: bool, wait: bool) -> SummaryReport:
    """The summaries step: made outside any transaction (an LLM may take its time), written in one that
    holds the maintenance lock."""
    from cems_cli.engine.summaries import build_summaries

    @contextlib.contextmanager
    def locked() -> Iterator[None]:
        with conn.transaction():
            if not lifecycle.take_lock(conn, settings.user, wait=wait):
                raise MaintenanceBusy(f"maintenance of {settings.user}'s memories is already running")
            yield

    for attempt in range(1, _ATTEMPTS + 1):
        try:
            return build_summaries(conn, settings, dry_run=dry_run, transaction=locked)
        except (psycopg.errors.DeadlockDetected, psycopg.errors.SerializationFailure):
            if attempt == _ATTEMPTS:
                raise
            log.info("maintenance: summarize lost a deadlock, retrying")
    raise AssertionError("unreachable")


def scrub(conn: psycopg.Connection, settings: Settings) -> scrub_store.ScrubReport:
    """Erase deleted memories' text from the database files and empty the query cache."""
    from cems_cli.embedding.cache import clear_query_cache

    report = scrub_store.scrub(conn, embedded=settings.database_url is None)
    if report.tables and not clear_query_cache(settings.home / "cache" / "queries.db"):
        report.note = "; ".join(filter(None, [report.note, "the query cache could not be emptied"]))
    log.info("maintenance: scrubbed deleted text (%s)", report.to_json())
    return report


class PeriodicMaintenance:
    """Maintenance for the observing user, at most once per `interval` seconds since the last run by any
    process (kept in the database), in a thread of its own with its own connection: the watch loop only
    calls poll(), which returns at once."""

    RETRY_SECONDS = 300.0  # after a failure, or when another process was maintaining
    # A starting observer first catches up with the transcripts written while it was not running; maintenance
    # (whose first look is at when the last run was) waits this long, or the interval if shorter.
    STARTUP_DELAY_SECONDS = 300.0

    def __init__(
        self, settings: Settings, interval: float, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.settings = settings
        self.interval = interval
        self._clock = clock
        self._next = clock() + min(self.STARTUP_DELAY_SECONDS, interval)
        self._thread: threading.Thread | None = None
        self.runs = 0  # completed maintenance runs (for status and tests)

    def poll(self) -> None:
        if self.interval <= 0 or self._clock() < self._next:
            return
        if self._thread is not None and self._thread.is_alive():
            return
        self._thread = threading.Thread(target=self._run, name="cems-maintain", daemon=True)
        self._thread.start()

    def close(self, timeout: float = 10.0) -> None:
        """Wait a little for a run in progress; each step is one transaction, so cutting it short loses
        nothing (the thread is a daemon thread and dies with the process)."""
        if self._thread is not None:
            self._thread.join(timeout)

    def _run(self) -> None:
        from cems_cli.store.db import connect

        retry = min(self.RETRY_SECONDS, self.interval)
        try:
            conn = connect(self.settings)
            try:
                since = lifecycle.seconds_since_last_run(conn, self.settings.user)
                if since is not None and since < self.interval:
                    self._next = self._clock() + (self.interval - since)
                    return
                report = run_maintenance(conn, self.settings, wait=False)
            finally:
                conn.close()
        except MaintenanceBusy:
            self._next = self._clock() + retry
            return
        except Exception as error:  # noqa: BLE001 - the observer must keep observing whatever happens here
            log.warning("maintenance failed: %s; retrying in %gs", error, retry)
            self._next = self._clock() + retry
            return
        self.runs += 1
        self._next = self._clock() + self.interval
        log.info(
            "maintenance: merged %d memories into %d, expired %d, pruned %d",
            report.merged,
            len(report.consolidated),
            report.expired,
            report.pruned,
        )

"""The observer engine: find transcripts, read what was appended, and commit it exactly once.

Exactly once: for each file, the bytes read since the committed offset are folded into chunks; the new
offset, the open chunk (pending state) and either the memories made from the closed chunks (no LLM) or the
closed chunks themselves (the LLM backlog) are written in ONE transaction. A crash before the commit
leaves the old offset and the old pending state, so the same bytes are read again and fold to the same
chunks; a crash after it leaves nothing to redo. LLM extraction works on the backlog the same way: the
answer's memories are stored and the backlog items deleted in one transaction, and a failed or timed-out
call leaves the items in place for a later attempt (with exponential backoff).
"""

from __future__ import annotations

import functools
import logging
import os
import stat
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO, TypeVar

import psycopg

from cems_cli.capture.chunks import ChunkBuilder
from cems_cli.capture.extraction import EXTRACTION_SYSTEM, extraction_prompt, parse_extraction
from cems_cli.capture.memory_writer import MemoryWriter
from cems_cli.capture.observations import SOURCE, Chunk, Limits, Observation
from cems_cli.capture.observer_settings import ObserverSettings
from cems_cli.capture.transcript import (
    LineReader,
    Malformed,
    fingerprint,
    opened_path,
    parse_line,
    regular_file,
)
from cems_cli.store import observer as store
from cems_cli.store.observer import FileRow

if TYPE_CHECKING:
    from cems_cli.config import Settings
    from cems_cli.engine.service import MemoryService
    from cems_cli.llm import JsonChat

log = logging.getLogger("cems.observer")
_T = TypeVar("_T")

FINGERPRINT_BYTES = 4096


class _Conflict(Exception):
    """Another observer process moved this file (or took this backlog) first; leave it to them."""


@dataclass
class RunReport:
    files: int = 0  # transcripts looked at
    files_read: int = 0  # of which had new bytes
    bytes_read: int = 0
    lines: int = 0
    malformed: int = 0  # not JSON objects, or longer than the line cap
    chunks: int = 0
    observations: int = 0  # memories created
    duplicates: int = 0  # observations already stored (same text)
    backlog: int = 0  # chunks queued for LLM extraction
    extracted: int = 0  # LLM batches stored
    llm_failures: int = 0
    resets: int = 0  # files truncated or replaced, read again from the start
    sessions_updated: int = 0  # session context memories rewritten with a later turn
    conflicts: int = 0
    seconds: float = 0.0  # wall time of the pass(es)
    errors: list[str] = field(default_factory=list)

    def add(self, other: RunReport) -> None:
        for key, value in asdict(other).items():
            setattr(self, key, getattr(self, key) + value)

    def to_json(self) -> dict[str, object]:
        return asdict(self)


def llm_for(observer_settings: ObserverSettings, settings: Settings) -> JsonChat | None:
    """The extraction client (llm.background_client: the configured endpoint, or the user's Claude Code CLI),
    or None for deterministic digests (no LLM configured, or CEMS_OBSERVER_LLM=false)."""
    if not observer_settings.observer_llm:
        return None
    from cems_cli.llm import background_client

    return background_client(
        settings, observer_settings.observer_llm_model, observer_settings.observer_llm_timeout
    )


def capture_engine(
    service: MemoryService,
    observer_settings: ObserverSettings | None = None,
    *,
    source: str = SOURCE,
    stop: threading.Event | None = None,
) -> Observer:
    """The capture engine as both triggers build it, the Stop hook's worker (`source="session"`) and the
    observer daemon: the observer's settings (CEMS_OBSERVER_*, read now unless given) and the extraction
    client they ask for, configured with the settings in effect (stored ones included)."""
    if observer_settings is None:
        from cems_cli.capture.observer_settings import load_observer_settings

        observer_settings = load_observer_settings()
    llm = llm_for(observer_settings, service.live_settings())
    return Observer(service, observer_settings, llm, stop=stop, source=source)


class Observer:
    def __init__(
        self,
        service: MemoryService,
        settings: ObserverSettings,
        llm: JsonChat | None = None,
        *,
        stop: threading.Event | None = None,
        wall_clock: Callable[[], float] = time.time,
        source: str = SOURCE,
    ) -> None:
        self.svc = service
        self.source = source  # the trigger: "observer" (the daemon), "session" (the Stop hook's worker)
        self.writer = MemoryWriter(service, source)
        self.settings = settings
        self.llm = llm
        self.user = service.settings.user
        self.roots = settings.roots
        self.stop = stop or threading.Event()
        # progress(files done, files in the pass, bytes read so far): how a pass over a backlog reports
        # its rate (observer_daemon.CatchUp).
        self.progress: Callable[[int, int, int], None] | None = None
        self._now = wall_clock
        self._limits = Limits(settings.observer_chunk_max_chars, settings.observer_chunk_max_tools)
        self._ignore_under = service.settings.home
        self._llm_failures = 0
        self._llm_retry_at = 0.0  # time.monotonic() before which no extraction is tried
        self._ended: set[str] = set()  # paths whose turn the agent ended (sync(..., turn_ended=True))

    # ------------------------------------------------------------------------------------ discovery

    def discover(self) -> list[Path]:
        """Every transcript under the roots: regular `*.jsonl` files, found without following a symbolic
        link (missing roots are skipped: they may appear later). A link to a file or a folder elsewhere
        would make the observer read, and store as memories, any file the user can read."""
        found: set[Path] = set()
        for root in self.roots:
            if not root.is_dir():
                continue
            for folder, _, names in os.walk(root):  # followlinks=False: a linked folder is not entered
                paths = (Path(folder, name) for name in names if name.endswith(".jsonl"))
                found.update(path for path in paths if regular_file(path))
        return sorted(found)

    def _root_of(self, path: Path) -> Path | None:
        for root in self.roots:
            if path == root or root in path.parents:
                return root
        return None

    def _watched(self, path: Path | str, real: str | None = None) -> bool:
        """Under a root, also once every link in the path is resolved (`real`, else resolved here): a linked
        folder inside a root may lead anywhere. The root itself may be a link (a dotfiles setup): it is
        resolved too."""
        root = self._root_of(Path(path))
        if root is None:
            return False
        return Path(real or os.path.realpath(path)).is_relative_to(os.path.realpath(root))

    # ------------------------------------------------------------------------------------ one pass

    def sync(self, paths: Iterable[Path | str] | None = None, *, turn_ended: bool = False) -> RunReport:
        """Read what is new in `paths` (every transcript when None), finalize idle sessions, extract.

        `turn_ended`: the agent said its turn is over (the Stop hook): the open turn of each of `paths` is
        closed now, and extracted now, instead of waiting for the next prompt or the idle time."""
        started = time.monotonic()
        report = self._sync(paths, turn_ended)
        report.seconds = time.monotonic() - started
        return report

    def _sync(self, paths: Iterable[Path | str] | None, turn_ended: bool) -> RunReport:
        report = RunReport()
        self._ended = set() if paths is None or not turn_ended else {str(p) for p in paths}
        full = paths is None
        # A path the agent itself named (the Stop hook's transcript_path) is read wherever it lives; a
        # caller's other paths (file-change events) only under the watched roots.
        targets = (
            self.discover()
            if paths is None
            else sorted(
                {
                    Path(p)
                    for p in paths
                    if str(p).endswith(".jsonl") and (turn_ended or self._watched(p))
                }
            )
        )
        wanted = None if full else [str(p) for p in targets]
        rows = self._guard(
            report, "loading read positions", lambda: store.load_files(self.svc.conn, self.user, wanted)
        )
        if rows is None:
            return report
        for done, path in enumerate(targets, start=1):
            if self.stop.is_set():
                return report
            row = rows.pop(str(path), None)
            self._guard(report, str(path), functools.partial(self._process, path, row, report))
            if self.progress is not None:
                self.progress(done, len(targets), report.bytes_read)
        if full:
            for row in rows.values():  # known files no longer found under the roots
                path = Path(row.path)
                root = self._root_of(path)
                if root is not None and root.is_dir() and not path.exists() and not self.stop.is_set():
                    self._guard(report, row.path, functools.partial(self._forget, row, report))
        for ended in sorted(self._ended):
            self._guard(report, ended, functools.partial(self._end_turn, ended, report))
        self._guard(report, "finalizing idle sessions", lambda: self._finalize_idle(report))
        if self.llm is not None:
            self._guard(report, "LLM extraction", lambda: self._extract(report))
        self._guard(report, "recording the run", lambda: store.note_run(self.svc.conn, self.user))
        return report

    def _guard(self, report: RunReport, what: str, action: Callable[[], _T]) -> _T | None:
        """Run one step; a failure is recorded (status shows it) and the pass goes on with the next file."""
        try:
            return action()
        except _Conflict:
            report.conflicts += 1
            log.debug("%s: another observer got there first", what)
        except psycopg.OperationalError as error:
            self._record_error(report, f"{what}: database unavailable: {str(error).strip().splitlines()[0]}")
            self.svc.close()  # reconnect on the next step
        except Exception as error:  # noqa: BLE001 - one bad file must not stop the observer
            log.exception("observer: %s failed", what)
            self._record_error(report, f"{what}: {type(error).__name__}: {error}")
        return None

    def _record_error(self, report: RunReport, message: str) -> None:
        report.errors.append(message)
        try:
            store.note_error(self.svc.conn, self.user, message[:2000])
        except Exception:  # noqa: BLE001 - the database may be what failed
            log.warning("observer: %s", message)

    # ------------------------------------------------------------------------------------ a file

    def _process(self, path: Path, row: FileRow | None, report: RunReport) -> None:
        try:
            handle = self._open(path)
        except FileNotFoundError:
            if row is not None and self._root_of(path) is not None:
                self._forget(row, report)
            return
        if handle is None:
            return
        with handle:
            st = os.fstat(handle.fileno())
            report.files += 1
            if row is not None and (row.size_seen, row.mtime, row.device, row.inode) == (
                st.st_size,
                st.st_mtime,
                st.st_dev,
                st.st_ino,
            ):
                return  # nothing changed since we last looked
            row = self._check_identity(path, row, handle, st, report)
            self._read(path, row, handle, st, report)

    def _open(self, path: Path) -> BinaryIO | None:
        """The transcript opened for reading, or None (logged) when it is not a regular file inside a root:
        checked on the open file, so a path swapped for a link between discovery and here is caught too.
        O_NONBLOCK: opening a FIFO named *.jsonl must not hang the observer (no effect on a regular file).
        A path the agent itself named at the end of its turn (the Stop hook) may live outside the roots."""
        flags = os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0)
        try:
            fd = os.open(path, flags)
        except FileNotFoundError:
            raise
        except OSError as error:  # ELOOP: the path is a symbolic link
            log.info("%s: not read (%s)", path, error.strerror or error)
            return None
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                log.info("%s: not read (not a regular file)", path)
            elif str(path) not in self._ended and not self._watched(path, opened_path(fd, path)):
                log.info("%s: not read (it leads outside the watched folders)", path)
            else:
                handle = os.fdopen(fd, "rb")
                fd = -1
                return handle
        finally:
            if fd >= 0:
                os.close(fd)
        return None

    def _check_identity(
        self, path: Path, row: FileRow | None, handle: BinaryIO, st: os.stat_result, report: RunReport
    ) -> FileRow:
        """The row to continue from: a fresh one for a new file; offset 0 for one truncated or replaced."""
        if row is None:
            return FileRow(path=str(path), device=st.st_dev, inode=st.st_ino)
        if st.st_size < row.offset:
            reason = "truncated"
        elif row.fingerprint_len and fingerprint(handle, row.fingerprint_len) != row.fingerprint:
            reason = "replaced"
        else:
            # Same content, maybe under a new inode (copied back, synced): carry on from the offset.
            return replace(row, device=st.st_dev, inode=st.st_ino)
        log.info("%s was %s: reading it again from the start", path, reason)
        builder = ChunkBuilder(self._limits, row.pending, self._ignore_under)
        fresh = FileRow(
            path=str(path),
            device=st.st_dev,
            inode=st.st_ino,
            lines=row.lines,
            malformed=row.malformed,
            resets=row.resets + 1,
        )
        # What was gathered from the old content is stored (not lost) as the offset goes back to 0.
        self._commit(row, fresh, builder.flush(), report)
        report.resets += 1
        return fresh

    def _read(
        self, path: Path, row: FileRow, handle: BinaryIO, st: os.stat_result, report: RunReport
    ) -> None:
        reader = LineReader(handle, row.offset, self.settings.observer_max_line_bytes)
        builder = ChunkBuilder(self._limits, row.pending, self._ignore_under)
        if row.pending and not builder.has_open and builder.ignored is None:
            log.warning("%s: pending state from another CEMS version dropped", path)
        first = True
        while not self.stop.is_set():
            start = reader.position
            chunks: list[Chunk] = []
            lines = malformed = 0
            caught_up = False
            while (
                reader.position - start < self.settings.observer_commit_bytes
                and len(chunks) < self.settings.observer_commit_chunks
            ):
                raw = reader.next_line()
                if raw is None:
                    caught_up = True
                    break
                lines += 1
                if raw.data is None:
                    malformed += 1
                    continue
                try:
                    parsed = parse_line(raw.data)
                except Malformed:
                    malformed += 1
                    continue
                if parsed is not None:
                    builder.line_no = row.lines + lines
                    chunks.extend(builder.feed(parsed))
            end = reader.position
            if end == start and not first:
                break
            # Size and mtime are recorded only once every complete line has been read: "unchanged since we
            # last looked" must mean "nothing left to read", or a run stopped between two commits would never
            # resume the rest. Committed even without a new line the first time, so a file that ends in a
            # partial line is not read again until it changes.
            new = replace(
                row,
                offset=end,
                size_seen=st.st_size if caught_up else row.size_seen,
                mtime=st.st_mtime if caught_up else row.mtime,
                pending=builder.state(),
                ignored=builder.ignored,
                lines=row.lines + lines,
                malformed=row.malformed + malformed,
            )
            if new.fingerprint_len < FINGERPRINT_BYTES and end > new.fingerprint_len:
                new.fingerprint_len = min(FINGERPRINT_BYTES, end)
                new.fingerprint = fingerprint(handle, new.fingerprint_len)
            self._commit(row, new, chunks, report)
            if end > start:
                report.files_read += 1 if first else 0
                report.bytes_read += end - start
                report.lines += lines
                report.malformed += malformed
                log.debug("%s: %d bytes, %d lines, %d chunks", path, end - start, lines, len(chunks))
            row, first = new, False
            if end == start:
                break

    def _commit(self, expected: FileRow, new: FileRow, chunks: list[Chunk], report: RunReport) -> None:
        """Offset, pending state and what the closed chunks became, in one transaction."""
        conn = self.svc.conn
        with conn.transaction():
            store.insert_file_if_missing(conn, self.user, new.path)
            current = store.lock_file(conn, self.user, new.path)
            # The version, not the offset: finalizing an idle session changes only the pending state.
            if current is None or current.version != expected.version:
                raise _Conflict(new.path)
            self._emit(new.path, chunks, report)
            new.version = current.version + 1
            store.save_file(conn, self.user, new)

    def _forget(self, row: FileRow, report: RunReport) -> None:
        """The transcript is gone (Claude Code cleans up old ones): store what it left open, drop its row."""
        conn = self.svc.conn
        chunks = ChunkBuilder(self._limits, row.pending, self._ignore_under).flush()
        with conn.transaction():
            current = store.lock_file(conn, self.user, row.path)
            if current is None or current.version != row.version:
                raise _Conflict(row.path)
            self._emit(row.path, chunks, report)
            store.delete_file(conn, self.user, row.path)
        log.info("%s is gone; forgot its read position", row.path)

    def _emit(self, path: str, chunks: list[Chunk], report: RunReport) -> None:
        """What closed chunks become, inside the caller's transaction: memories now (digests), or backlog
        items for LLM extraction."""
        self.writer.record_sessions(chunks, report)
        if self.llm is not None:
            store.add_backlog(self.svc.conn, self.user, path, [chunk.to_json() for chunk in chunks])
            report.backlog += len(chunks)
        else:
            for chunk in chunks:
                for observation in chunk.observations:
                    self.writer.store(observation, report)
        report.chunks += len(chunks)

    # ------------------------------------------------------------------------------------ idle sessions

    def _idle(self, path: Path) -> bool:
        try:
            return self._now() - path.stat().st_mtime >= self.settings.observer_idle_seconds
        except FileNotFoundError:
            return True

    def _end_turn(self, path: str, report: RunReport) -> None:
        row = store.get_file(self.svc.conn, self.user, path)
        if row is None or not (row.pending and row.pending.get("open")):
            return  # nothing open: read by the other trigger already, or nothing happened
        builder = ChunkBuilder(self._limits, row.pending, self._ignore_under)
        chunks = builder.flush()
        self._commit(row, replace(row, pending=builder.state()), chunks, report)

    def _finalize_idle(self, report: RunReport) -> None:
        """Close the open chunk of every session that has been quiet for the idle time."""
        for row in store.files_with_pending(self.svc.conn, self.user):
            if self.stop.is_set():
                return
            path = Path(row.path)
            try:
                st = path.stat()
            except FileNotFoundError:
                continue  # a full pass forgets it, storing what was open
            if (st.st_size, st.st_mtime) != (row.size_seen, row.mtime):
                continue  # not read up to date yet: the next pass reads it first
            if self._now() - st.st_mtime < self.settings.observer_idle_seconds:
                continue
            builder = ChunkBuilder(self._limits, row.pending, self._ignore_under)
            chunks = builder.flush()
            self._commit(row, replace(row, pending=builder.state()), chunks, report)

    # ------------------------------------------------------------------------------------ LLM extraction

    def _extract(self, report: RunReport) -> None:
        """Extract memories from gathered material: per session, once enough has gathered or it is idle."""
        if time.monotonic() < self._llm_retry_at:
            return
        for group in store.backlog_groups(self.svc.conn, self.user):
            idle = group.path in self._ended or self._idle(Path(group.path))
            remaining = group.chars
            while remaining > 0 and (idle or remaining >= self.settings.observer_batch_chars):
                if self.stop.is_set():
                    return
                items = store.backlog_batch(
                    self.svc.conn, self.user, group.path, self.settings.observer_batch_max_chars
                )
                if not items:
                    break
                if not self._extract_batch(items, report):
                    return  # the endpoint failed: every batch waits for the backoff
                remaining -= sum(item.chars for item in items)

    def _extract_batch(self, items: list[store.BacklogItem], report: RunReport) -> bool:
        """One LLM call for `items`; True when its memories were stored."""
        assert self.llm is not None
        chunks = [Chunk.from_json(item.chunk) for item in items]
        answer = self.llm.chat_json(
            EXTRACTION_SYSTEM, extraction_prompt(chunks), max_tokens=2000, stage="observer"
        )
        observations = parse_extraction(answer, chunks)
        ids = [item.id for item in items]
        if observations is not None:
            self._llm_ok()
            self._store_batch(ids, observations, report)
            return True
        report.llm_failures += 1
        attempts = max(item.attempts for item in items) + 1
        error = (
            f"LLM extraction failed ({self.llm.base_url or 'api.openai.com'}, model {self.llm.model}): "
            f"no answer in the expected shape (attempt {attempts})"
        )
        self._llm_backoff(error, report)
        limit = self.settings.observer_llm_max_attempts
        # A turn the agent just ended (the Stop trigger) gets its deterministic memories now rather than
        # after the backoff: the next session may start before the endpoint recovers.
        ended = any(item_path in self._ended for item_path in {item.path for item in items})
        if ended or (limit and attempts >= limit):
            log.warning(
                "observer: %d failed LLM attempts; storing the digests of %d chunks instead",
                attempts,
                len(chunks),
            )
            self._store_batch(ids, [o for chunk in chunks for o in chunk.observations], report)
        else:
            store.backlog_failed(self.svc.conn, self.user, ids, error)
        return False

    def _store_batch(self, ids: list[int], observations: list[Observation], report: RunReport) -> None:
        conn = self.svc.conn
        with conn.transaction():
            if store.remove_backlog(conn, self.user, ids) != len(ids):
                raise _Conflict("backlog")
            for observation in observations:
                self.writer.store(observation, report)
        report.extracted += 1

    def _llm_backoff(self, error: str, report: RunReport) -> None:
        self._llm_failures += 1
        delay = min(
            self.settings.observer_backoff_initial * 2 ** (self._llm_failures - 1),
            self.settings.observer_backoff_max,
        )
        self._llm_retry_at = time.monotonic() + delay
        self._record_error(report, f"{error}; retrying in {delay:g}s")
        store.note_llm(
            self.svc.conn, self.user, self._llm_failures, datetime.now(UTC) + timedelta(seconds=delay)
        )

    def _llm_ok(self) -> None:
        if self._llm_failures:
            self._llm_failures = 0
            self._llm_retry_at = 0.0
            store.note_llm(self.svc.conn, self.user, 0, None)

    # ------------------------------------------------------------------------------------ status

    def status(self) -> dict[str, object]:
        """Files watched, bytes not yet read, what waits, and the last error."""
        conn = self.svc.conn
        rows = store.load_files(conn, self.user)
        files = self.discover()
        behind = 0
        for path in files:
            try:
                size = path.stat().st_size
            except FileNotFoundError:
                continue
            row = rows.get(str(path))
            behind += max(size - (row.offset if row else 0), 0)
        backlog_items, backlog_chars = store.backlog_totals(conn, self.user)
        state = store.get_state(conn, self.user)
        return {
            "roots": [str(r) for r in self.roots],
            "files_watched": len(files),
            "bytes_behind": behind,
            "open_chunks": sum(1 for r in rows.values() if r.pending and r.pending.get("open")),
            "ignored_files": sum(1 for r in rows.values() if r.ignored),
            "malformed_lines": sum(r.malformed for r in rows.values()),
            "backlog_chunks": backlog_items,
            "backlog_chars": backlog_chars,
            "llm": self.llm is not None,
            "observations": store.count_observations(conn, self.user, SOURCE),
            "last_run_at": _iso(state["last_run_at"]),
            "last_error": state["last_error"],
            "last_error_at": _iso(state["last_error_at"]),
            "llm_retry_at": _iso(state["llm_retry_at"]),
        }


def _iso(value: object) -> str | None:
    return value.isoformat() if isinstance(value, datetime) else None

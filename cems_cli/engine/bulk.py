"""Import and export of memories as JSONL: the bulk form of `remember`, and its lossless inverse.

One line is one memory:
    {"content": "...", "category": "decisions", "scope": "personal", "team": null, "tags": ["db"],
     "title": null, "source": "manual", "source_ref": "project:acme/api", "pinned": false,
     "pin_reason": null, "pin_category": null, "created_at": "2024-05-01T12:00:00+00:00",
     "expires_at": null, "context": null}
Only `content` is required. An export also writes `id`, which import ignores (memories get new ids).

`team` is the team a shared memory is shared with (null for personal ones, where any other value is an
error). A shared line without one joins the default team: `cems import --team`, else CEMS_TEAM; with neither,
the import stops at that line. The line's team is where the importer's shared copy goes, as
`cems share --team` would put it; the owner is always the importing user (`user_id` and `team_id`, written
by `cems list --json`, are ignored).

Round trip (export → import as another user or into another home → export) preserves: content, category,
scope, team, tags, title, source, source_ref, pinned, pin_reason, pin_category, created_at, expires_at and
context (the text that situates a memory: indexed with it, never shown as its content). Not preserved: ids,
access statistics (access_count, last_accessed, priority) and updated_at (set to created_at). Archived
memories and rules are not exported (rules carry a structured spec: move them with `cems rule`).

A file is untrusted unless the importer says otherwise (`cems import --trusted`, `trusted=True`): it may come
from a repository the agent works in, and a line must not pass itself off as the person's own guideline. An
untrusted line cannot set provenance or standing: its `source` becomes `import`, its `source_ref` (project,
session and file reference) is dropped, it is not pinned (`pin_reason`, `pin_category` go with the pin) and a
`created_at` in the future becomes the time of the import. The report counts what was dropped, by field.
A trusted import (your own export, moved to another machine) keeps every field, as above.

Every line is validated before anything is stored (the first bad line is reported by number and nothing is
stored: a NUL character or a lone surrogate in any field but `content`, which is cleaned as `remember` cleans
it, or a `content` over CEMS_MAX_MEMORY_BYTES). Duplicates of live memories are skipped by content hash in one
query. Texts are chunked like `remember` does (each chunk embedded with the memory's context), embedded and
written with COPY in committed batches of COMMIT_BATCH memories: an interrupted import keeps its batches,
and the same import run again resumes where it stopped (what is stored is skipped by hash). A large first load
drops the search indexes and builds them once at the end.

Vectors: `cems export --embeddings` adds `embedding` (one base64 float32 vector per chunk) and
`embedding_model`. A trusted import into a store of the same model and dimension stores them as given and
skips the model; an untrusted one embeds the text again (a hostile file could carry a vector made to sit next
to every question), counted in the report's dropped fields.
"""

from __future__ import annotations

import json
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import numpy as np

from cems_cli.embedding.limits import TextTooLarge, check_text_size
from cems_cli.errors import UserError
from cems_cli.models import MemoryScope, PinCategory, parse_choice
from cems_cli.store import bulk as store
from cems_cli.store.records import MemoryRecord, NewMemory
from cems_cli.text.normalize import content_hash

if TYPE_CHECKING:
    import psycopg

    from cems_cli.config import Settings
    from cems_cli.engine.service import MemoryService

# Texts per embedder call: large enough that the embedder's own length sorting pays off, small enough that
# the progress bar moves every second or so.
EMBED_BATCH = 256
# Memories per committed batch: what an interrupted import keeps, and a resumed one skips. Large enough that
# the per-batch dedup query and commit cost little next to embedding (~5 s of the local model's time).
COMMIT_BATCH = 1000
_WRITE_ATTEMPTS = 3

EXPORT_FIELDS = ("content", "category", "scope", "team", "tags", "title", "source", "source_ref", "pinned",
                 "pin_reason", "pin_category", "created_at", "expires_at", "context")
# Written by exports of this or other versions, or by `cems list --json`; accepted and not used.
_IGNORED_FIELDS = frozenset({"id", "user_id", "team_id", "priority", "access_count", "last_accessed",
                             "archived", "updated_at"})
_STRING_FIELDS = ("category", "scope", "team", "source_ref", "title", "source", "pin_reason", "pin_category",
                  "context")
# Written by `cems export --embeddings`: each chunk's vector and the model that made it.
VECTOR_FIELDS = ("embedding", "embedding_model")
DEFAULT_SOURCE = "import"
# A team is a name, not a text: long enough for any real one, short enough that a hostile file cannot make
# the team column (indexed, shown in messages) carry a document.
TEAM_MAX_LENGTH = 200

Progress = Callable[[int, int], None]
Embed = Callable[[Sequence[str]], np.ndarray]


@dataclass(frozen=True)
class ImportLine:
    """One parsed import line: the memory, and for a shared one the team it joins."""

    memory: NewMemory
    team: str | None = None
    # A trusted line's own embedding (one row per chunk, as `cems export --embeddings` writes it): stored as
    # given instead of running the model.
    vectors: np.ndarray | None = None


@dataclass
class ImportReport:
    total: int = 0  # memories given
    created: int = 0
    duplicates: int = 0  # already stored (live) or repeated earlier in the same input
    chunks: int = 0
    ids: list[str] = field(default_factory=list)  # the memory id of each input memory, in input order
    seconds: float = 0.0
    teams: dict[str, int] = field(default_factory=dict)  # shared memories created, by team
    # Untrusted imports: lines whose field was dropped (source, source_ref, pinned) or clamped (created_at).
    dropped: dict[str, int] = field(default_factory=dict)

    @property
    def per_second(self) -> float:
        return self.total / self.seconds if self.seconds > 0 else 0.0

    def to_json(self) -> dict[str, Any]:
        return {"total": self.total, "imported": self.created, "duplicates": self.duplicates,
                "chunks": self.chunks, "teams": dict(sorted(self.teams.items())),
                "dropped": dict(sorted(self.dropped.items())),
                "seconds": round(self.seconds, 3), "per_second": round(self.per_second, 1)}


# Parsing ----------------------------------------------------------------------------------------------------

def parse_jsonl(lines: Iterable[bytes | str], service: MemoryService, *,
                default_team: str | None = None, trusted: bool = False,
                dropped: Counter[str] | None = None) -> list[ImportLine]:
    """Validate every line (blank lines skipped); UserError naming the first bad line's number.
    `default_team` (else CEMS_TEAM) is the team of shared lines that name none. Untrusted lines lose their
    provenance and pin (module docstring), counted by field in `dropped`."""
    parsed: list[ImportLine] = []
    preparers: dict[str | None, MemoryService] = {}
    for number, raw in enumerate(lines, start=1):
        try:
            text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
        except UnicodeDecodeError:
            raise UserError(f"line {number}: not valid UTF-8") from None
        if not text.strip():
            continue
        try:
            parsed.append(parse_line(_load_object(text), service, default_team=default_team,
                                     preparers=preparers, trusted=trusted, dropped=dropped))
        except UserError as error:
            raise UserError(f"line {number}: {error}") from None
    return parsed


def _load_object(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        raise UserError(f"not valid JSON ({error.msg} at column {error.colno})") from None
    if not isinstance(value, dict):
        raise UserError("expected a JSON object")
    return value


def parse_record(data: dict[str, Any], service: MemoryService, *, trusted: bool = False,
                 dropped: Counter[str] | None = None) -> NewMemory:
    """One import record → a prepared memory (the same cleaning, redaction and checks as `remember`).
    A shared record's team is not part of a NewMemory: `import_memories` puts it in CEMS_TEAM; use
    `parse_line` to keep it."""
    return parse_line(data, service, trusted=trusted, dropped=dropped).memory


def parse_line(data: dict[str, Any], service: MemoryService, *, default_team: str | None = None,
               preparers: dict[str | None, MemoryService] | None = None, trusted: bool = False,
               dropped: Counter[str] | None = None) -> ImportLine:
    """One import record → its prepared memory and, when shared, its team (the line's, else `default_team`,
    else CEMS_TEAM). `preparers` caches the per-team services that prepare shared memories. Unless
    `trusted`, the line's provenance and pin are dropped and a future `created_at` is now (each counted in
    `dropped`), after the line is checked whole: a bad value is still reported."""
    unknown = sorted(set(data) - set(EXPORT_FIELDS) - set(VECTOR_FIELDS) - _IGNORED_FIELDS)
    if unknown:
        raise UserError(f"unknown field {unknown[0]!r}")
    content = data.get("content")
    if not isinstance(content, str):
        raise UserError("'content' must be a string")
    for name in _STRING_FIELDS:
        if data.get(name) is not None and not isinstance(data[name], str):
            raise UserError(f"{name!r} must be a string or null")
    tags = data.get("tags") or []
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        raise UserError("'tags' must be a list of strings")
    for name in _STRING_FIELDS:
        _check_storable(name, data.get(name))
    for tag in tags:
        _check_storable("tags", tag)
    try:  # refused before any line is embedded: embedding cost grows with the text
        check_text_size(content, service.settings.max_memory_bytes, "'content'")
    except TextTooLarge as error:
        raise UserError(str(error)) from None
    pinned = data.get("pinned", False)
    if not isinstance(pinned, bool):
        raise UserError("'pinned' must be true or false")
    category = data.get("category") or "general"
    if category.strip().lower() == "rules":
        raise UserError("rules are not imported as memories: use `cems rule import`")
    scope = parse_choice(MemoryScope, data.get("scope") or "personal", "scope").value
    team = _team(data.get("team"), scope)
    preparer = service
    if team is None and scope == "shared":
        team = default_team or service.settings.team
    if team is not None and team != service.settings.team:
        # `prepare` checks shared memories against the service's team: prepare this one as its team's.
        cache = preparers if preparers is not None else {}
        if team not in cache:
            cache[team] = service.for_identity(service.settings.user, team, service.settings.project)
        preparer = cache[team]
    source, source_ref = data.get("source", DEFAULT_SOURCE), data.get("source_ref")
    pin_reason, pin_category = data.get("pin_reason"), data.get("pin_category")
    created_at = parse_timestamp(data.get("created_at"), "created_at")
    if not trusted:
        if pin_category:  # still checked: a line with a bad value is refused either way
            parse_choice(PinCategory, pin_category, "pin category")
        source, source_ref, pinned, created_at = _untrusted(source, source_ref, pinned, created_at, dropped)
        pin_reason = pin_category = None
    memory = preparer.prepare(
        content, category=category, scope=scope, tags=tags, title=data.get("title"),
        project=source_ref, source=source, pin=pinned, pin_reason=pin_reason, pin_category=pin_category,
        created_at=created_at,
        expires_at=parse_timestamp(data.get("expires_at"), "expires_at"), context=data.get("context"),
    )
    vectors = None
    if data.get("embedding") is not None:
        if trusted:
            vectors = line_vectors(data["embedding"], data.get("embedding_model"), memory, service)
        elif dropped is not None:
            # A file from elsewhere could carry a vector made to sit near every question: embed its text.
            dropped["embedding"] += 1
    return ImportLine(memory, team if memory.scope == "shared" else None, vectors)


def line_vectors(value: Any, model: Any, memory: NewMemory, service: MemoryService) -> np.ndarray:
    """A line's `embedding`, checked: made by this store's model, one finite non-zero vector of its
    dimension per chunk of the content. A vector is a list of numbers or base64 of little-endian float32
    (what the export writes: exact and a quarter of the size); a flat list is a one-chunk memory's."""
    from cems_cli.text.chunking import chunk_text

    ours = service.settings.resolved_embedding_model
    if not isinstance(model, str) or not model:
        raise UserError("'embedding' needs 'embedding_model', the model that made it")
    if model != ours:
        raise UserError(f"'embedding' was made by {model!r}, this store embeds with {ours!r} "
                        "(leave the field out to embed the text again)")
    if not isinstance(value, list) or not value:
        raise UserError("'embedding' must be a list of vectors")
    dim = service.settings.resolved_embedding_dim
    entries = [value] if all(isinstance(v, int | float) and not isinstance(v, bool) for v in value) else value
    rows = np.empty((len(entries), dim), dtype=np.float32)
    for index, entry in enumerate(entries):
        rows[index] = _vector(entry, dim)
    chunks = len(chunk_text(memory.content))
    if len(rows) != chunks:
        raise UserError(f"'embedding' has {len(rows)} vector{'s' if len(rows) != 1 else ''}, the content "
                        f"makes {chunks} chunk{'s' if chunks != 1 else ''}")
    return rows


def _vector(entry: Any, dim: int) -> np.ndarray:
    import base64
    import binascii

    if isinstance(entry, str):
        try:
            raw = base64.b64decode(entry, validate=True)
        except (binascii.Error, ValueError):
            raise UserError("'embedding' holds a string that is not base64") from None
        if len(raw) != 4 * dim:
            raise UserError(f"'embedding' holds a vector of {len(raw) / 4:g} dimensions, "
                            f"this store's have {dim}")
        vector = np.frombuffer(raw, dtype="<f4").astype(np.float32)
    else:
        array = np.asarray(entry) if isinstance(entry, list) else np.asarray([])
        if array.ndim != 1 or array.dtype.kind not in "fiu":
            raise UserError("'embedding' holds something that is not a vector of numbers")
        if len(array) != dim:
            raise UserError(f"'embedding' holds a vector of {len(array)} dimensions, this store's have {dim}")
        vector = array.astype(np.float32)
    if not np.isfinite(vector).all() or not vector.any():
        raise UserError("'embedding' holds a vector that is zero or not finite")
    return vector


def _untrusted(source: str | None, source_ref: str | None, pinned: bool, created_at: datetime | None,
               dropped: Counter[str] | None) -> tuple[str, None, bool, datetime | None]:
    """What an untrusted line may claim: no origin (source `import`, no source_ref), no pin, no date to
    come (a memory from 2099 would top every "recent" list and never look stale). Counts each change."""
    changed = Counter[str]()
    if source not in (None, DEFAULT_SOURCE):
        changed["source"] += 1
    if source_ref:
        changed["source_ref"] += 1
    if pinned:
        changed["pinned"] += 1
    now = datetime.now(UTC)
    if created_at is not None and created_at > now:
        changed["created_at"] += 1
        created_at = now
    if dropped is not None:
        dropped.update(changed)
    return DEFAULT_SOURCE, None, False, created_at


def _check_storable(name: str, value: str | None) -> None:
    """A field PostgreSQL can store as given. JSON can spell what text columns refuse: \\u0000 (NUL) and
    lone surrogates (\\ud800). `content` is cleaned instead, as `remember` cleans its text; the other fields
    are names and labels, where a silently changed value would be worse than a refused line."""
    if value is None:
        return
    if "\x00" in value:
        raise UserError(f"{name!r} contains a NUL character (\\u0000)")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise UserError(f"{name!r} is not valid Unicode (it holds a lone surrogate)") from None


def _team(value: str | None, scope: str) -> str | None:
    """A line's own team, checked: a name (no control characters, not too long), and only on shared lines,
    so no line can make a personal memory look like a team's."""
    if value is None or not value.strip():
        return None  # blank: no team named, as for CEMS_TEAM
    if scope != "shared":
        raise UserError("'team' is only for shared memories (this one is personal)")
    if len(value) > TEAM_MAX_LENGTH:
        raise UserError(f"'team' is longer than {TEAM_MAX_LENGTH} characters")
    if any(not character.isprintable() for character in value):
        raise UserError("'team' contains control characters")
    return value


def parse_timestamp(value: Any, name: str) -> datetime | None:
    """ISO 8601 or null; a timestamp without a zone is taken as UTC (so imports do not depend on the host)."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise UserError(f"{name!r} must be an ISO 8601 string or null")
    try:
        parsed = datetime.fromisoformat(value.strip())
    except ValueError:
        raise UserError(f"{name!r} is not an ISO 8601 timestamp: {value!r}") from None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


# Importing --------------------------------------------------------------------------------------------------

def import_memories(service: MemoryService, memories: Sequence[NewMemory | ImportLine], *,
                    progress: Progress | None = None, embed: Embed | None = None,
                    index_progress: store.IndexProgress | None = None) -> ImportReport:
    """Store prepared memories: dedup, chunk, embed, COPY, in committed batches of COMMIT_BATCH memories.

    A shared memory joins its ImportLine's team; a bare NewMemory's joins CEMS_TEAM. A line's own vectors
    (ImportLine.vectors) are stored as given. `embed` replaces the service's embedder (benchmarks use it to
    feed precomputed vectors). `progress(done, total)` counts the new memories stored.

    Each batch commits, so an interrupted import keeps what it stored and the same import run again resumes:
    stored texts are skipped by their hash. A large first load drops the search indexes before it starts and
    builds them after the last batch (`index_progress(name, done, total)`); an interrupted one leaves them
    pending for the next import or `cems maintain` (store.build_pending_indexes).
    """
    started = time.perf_counter()
    report = ImportReport(total=len(memories))
    user, default_team = service.settings.user, service.settings.team
    lines = [m if isinstance(m, ImportLine) else ImportLine(m, default_team) for m in memories]
    rows = [store.DocumentRow(uuid.uuid4(), line.memory,
                              content_hash(line.memory.content, line.memory.context),
                              line.team if line.memory.scope == "shared" else None) for line in lines]
    given = {row.id: line.vectors for row, line in zip(rows, lines, strict=True) if line.vectors is not None}
    known = store.existing_ids(service.conn, user, [r.content_hash for r in rows],
                               restricted=service.restricted)
    fresh = _first_new(rows, known)
    written: dict[store.DedupKey, str] = {}
    if progress:
        progress(0, len(fresh))
    created_keys: set[store.DedupKey] = set()  # what this import stored (not found stored meanwhile)
    try:
        if fresh and _large_load(service, len(fresh)):
            with service.conn.transaction():
                store.drop_search_indexes_for_load(service.conn)
        for start in range(0, len(fresh), COMMIT_BATCH):
            batch = fresh[start : start + COMMIT_BATCH]
            # The model loads only if some line brings no vectors of its own.
            on_embedded = _within(progress, start, len(batch), len(fresh)) if progress else None
            model = embed or (lambda texts: service.embedder.embed(texts))
            chunks = _chunks(batch, given, model, on_embedded)
            stored, made = _write(service, batch, chunks)
            written.update(stored)
            created_keys |= made
            kept = {row.id for row in batch if row.key in made}
            report.chunks += sum(1 for c in chunks if c.document_id in kept)
            if progress:
                progress(min(start + COMMIT_BATCH, len(fresh)), len(fresh))
    except KeyboardInterrupt:
        created = sum(1 for row in fresh if row.key in created_keys)
        later = (" and build the search indexes (searches work without them, slower)"
                 if _owns_indexes(service) and store.pending_search_indexes(service.conn) else "")
        raise UserError(f"interrupted: {created:,} of {len(fresh):,} new memories stored; run the same "
                        f"import again to resume{later} (what is stored is skipped)") from None
    if _owns_indexes(service) and store.pending_search_indexes(service.conn):
        store.build_pending_indexes(service.conn, index_progress, watch=service.connect_again,
                                    memory_mb=build_memory_mb(service.conn, service.settings))
        store.analyze(service.conn)
    ids = {**known, **written}
    report.ids = [ids[row.key] for row in rows]
    created_rows = [row for row in fresh if row.key in created_keys]
    report.created = len(created_rows)
    for row in created_rows:
        if row.team_id is not None:
            report.teams[row.team_id] = report.teams.get(row.team_id, 0) + 1
    report.duplicates = report.total - report.created
    report.seconds = time.perf_counter() - started
    return report


def build_memory_mb(conn: psycopg.Connection, settings: Settings) -> int | None:
    """maintenance_work_mem for building the search indexes of this store: on the embedded server (this
    machine's), what the HNSW graph needs, up to a quarter of the machine's memory (or of its container's
    limit: the build is the one time the store needs it; beyond it, pgvector builds on disk, several times
    slower). A shared server's memory is its administrator's to give: None keeps the default."""
    from cems_cli.store.db import locate
    from cems_cli.store.embedded import memory_bytes

    if not locate(settings, start=False).embedded:
        return None
    total = memory_bytes()
    if total is None:
        return None
    total_mb = total // (1024 * 1024)
    row = conn.execute("SELECT count(*) FROM memory_chunks").fetchone()  # exact: a load just changed it
    needed = store.hnsw_build_mb(int(row[0]) if row else 0, settings.resolved_embedding_dim)
    return min(needed, total_mb // 4)


def _owns_indexes(service: MemoryService) -> bool:
    """Only the store's owner drops and builds indexes (an application role on a shared server cannot)."""
    return not service.restricted


def _large_load(service: MemoryService, count: int) -> bool:
    """Loading more memories than the store holds, and many: building the indexes once afterwards is several
    times faster than inserting into them row by row."""
    return (_owns_indexes(service) and count >= store.REBUILD_MIN_CHUNKS
            and count > store.count_chunks(service.conn))


def _within(progress: Progress, start: int, size: int, total: int) -> Progress:
    """The batch's embedding progress as the whole import's: the bar moves every EMBED_BATCH texts (a few
    seconds with the local model), not only when a batch is stored. Shown one short of the batch's end until
    it is stored."""
    def update(done: int, chunks: int) -> None:
        share = done / chunks if chunks else 1.0
        progress(start + min(int(share * size), size - 1), total)

    return update


def _chunks(batch: Sequence[store.DocumentRow], given: dict[uuid.UUID, np.ndarray],
            embed: Embed, progress: Progress | None = None) -> list[store.ChunkRow]:
    """The batch's chunks as `remember` makes them, each embedded with its memory's context, or with the
    line's own vectors."""
    from cems_cli.text.chunking import chunk_text, index_text

    flat = [(row, index, text) for row in batch for index, text in enumerate(chunk_text(row.memory.content))]
    todo = [i for i, (row, _, _) in enumerate(flat) if row.id not in given]
    vectors = embed_all([index_text(flat[i][2], flat[i][0].memory.context) for i in todo], embed, progress)
    vector_of = dict(zip(todo, vectors, strict=True)) if todo else {}
    return [store.ChunkRow(row.id, index, text,
                           given[row.id][index] if row.id in given else vector_of[i], row.memory.context)
            for i, (row, index, text) in enumerate(flat)]


def _first_new(rows: Sequence[store.DocumentRow],
               known: dict[store.DedupKey, str]) -> list[store.DocumentRow]:
    """Rows whose text is not stored yet, first occurrence only (a repeated line is a duplicate too)."""
    seen = set(known)
    fresh = []
    for row in rows:
        if row.key not in seen:
            seen.add(row.key)
            fresh.append(row)
    return fresh


def embed_all(texts: Sequence[str], embed: Embed, progress: Progress | None = None) -> np.ndarray:
    """Embed in large batches of similar length (less padding), returned in input order."""
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    out: np.ndarray | None = None
    done = 0
    if progress:
        progress(0, len(texts))
    for start in range(0, len(order), EMBED_BATCH):
        batch = order[start : start + EMBED_BATCH]
        vectors = embed([texts[i] for i in batch])
        if out is None:
            out = np.zeros((len(texts), vectors.shape[1]), dtype=np.float32)
        out[batch] = vectors
        done += len(batch)
        if progress:
            progress(done, len(texts))
    return out if out is not None else np.zeros((0, 0), dtype=np.float32)


def _write(service: MemoryService, fresh: Sequence[store.DocumentRow],
           chunks: Sequence[store.ChunkRow]) -> tuple[dict[store.DedupKey, str], set[store.DedupKey]]:
    """One transaction; re-checks duplicates inside it, so a concurrent `remember` of the same text wins
    cleanly (its id is used) instead of failing the import. Returns dedup key → id for what was stored,
    and the keys this call stored (the ids are the database's on a team server)."""
    import psycopg

    conn, user = service.conn, service.settings.user
    for attempt in range(_WRITE_ATTEMPTS):
        try:
            with conn.transaction():
                raced = store.existing_ids(conn, user, [r.content_hash for r in fresh],
                                           restricted=service.restricted)
                docs = [r for r in fresh if r.key not in raced]
                keep = {r.id for r in docs}
                stored = store.write_documents(conn, user, docs, [c for c in chunks if c.document_id in keep])
            return {**{r.key: stored[r.id] for r in docs}, **raced}, {r.key for r in docs}
        except psycopg.errors.UniqueViolation:
            if attempt == _WRITE_ATTEMPTS - 1:
                raise UserError("memories were being stored concurrently; run the import again") from None
    raise AssertionError("unreachable")


# Exporting --------------------------------------------------------------------------------------------------

def record_to_json(record: MemoryRecord) -> dict[str, Any]:
    """The export form of a stored memory: the import fields, then its id (informational)."""
    data: dict[str, Any] = {}
    for name in EXPORT_FIELDS:
        if name == "team":  # stored as team_id; only a shared memory has one
            data[name] = record.team_id if record.scope == "shared" else None
            continue
        value = getattr(record, name)
        data[name] = value.astimezone(UTC).isoformat() if isinstance(value, datetime) else value
    data["id"] = record.id
    return data


def export_lines(service: MemoryService, *, embeddings: bool = False) -> Iterator[str]:
    """One JSON line per memory; C1 and bidi controls escaped (the same value), as an export goes to stdout
    by default, where a memory's escape sequence must not reach the terminal. With `embeddings`, each line
    also carries its chunks' vectors (base64 of little-endian float32) and the model that made them, so a
    trusted import into a store of the same model skips the model."""
    from cems_cli.text.inert import json_for_terminal

    records = store.iter_owned_memories(service.conn, service.settings.user, restricted=service.restricted)
    model = service.settings.resolved_embedding_model
    for batch in _batched(records, 500):
        vectors = (store.chunk_vectors(service.conn, [r.id for r in batch], restricted=service.restricted)
                   if embeddings else {})
        for record in batch:
            data = record_to_json(record)
            if embeddings:
                data["embedding"] = [_base64(v) for v in vectors.get(record.id, [])]
                data["embedding_model"] = model
            yield json_for_terminal(json.dumps(data, ensure_ascii=False)) + "\n"


def _batched(records: Iterator[MemoryRecord], size: int) -> Iterator[list[MemoryRecord]]:
    batch: list[MemoryRecord] = []
    for record in records:
        batch.append(record)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


def _base64(vector: np.ndarray) -> str:
    import base64

    return base64.b64encode(np.asarray(vector, dtype="<f4").tobytes()).decode("ascii")

"""Import and export of `Memory`: `cems export` lines in, checked before anything is stored, and out."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cems_cli.engine.bulk import ImportLine, ImportReport
    from cems_cli.engine.service import MemoryService
    from cems_cli.store.records import NewMemory


class Transfer:
    """`Memory`'s import and export methods (a base of `Memory`)."""

    _service: MemoryService

    def import_jsonl(
        self, lines: Sequence[bytes], *, default_team: str | None = None, trusted: bool = False,
        progress: Callable[[int, int], None] | None = None,
        index_progress: Callable[[str, int, int], None] | None = None,
    ) -> ImportReport:
        """Import `cems export` lines (JSON Lines); texts already stored are skipped. Every line is checked
        before anything is stored (a bad one stores nothing); memories are then stored in committed batches,
        so an interrupted import, run again, resumes. Unless `trusted` (your own export), a line's source,
        source_ref, pin, future date and vectors are dropped, counted in `report.dropped`
        (engine/bulk.py). `progress(done, total)` counts new memories stored; `index_progress(name, done,
        total)` follows the index builds of a large load."""
        from collections import Counter

        from cems_cli.engine.bulk import import_memories, parse_jsonl

        dropped: Counter[str] = Counter()
        memories = parse_jsonl(lines, self._service, default_team=default_team, trusted=trusted,
                               dropped=dropped)
        self._reserve_import(memories)
        report = import_memories(self._service, memories, progress=progress, index_progress=index_progress)
        report.dropped = dict(dropped)
        return report

    def import_records(
        self, records: Sequence[dict[str, Any]], *, trusted: bool = False,
        progress: Callable[[int, int], None] | None = None,
    ) -> ImportReport:
        """Import export-shaped objects (the fields `cems export` writes), each checked before any is stored:
        the fast path for many memories (batched embedding, COPY in committed batches). `report.ids[i]` is
        the memory of `records[i]` (the same id for repeated texts). `trusted` as for `import_jsonl`."""
        from collections import Counter

        from cems_cli.engine.bulk import import_memories, parse_record

        dropped: Counter[str] = Counter()
        memories = [parse_record(record, self._service, trusted=trusted, dropped=dropped)
                    for record in records]
        self._reserve_import(memories)
        report = import_memories(self._service, memories, progress=progress)
        report.dropped = dict(dropped)
        return report

    def _reserve_import(self, memories: Sequence[NewMemory | ImportLine]) -> None:
        """On a shared server, refuse an import that would pass the user's memory quota before anything is
        embedded: the texts not stored yet (the import's own dedup, in one query) must fit."""
        service = self._service
        if not service.restricted or not memories:
            return
        from cems_cli.engine.bulk import ImportLine
        from cems_cli.store.bulk import existing_ids
        from cems_cli.text.normalize import content_hash

        keys = set()
        for item in memories:
            memory, team = (item.memory, item.team) if isinstance(item, ImportLine) else (item, None)
            team = (team or service.settings.team or "") if memory.scope == "shared" else ""
            keys.add((memory.scope, team, content_hash(memory.content, memory.context)))
        known = existing_ids(service.conn, service.settings.user, sorted({key[2] for key in keys}),
                             restricted=service.restricted)
        service.reserve(len(keys - set(known)))

    def export_jsonl(self, *, embeddings: bool = False) -> Iterator[str]:
        """Every memory of yours as one JSON line each, as `import_jsonl` reads them back; with `embeddings`,
        each line carries its vectors (a trusted import into a store of the same model skips the model)."""
        from cems_cli.engine.bulk import export_lines

        return export_lines(self._service, embeddings=embeddings)

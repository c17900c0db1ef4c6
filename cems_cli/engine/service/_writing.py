"""Writing memories: validate and clean one (privacy rules, size limit, choices) and store it once, or give
a live memory new content."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from cems_cli.engine.service._resources import ServiceResources
from cems_cli.errors import UserError
from cems_cli.models import CAPTURED_SOURCES, MemoryCategory, MemoryScope, PinCategory, parse_choice
from cems_cli.store.records import NewMemory
from cems_cli.text.normalize import InvalidText, clean_context, clean_text, content_hash, truncate_to_bytes


def parse_tags(raw: str | Sequence[str] | None) -> list[str]:
    if raw is None:
        return []
    items = raw.split(",") if isinstance(raw, str) else list(raw)
    tags: list[str] = []
    for item in items:
        tag = item.strip()
        if tag and tag not in tags:
            tags.append(tag)
    return tags


class Writing(ServiceResources):
    """`MemoryService`'s writing methods (a base of it)."""

    def prepare(
        self,
        text: str | bytes,
        *,
        category: str = "general",
        scope: str = "personal",
        tags: str | Sequence[str] | None = None,
        title: str | None = None,
        project: str | None = None,
        source: str | None = "manual",
        pin: bool = False,
        pin_reason: str | None = None,
        pin_category: str | None = None,
        created_at: datetime | None = None,
        expires_at: datetime | None = None,
        context: str | None = None,
    ) -> NewMemory:
        """Validate and clean one memory (privacy rules applied) without touching the database. Every
        stored text is sanitized, not just the content: titles, tags and reasons are searched, listed,
        exported and shared like it."""
        from cems_cli.embedding.limits import TextTooLarge, check_text_size
        from cems_cli.text.redact import sanitize_field, sanitize_for_storage, sanitize_tags
        from cems_cli.text.terminal import without_terminal_control

        # CEMS_MAX_MEMORY_BYTES on every path, not only the CLI's: embedding time grows with the text
        # (cems_cli/embedding/limits.py). What a person asked to store is refused whole, before any work;
        # what capture derived is kept, cut to the limit after redaction (a cut secret might slip past it).
        limit = self.settings.max_memory_bytes
        captured = source in CAPTURED_SOURCES
        try:
            if not captured:
                check_text_size(text, limit)
            cleaned = clean_text(text)
            if captured:
                # Captured text carries a test runner's colours and cursor moves ("\x1b[2mexpect(\x1b[22m"):
                # no meaning, and a later search would have to match them. What a person wrote stays exact.
                cleaned = without_terminal_control(cleaned)  # an emptied text is refused just below
            content = clean_text(sanitize_for_storage(cleaned))
            if captured:
                content = truncate_to_bytes(content, limit)
            else:
                check_text_size(content, limit)  # redaction seldom lengthens a text, but it may
            situated = clean_context(sanitize_for_storage(context)) if context else None
        except (InvalidText, TextTooLarge) as error:
            raise UserError(str(error)) from None
        category_value = parse_choice(MemoryCategory, category, "category").value
        scope_value = parse_choice(MemoryScope, scope, "scope").value
        pin_category_value = (
            parse_choice(PinCategory, pin_category, "pin category").value if pin_category else None
        )
        if scope_value == "shared" and not self.settings.team:
            raise UserError("shared memories need a team: set CEMS_TEAM or pass --team")
        return NewMemory(
            content=content,
            category=category_value,
            scope=scope_value,
            tags=sanitize_tags(parse_tags(tags)),
            title=sanitize_field(without_terminal_control(title) if captured and title else title),
            source=sanitize_field(source) if source else source,
            source_ref=sanitize_field(project) if project else project,
            pinned=pin,
            pin_reason=sanitize_field(pin_reason) if pin else None,
            pin_category=pin_category_value if pin else None,
            created_at=created_at,
            expires_at=expires_at,
            context=situated,
        )

    def remember(self, text: str | bytes, **options: Any) -> tuple[str, bool]:
        memory = self.prepare(text, **options)
        return self.store(memory)

    def store(self, memory: NewMemory) -> tuple[str, bool]:
        from cems_cli.store import memories
        from cems_cli.text.chunking import chunk_text, index_text

        team = self.settings.team if memory.scope == "shared" else None
        if team is not None:
            self.require_team(team, admin=memory.category == "rules")
        digest = content_hash(memory.content, memory.context)
        existing = memories.find_live_duplicate(self.conn, self.identity, memory.scope, team, digest)
        if existing:
            memories.keep_earliest_evidence(self.conn, existing, memory, self.identity)
            return existing, False
        self.reserve(1)
        chunks = chunk_text(memory.content)
        vectors = self.embedder.embed([index_text(chunk, memory.context) for chunk in chunks])
        return memories.insert_memory(self.conn, self.identity, memory, digest, chunks, vectors, team)

    def replace(self, memory_id: str, memory: NewMemory) -> bool:
        """New content for one of your live memories (a session's context record as the session goes on);
        False when it is gone or its new text is already another memory."""
        from cems_cli.store import memories
        from cems_cli.text.chunking import chunk_text, index_text

        digest = content_hash(memory.content, memory.context)
        chunks = chunk_text(memory.content)
        vectors = self.embedder.embed([index_text(chunk, memory.context) for chunk in chunks])
        return memories.replace_content(self.conn, self.identity, memory_id, memory, digest, chunks, vectors)

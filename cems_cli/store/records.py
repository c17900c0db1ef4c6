"""Row types the store returns, and the columns they are read from."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any

DOCUMENT_COLUMNS = (
    "id, content, content_hash, user_id, team_id, scope, category, title, tags, source, source_ref, pinned, "
    "pin_reason, pin_category, priority, access_count, last_accessed, expires_at, archived, created_at, "
    "updated_at, context"
)


def document_columns(alias: str = "d") -> str:
    """The document columns qualified by a table alias, in `MemoryRecord` field order."""
    return ", ".join(f"{alias}.{c.strip()}" for c in DOCUMENT_COLUMNS.split(","))


@dataclass
class MemoryRecord:
    id: str
    content: str
    content_hash: str
    user_id: str
    team_id: str | None
    scope: str
    category: str
    title: str | None
    tags: list[str]
    source: str | None
    source_ref: str | None
    pinned: bool
    pin_reason: str | None
    pin_category: str | None
    priority: float
    access_count: int
    last_accessed: datetime | None
    expires_at: datetime | None
    archived: bool
    created_at: datetime
    updated_at: datetime
    context: str | None = None

    @classmethod
    def from_row(cls, row: tuple) -> MemoryRecord:
        values = list(row)
        values[0] = str(values[0])
        values[8] = list(values[8] or [])
        return cls(*values)

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        for key, value in data.items():
            if isinstance(value, datetime):
                data[key] = value.isoformat()
        data.pop("content_hash", None)
        return data


@dataclass
class NewMemory:
    """What `remember` stores; content is already cleaned and redacted."""

    content: str
    category: str = "general"
    scope: str = "personal"
    tags: list[str] = field(default_factory=list)
    title: str | None = None
    source: str | None = "manual"
    source_ref: str | None = None
    pinned: bool = False
    pin_reason: str | None = None
    pin_category: str | None = None
    expires_at: datetime | None = None
    created_at: datetime | None = None
    # Text that situates the memory (e.g. the conversation turn it answers): indexed, never shown as content.
    context: str | None = None

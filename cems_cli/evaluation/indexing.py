"""How a benchmark unit becomes a memory: its text, metadata and import record. Tune indexing here only.

Every unit goes through the same import record → `parse_record` → `import_memories` path as `cems import`,
so the eval measures what users get. Stored per unit:
- content: `unit_to_memory_text(unit)`, e.g. "[8 May 2023] Caroline: I went to a LGBTQ support group …",
  cut to CEMS_MAX_MEMORY_BYTES as capture cuts what it derives (a long chat answer in LongMemEval must not
  refuse the whole import; its head is what a search can match anyway);
- context: `unit_context(unit, previous)`, the unit before it in the same session (what it answers or follows
  up on): indexed with the memory at a lower full-text weight and embedded with it, never shown;
- created_at: the unit's timestamp (naive timestamps are UTC);
- tags: `session:<session_id>` and `doc:<doc_id>` — the doc id is recoverable from the stored memory;
- source: "eval", category "general", scope personal, source_ref: the corpus's eval project.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from cems_cli.evaluation.datasets import Unit
from cems_cli.text.normalize import truncate_to_bytes

DOC_TAG = "doc:"
SESSION_TAG = "session:"
# Recorded in every result's config, so numbers from different indexings are never compared unknowingly.
MEMORY_TEXT_FORMAT = "[D Month YYYY] Speaker: text"


def unit_to_memory_text(unit: Unit) -> str:
    """The memory text: date of the unit (when known) and who said it, then what was said.

    The date makes "when did …" answerable from the memory alone (the conversation's "yesterday" is relative
    to it) and gives full-text search the month and year; the speaker lets "what did Caroline …" match the
    turns Caroline spoke. A speaker already leading the text ("Caroline: …") is not repeated.
    """
    text = unit.text.strip()
    if unit.speaker and not text.startswith(f"{unit.speaker}:"):
        text = f"{unit.speaker}: {text}"
    if unit.timestamp is not None:
        text = f"[{format_day(unit.timestamp)}] {text}"
    return text


def format_day(moment: datetime) -> str:
    """"8 May 2023": unpadded day, full month name (what people write and ask about)."""
    return f"{moment.day} {moment:%B %Y}"


def unit_context(unit: Unit, previous: Unit | None) -> str | None:
    """What situates a unit: the unit just before it in the same session ("Did you hear any inspiring
    stories?" makes "The transgender stories were so inspiring!" findable by what was asked)."""
    if previous is None or previous.session_id is None or previous.session_id != unit.session_id:
        return None
    return previous.text.strip() or None


def unit_to_record(unit: Unit, project: str | None, previous: Unit | None = None,
                   max_bytes: int | None = None) -> dict[str, Any]:
    """The `cems import` JSONL record for a unit; `previous` is the unit before it in the corpus, `max_bytes`
    the largest memory text the store accepts."""
    tags = [f"{SESSION_TAG}{unit.session_id}"] if unit.session_id else []
    tags.append(f"{DOC_TAG}{unit.doc_id}")
    content = unit_to_memory_text(unit)
    return {
        "content": content if max_bytes is None else truncate_to_bytes(content, max_bytes),
        "category": "general",
        "scope": "personal",
        "tags": tags,
        "source": "eval",
        "source_ref": project,
        "created_at": unit.timestamp.isoformat() if unit.timestamp else None,
        "context": unit_context(unit, previous),
    }


"""Validate and clean user text before it is stored."""

from __future__ import annotations

import hashlib
import unicodedata

MAX_CONTENT_CHARS = 1_000_000


class InvalidText(ValueError):
    pass


def clean_text(text: str | bytes) -> str:
    """NFC-normalised text without NUL bytes or lone surrogates; InvalidText if nothing remains. Terminal
    control sequences stay: what a person wrote is kept exactly, and every front end prints it inert."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", errors="replace")
    # Lone surrogates (from invalid UTF-8 passed through surrogateescape) cannot be stored in PostgreSQL.
    text = text.encode("utf-8", errors="replace").decode("utf-8")
    text = text.replace("\x00", "")
    text = unicodedata.normalize("NFC", text).strip()
    if not text:
        raise InvalidText("memory text is empty")
    if len(text) > MAX_CONTENT_CHARS:
        raise InvalidText(
            f"memory text is too long ({len(text):,} characters, at most {MAX_CONTENT_CHARS:,})"
        )
    return text


MAX_CONTEXT_CHARS = 2000


def content_hash(text: str, context: str | None = None) -> str:
    """Dedup key: whitespace-folded, case-preserving SHA-256 of the stored text (and its context: the same
    words said in two different situations are two memories)."""
    folded = " ".join(text.split())
    if context:
        folded += "\x00" + " ".join(context.split())
    return hashlib.sha256(folded.encode("utf-8")).hexdigest()


def clean_context(context: str | None) -> str | None:
    """Context is optional and capped: it should situate a memory, not outweigh it in the index."""
    if context is None:
        return None
    text = " ".join(context.replace("\x00", "").split())
    return text[:MAX_CONTEXT_CHARS] or None


TRUNCATED_MARK = "\n[… truncated: over CEMS_MAX_MEMORY_BYTES]"


def truncate_to_bytes(text: str, limit: int) -> str:
    """`text` if it fits in `limit` bytes of UTF-8, else its head (cut at a character) and a mark."""
    data = text.encode("utf-8")
    if len(data) <= limit:
        return text
    keep = limit - len(TRUNCATED_MARK.encode("utf-8"))
    return data[:keep].decode("utf-8", errors="ignore").rstrip() + TRUNCATED_MARK

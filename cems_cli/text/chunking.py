"""Split long memories into overlapping token windows (800 tokens, 15% overlap)."""

from __future__ import annotations

from cems_cli.text.tokens import encoding, fits_in_tokens

CHUNK_TOKENS = 800
OVERLAP_RATIO = 0.15


def chunk_text(text: str, size: int = CHUNK_TOKENS, overlap_ratio: float = OVERLAP_RATIO) -> list[str]:
    """Short content is one chunk; longer content is cut into `size`-token windows that overlap."""
    if size < 1 or not 0 <= overlap_ratio < 1:
        raise ValueError("chunk size must be positive and overlap in [0, 1)")
    if fits_in_tokens(text, size):
        return [text]
    enc = encoding()
    tokens = enc.encode(text, disallowed_special=())
    step = max(1, size - int(size * overlap_ratio))
    chunks: list[str] = []
    for start in range(0, len(tokens), step):
        window = tokens[start : start + size]
        chunks.append(_decode_clean(enc, window))
        if start + size >= len(tokens):
            break
    return chunks


def index_text(chunk: str, context: str | None) -> str:
    """What gets embedded for a chunk: the chunk, followed by its memory's context when there is one."""
    return f"{chunk}\n{context}" if context else chunk


def _decode_clean(enc, tokens: list[int]) -> str:
    # A window may cut a multi-byte character in half; drop the broken bytes at its edges.
    return enc.decode_bytes(tokens).decode("utf-8", errors="ignore").strip()

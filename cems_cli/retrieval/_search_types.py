"""What the stages of a search share: the query variants, what the caller hands in (`SearchDeps`), and
the trace `--explain` shows."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import psycopg

    from cems_cli.config import Settings
    from cems_cli.embedding import Embedder
    from cems_cli.store.memories import Identity


@dataclass
class QueryVariant:
    name: str
    text: str
    is_original: bool
    vector: bool = True
    lexical: bool = True


class SearchDeps(Protocol):
    """What a search uses, handed in by its caller (the library's `MemoryService` is one): the pipeline
    looks nothing up and imports no front end."""

    settings: Settings

    @property
    def conn(self) -> psycopg.Connection: ...

    @property
    def identity(self) -> Identity: ...

    @property
    def query_embedder(self) -> Embedder: ...


@dataclass
class Trace:
    """What ran, for --explain: the stages, the query variants, the timings."""

    stages: dict[str, Any] = field(default_factory=dict)
    timings_ms: dict[str, float] = field(default_factory=dict)
    _t: float = field(default_factory=time.perf_counter)

    def lap(self, stage: str) -> None:
        now = time.perf_counter()
        self.timings_ms[stage] = round((now - self._t) * 1000, 2)
        self._t = now

"""What `cems status` reports: who you are to CEMS, where your memories live and how many there are, and
the store's and the model's footprint."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from cems_cli.config import Settings, get_settings


def database_status() -> dict[str, Any]:
    """Where the store is and, for the embedded server, whether it runs and how big it is
    (`cems db status --json`, the `database` of `cems status --json` and of the MCP `status` tool)."""
    from cems_cli.paths import pgdata_path
    from cems_cli.store.embedded import data_dir, data_dir_size, read_postmaster

    settings = get_settings()
    if settings.database_url:
        from cems_cli.store.db import locate

        return {"embedded": False, "location": locate(settings, start=False).description, "running": None}
    pgdata = pgdata_path(settings.home)
    state = read_postmaster(pgdata)
    return {
        "embedded": True,
        "location": str(pgdata),
        "data_dir": str(data_dir(pgdata)),  # where the cluster really is (as root: under /var/lib/cems)
        "running": state is not None,
        "pid": state.pid if state else None,
        "socket": str(state.socket_dir) if state and state.socket_dir else None,
        "size_bytes": data_dir_size(pgdata) if pgdata.exists() else 0,
    }


@dataclass(frozen=True)
class Status:
    """Who you are to CEMS, where your memories live, and how many there are."""

    user: str
    team: str | None
    project: str
    home: str
    embedding: dict[str, Any]
    llm: dict[str, Any]
    counts: list[dict[str, Any]]
    # What the store and the search server hold in memory (store/footprint.py): the database's page cache
    # and the size of what it caches, the model's weights, the search server's resident memory.
    memory: dict[str, Any] = field(default_factory=dict)

    @property
    def total(self) -> int:
        return sum(int(entry["count"]) for entry in self.counts)

    def to_json(self) -> dict[str, Any]:
        return {
            "user": self.user,
            "team": self.team,
            "project": self.project,
            "home": self.home,
            "embedding": self.embedding,
            "llm": self.llm,
            "counts": self.counts,
            "total": self.total,
            "memory": self.memory,
        }


def _model_bytes(settings: Settings) -> int | None:
    """The local model's weights on disk, which the search server maps into memory (None for a remote one)."""
    if settings.embedding_backend != "local":
        return None
    from cems_cli.embedding.local import model_file

    try:
        return model_file().stat().st_size
    except OSError:
        return None

"""CEMS as a library: the one API every front end goes through (the CLI, the search server the hooks ask,
the MCP server, the evaluation, your own scripts).

    import cems

    with cems.open() as memory:                      # the embedded store under ~/.cems, offline
        memory.remember("We use pnpm, never npm", category="preferences")
        for result in memory.search("which package manager"):
            print(result.score, result.content, result.citation)

Everything below it (the store, the retrieval pipeline, the rules tables, maintenance) is an implementation
detail: `Memory` is given its settings and builds what it needs lazily, so opening one costs nothing until
the first call that needs the database (a connection) or the model (an embedding).

This package is a façade over the engine (`MemoryService`, service/, and the modules beside it), not the
engine itself: it turns documented keywords into the engine's arguments (a search's or a recall's
`SearchOptions` / `RecallOptions`, built once) and adds no behaviour, and every front end goes through it.

The package's modules each hold one part: `_memory` (`Memory`, `open`), `_transfer` (import and export),
`_config` (live settings), `_rules` (guard rails), `_server` (teams and a team server's administration,
reindexing), `_status` (what `cems status` reports) and `_frontend` (what a front end needs around a call).
"""

from __future__ import annotations

from cems_cli.api._config import Config, SettingValue
from cems_cli.api._frontend import describe_error, error_line, opened
from cems_cli.api._memory import Memory, Remembered, open
from cems_cli.api._rules import Rules
from cems_cli.api._server import (
    Reindexed,
    Teams,
    end_stuck_sessions,
    grant_role,
    init_server,
    list_quotas,
    refusal,
    reindex,
    set_quota,
)
from cems_cli.api._status import Status, database_status
from cems_cli.engine.maintain import STEPS as MAINTENANCE_STEPS  # `Memory.maintain`'s steps, in order
from cems_cli.engine.summaries import SummaryReport
from cems_cli.errors import UserError
from cems_cli.results import SearchResult
from cems_cli.retrieval.options import RecallOptions, SearchOptions
from cems_cli.store.records import MemoryRecord
from cems_cli.store.summaries import StoredSummary

__all__ = [
    "MAINTENANCE_STEPS",
    "Memory",
    "MemoryRecord",
    "Remembered",
    "RecallOptions",
    "Config",
    "Rules",
    "SearchOptions",
    "SearchResult",
    "Status",
    "StoredSummary",
    "SummaryReport",
    "UserError",
    "open",
    "reindex",
    "Teams",
    "init_server",
    "grant_role",
    "set_quota",
    "list_quotas",
    "end_stuck_sessions",
    "Reindexed",
    "SettingValue",
    "describe_error",
    "error_line",
    "opened",
    "database_status",
    "refusal",
]

"""CEMS, long-term memory for AI coding agents, as a library.

    import cems

    with cems.open() as memory:
        memory.remember("In this repo we use pnpm, never npm", category="preferences")
        for result in memory.search("which package manager"):
            print(f"{result.score:.2f} {result.content}")

`cems.open()` reads the same settings as the `cems` command (CEMS_* environment, config.toml, defaults)
and uses the same store: the embedded PostgreSQL under ~/.cems, or CEMS_DATABASE_URL. The implementation
lives in `cems_cli` (the package the command was first written as); this name is the public one.
"""

from cems_cli import __version__
from cems_cli.api import (
    Memory,
    MemoryRecord,
    RecallOptions,
    Remembered,
    Rules,
    SearchOptions,
    SearchResult,
    Status,
    StoredSummary,
    SummaryReport,
    UserError,
    open,
)

__all__ = [
    "Memory",
    "MemoryRecord",
    "RecallOptions",
    "Remembered",
    "Rules",
    "SearchOptions",
    "SearchResult",
    "Status",
    "StoredSummary",
    "SummaryReport",
    "UserError",
    "__version__",
    "open",
]

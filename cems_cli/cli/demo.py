"""`cems demo`: what `make run` shows — remember a few memories, then search them.

The demo keeps its memories in a store of its own (`$CEMS_HOME/demo`, its own embedded server, stopped
when the demo ends), so sample text never reaches the user's searches or session profiles.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cems_cli.cli.common import JsonOption, console, emit_json

DEMO_MEMORIES = [
    ("I prefer Python with type hints for backend services.", "preferences"),
    ("We chose PostgreSQL with pgvector over a separate vector database to keep one store.", "decisions"),
    ("Run the test suite with `make test`; it creates the virtualenv first.", "patterns"),
    ("Fixed the flaky CI by pinning the embedded PostgreSQL wheel to 18.6.3.", "learnings"),
    ("The API returns 500 when REDIS_URL is unset; the cache must stay optional.", "context"),
]
DEMO_QUERIES = [
    "which language do I like for server code?",
    "why did we pick postgres for vectors?",
    "how do I run the tests?",
]
DEMO_FOLDER = "demo"


def demo_home(home: Path) -> Path:
    return home / DEMO_FOLDER


def demo(as_json: bool = JsonOption) -> None:
    """Remember a few sample memories (once) in a demo store of their own, and search them."""
    from cems_cli.config import get_settings

    home = demo_home(get_settings().home)
    report = _run_in(home)
    if as_json:
        emit_json(report)
        return
    _print(report)


def _run_in(home: Path) -> dict[str, Any]:
    from cems_cli.api import Memory
    from cems_cli.config import get_settings
    from cems_cli.paths import pgdata_path, using_home
    from cems_cli.store.embedded import stop_server

    home.mkdir(parents=True, exist_ok=True, mode=0o700)
    get_settings.cache_clear()
    try:
        with using_home(home):
            # Its own embedded server even when CEMS_DATABASE_URL names the user's real database.
            settings = get_settings().model_copy(update={"database_url": None})
            try:
                with Memory(settings) as svc:
                    project = settings.current_project()
                    created = [
                        svc.remember(text, category=category, tags="demo", project=project).created
                        for text, category in DEMO_MEMORIES
                    ]
                    searches = [
                        {
                            "query": query,
                            "results": [
                                {"score": round(r.score, 4), "confidence": round(r.confidence, 4),
                                 "category": r.category, "memory": r.snippet}
                                for r in svc.search(query, limit=3, track_access=False)
                            ],
                        }
                        for query in DEMO_QUERIES
                    ]
            finally:
                # A second PostgreSQL left running after `make run` would only cost the user memory.
                stop_server(pgdata_path(home))
    finally:
        get_settings.cache_clear()
    return {
        "home": str(home),
        "remembered": sum(created),
        "already_stored": len(created) - sum(created),
        "searches": searches,
    }


def _print(report: dict[str, Any]) -> None:
    from rich.table import Table

    console.print(
        f"Remembered {report['remembered']} new memories ({report['already_stored']} already stored) "
        f"in the demo store {report['home']}.",
        markup=False,
    )
    for search in report["searches"]:
        table = Table(title=f"🔎 {search['query']}")
        table.add_column("#", style="dim")
        table.add_column("score", style="green")
        table.add_column("conf", style="green")
        table.add_column("category", style="magenta")
        table.add_column("memory")
        for rank, result in enumerate(search["results"], start=1):
            table.add_row(str(rank), f"{result['score']:.3f}", f"{result['confidence']:.2f}",
                          result["category"], result["memory"])
        console.print(table)
    console.print(
        "Your own memories are not touched by the demo. Start with:\n"
        '  .venv/bin/cems remember "I prefer pytest over unittest" --category preferences\n'
        '  .venv/bin/cems search "which test framework do I like?"',
        markup=False,
    )

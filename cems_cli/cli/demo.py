"""`cems demo`: what `make run` shows — remember a few memories, then search them."""

from __future__ import annotations

from cems_cli.cli.common import console

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


def demo() -> None:
    """Remember a few sample memories (once) and search them."""
    from rich.table import Table

    from cems_cli.cli.common import service

    with service() as svc:
        stored = []
        for text, category in DEMO_MEMORIES:
            memory_id, created = svc.remember(
                text, category=category, tags="demo", project=svc.settings.current_project()
            )
            stored.append((memory_id, created))
        new = sum(1 for _, created in stored if created)
        console.print(f"Remembered {new} new memories ({len(stored) - new} already stored).")
        for query in DEMO_QUERIES:
            results = svc.search(query, limit=3, track_access=False)
            table = Table(title=f"🔎 {query}")
            table.add_column("#", style="dim")
            table.add_column("score", style="green")
            table.add_column("category", style="magenta")
            table.add_column("memory")
            for rank, result in enumerate(results, start=1):
                table.add_row(str(rank), f"{result.score:.3f}", result.category, result.snippet)
            console.print(table)

"""Rich progress bars driven by (done, total) callbacks, so engines report progress without importing rich."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

from cems_cli.cli.common import console


@contextlib.contextmanager
def progress_bar(label: str, *, disabled: bool) -> Iterator[Callable[[int, int], None]]:
    """Yield `update(done, total)`; the bar disappears when done (and never shows with --json)."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TaskProgressColumn,
        TextColumn,
        TimeRemainingColumn,
    )

    columns = (TextColumn(f"{label:<10}"), BarColumn(), MofNCompleteColumn(), TaskProgressColumn(),
               TimeRemainingColumn())
    with Progress(*columns, console=console, disable=disabled, transient=True) as bar:
        task = bar.add_task(label, total=None)
        yield lambda done, total: bar.update(task, completed=done, total=total)

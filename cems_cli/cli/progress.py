"""Rich progress bars driven by (done, total) callbacks, so engines report progress without importing rich."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

from cems_cli.cli.common import console


@contextlib.contextmanager
def progress_bar(label: str, *, disabled: bool, unit: str | None = None
                 ) -> Iterator[Callable[[int, int], None]]:
    """Yield `update(done, total)`; the bar disappears when done (and never shows with --json). With a
    `unit` ("memories"), the bar also shows the rate, as "212 memories/s", beside the time remaining."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        ProgressColumn,
        Task,
        TaskProgressColumn,
        TextColumn,
        TimeRemainingColumn,
    )
    from rich.text import Text

    class Rate(ProgressColumn):
        def render(self, task: Task) -> Text:
            speed = task.finished_speed or task.speed
            return Text(f"{speed:,.0f} {unit}/s" if speed else f"– {unit}/s", style="progress.data.speed")

    columns = [TextColumn(f"{label:<10}"), BarColumn(), MofNCompleteColumn(), TaskProgressColumn(),
               TimeRemainingColumn()]
    if unit:
        columns.insert(4, Rate())
    with Progress(*columns, console=console, disable=disabled, transient=True) as bar:
        task = bar.add_task(label, total=None)
        yield lambda done, total: bar.update(task, completed=done, total=total)

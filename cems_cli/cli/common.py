"""Shared CLI plumbing: consoles, JSON output, and one-line errors with the right exit code."""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Iterator
from typing import Any, NoReturn

import typer
from rich.console import Console

console = Console(highlight=False)
err_console = Console(stderr=True, highlight=False)

JsonOption = typer.Option(False, "--json", help="Print exactly one JSON document on stdout.")


class CliError(Exception):
    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.code = code


def fail(message: str, code: int = 2) -> NoReturn:
    raise CliError(message, code)


def emit_json(payload: Any) -> None:
    sys.stdout.write(json.dumps(payload, ensure_ascii=False, default=str) + "\n")
    sys.stdout.flush()


def short_id(memory_id: str) -> str:
    return memory_id[:8]


@contextlib.contextmanager
def service() -> Iterator[Any]:
    """A MemoryService for one command; closed (connection released) when the command ends."""
    from cems_cli.config import get_settings
    from cems_cli.service import MemoryService

    svc = MemoryService(get_settings())
    try:
        yield svc
    finally:
        svc.close()


def describe_error(error: BaseException) -> tuple[str, int] | None:
    """Known failures become (one-line message, exit code); anything else is a bug (None)."""
    from cems_cli.config import SettingsError
    from cems_cli.service import UserError

    if isinstance(error, CliError):
        return str(error), error.code
    if isinstance(error, (UserError, SettingsError)):
        return str(error), 2
    from cems_cli.embedding.base import EmbeddingError
    from cems_cli.store.db import StoreError
    from cems_cli.store.server import ServerError

    if isinstance(error, (StoreError, ServerError, EmbeddingError)):
        return str(error), 1
    return None

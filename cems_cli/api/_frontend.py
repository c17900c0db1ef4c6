"""What every front end needs around a library call: a `Memory` for one command or tool call, and a known
failure as the one-line message and exit code to show."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from cems_cli.api._memory import Memory
from cems_cli.errors import UserError


@contextlib.contextmanager
def opened() -> Iterator[Memory]:
    """A `Memory` on this process's settings (read once: config.get_settings) for one command or one tool
    call of a front end; closed (its connection released) when that ends."""
    from cems_cli.config import get_settings

    with Memory(get_settings()) as memory:
        yield memory


def describe_error(error: BaseException) -> tuple[str, int] | None:
    """A known failure as (one-line message, exit code) for any front end to show; None for anything else
    (a bug). Bad input exits 2, an unreachable store or embedder 1."""
    from cems_cli.config import SettingsError

    if isinstance(error, (UserError, SettingsError)):
        return str(error), 2
    from cems_cli.embedding.base import EmbeddingError
    from cems_cli.embedding.limits import TextTooLarge

    if isinstance(error, TextTooLarge):
        return str(error), 2
    from cems_cli.store.db import StoreError
    from cems_cli.store.embedded import ServerError

    if isinstance(error, (StoreError, ServerError, EmbeddingError)):
        return str(error), 1
    if isinstance(error, UnicodeEncodeError) and error.reason == "surrogates not allowed":
        # Invalid UTF-8 (from argv, the environment or a file name) that no earlier check caught: still
        # bad input, not a bug, and the database never received it.
        return "a value is not valid UTF-8 (check the arguments and CEMS_* variables)", 2
    return None


def error_line(message: str) -> str:
    """A message as a front end shows it: one line, with no password or API key in it (libpq and HTTP
    libraries quote connection strings and URLs in their messages)."""
    from cems_cli.config import mask_secrets

    return mask_secrets(" ".join(message.split()))

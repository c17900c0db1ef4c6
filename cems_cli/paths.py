"""Where CEMS keeps its files. Stdlib only: the hooks import this on every tool call."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Mapping
from pathlib import Path

# Memories, queries, hook logs and settings backups are private: every process of CEMS (the `cems` command,
# the hooks, the daemons they start) creates its files owner-only, so nothing under CEMS_HOME is readable
# by other users whatever the user's own umask is.
PRIVATE_UMASK = 0o077


def cems_home() -> Path:
    """`CEMS_HOME`, else `$XDG_DATA_HOME/cems`, else `~/.local/share/cems`."""
    explicit = os.environ.get("CEMS_HOME", "").strip()
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_DATA_HOME", "").strip()
    base = Path(xdg).expanduser() if xdg else Path.home() / ".local" / "share"
    return base / "cems"


def make_home(home: Path) -> Path:
    """Create `home` owner-only (0700) if it is missing, whatever the caller's umask: a program that uses
    the library (`cems.open()`) keeps its own umask, typically 022. Its parents are made as usual; a folder
    that exists is left as the user made it."""
    try:
        os.mkdir(home, 0o700)
    except FileNotFoundError:
        home.parent.mkdir(parents=True, exist_ok=True)
        return make_home(home)
    except FileExistsError:
        return home
    os.chmod(home, 0o700)  # mkdir's mode passes through the umask, which may take the owner's bits too
    return home


def rules_snapshot_path(home: Path | None = None) -> Path:
    return (home or cems_home()) / "rules.snapshot.json"


def pgdata_path(home: Path | None = None) -> Path:
    return (home or cems_home()) / "pg"


def config_file_path(home: Path | None = None) -> Path:
    return (home or cems_home()) / "config.toml"


@contextlib.contextmanager
def environ_set(values: Mapping[str, str | None]) -> Iterator[None]:
    """Set these environment variables (None: unset) for the duration, then put back what was there."""
    previous = {name: os.environ.get(name) for name in values}

    def put(items: Mapping[str, str | None]) -> None:
        for name, value in items.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value

    try:
        put(values)
        yield
    finally:
        put(previous)


@contextlib.contextmanager
def using_home(home: Path) -> Iterator[Path]:
    """Make `home` the CEMS_HOME of this process for the duration (settings, caches, the embedded server)."""
    with environ_set({"CEMS_HOME": str(home)}):
        yield home

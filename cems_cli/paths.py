"""Where CEMS keeps its files. Stdlib only: the hooks import this on every tool call."""

from __future__ import annotations

import os
from pathlib import Path


def cems_home() -> Path:
    """`CEMS_HOME`, else `$XDG_DATA_HOME/cems`, else `~/.local/share/cems`."""
    explicit = os.environ.get("CEMS_HOME", "").strip()
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_DATA_HOME", "").strip()
    base = Path(xdg).expanduser() if xdg else Path.home() / ".local" / "share"
    return base / "cems"


def rules_snapshot_path(home: Path | None = None) -> Path:
    return (home or cems_home()) / "rules.snapshot.json"


def pgdata_path(home: Path | None = None) -> Path:
    return (home or cems_home()) / "pg"


def config_file_path(home: Path | None = None) -> Path:
    return (home or cems_home()) / "config.toml"

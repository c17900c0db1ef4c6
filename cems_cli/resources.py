"""Files shipped beside the package: `sql/` and `hooks/` in a clone, `cems_cli/_data/…` in a built wheel."""

from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent


def data_dir(name: str) -> Path:
    for candidate in (_PACKAGE / "_data" / name, _PACKAGE.parent / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"CEMS data folder {name!r} not found next to {_PACKAGE}")

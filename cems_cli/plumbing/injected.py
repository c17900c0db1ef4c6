"""What a session's context already holds: the ids of the memories SessionStart put in its profile.

The prompt hook asks the search server to leave them out, so one request never carries the same memory twice
(once in the `<memory-profile>`, again in the `<memory-recall>` block). One small file per session in
`$CEMS_HOME/injected/` (folder 0700, files 0600, written whole and renamed into place), pruned after a day.

Stdlib only and cheap: the prompt hook reads it on every prompt.
"""

from __future__ import annotations

import json
import os
import time

FOLDER = "injected"
MAX_AGE_SECONDS = 86400.0
MAX_IDS = 200
_MAX_BYTES = 64 * 1024


def _file(home: str, session_id: object) -> str | None:
    """The session's file; None for a session id that is not a plain name (it comes from the client, and
    is never trusted to be a path)."""
    if not isinstance(session_id, str) or not 0 < len(session_id) <= 128:
        return None
    if not all(c.isascii() and (c.isalnum() or c in "-_") for c in session_id):
        return None
    return os.path.join(home, FOLDER, session_id)


def _private_folder(home: str, create: bool) -> str | None:
    from cems_cli.plumbing.private_dir import problem

    folder = os.path.join(home, FOLDER)
    if create:
        try:
            os.makedirs(folder, mode=0o700, exist_ok=True)
        except OSError:
            return None
    # Someone else's folder (or one open to others) is not read from, nor written to.
    return folder if problem(folder, os.geteuid()) is None else None


def remember(home: str, session_id: object, ids: list[str]) -> None:
    """Record the ids this session's profile holds (replacing what an earlier start of it recorded: after
    /clear or a compaction the context holds only the new profile). Never raises."""
    path = _file(home, session_id)
    if path is None:
        return
    try:
        folder = _private_folder(home, create=True)
        if folder is None:
            return
        _prune(folder)
        temporary = f"{path}.{os.getpid()}.tmp"
        handle = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            json.dump([str(i) for i in ids[:MAX_IDS]], out)
        os.replace(temporary, path)
    except OSError:
        return


def injected(home: str, session_id: object) -> list[str]:
    """The ids SessionStart injected into this session ([] when none are known). Never raises."""
    path = _file(home, session_id)
    if path is None or not os.path.exists(path) or _private_folder(home, create=False) is None:
        return []
    try:
        handle = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        with os.fdopen(handle, "rb") as data:
            ids = json.loads(data.read(_MAX_BYTES))
    except (OSError, ValueError):
        return []
    if not isinstance(ids, list):
        return []
    return [i for i in ids[:MAX_IDS] if isinstance(i, str) and 0 < len(i) <= 64]


def _prune(folder: str) -> None:
    """Files of sessions that started more than a day ago: their profile is long out of any context."""
    cutoff = time.time() - MAX_AGE_SECONDS
    try:
        with os.scandir(folder) as entries:
            for entry in entries:
                try:
                    old = entry.stat(follow_symlinks=False).st_mtime < cutoff
                    if old and entry.is_file(follow_symlinks=False):
                        os.unlink(entry.path)
                except OSError:
                    continue
    except OSError:
        return

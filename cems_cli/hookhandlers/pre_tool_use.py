"""PreToolUse hook: enforce CEMS rules on a tool call before it runs.

Path: stdin → rules snapshot (a local JSON file) → matcher → deny / ask / context. No database, no model and
no third-party import: this runs before every tool call. When the snapshot is missing or corrupt, the hook
asks `cems_cli.rules.refresh` to rebuild it from the database once, then allows if that fails.
"""

from __future__ import annotations

import os
import time

from cems_cli.hookio import log_error, pre_tool_use_answer, run_hook
from cems_cli.rules.matcher import decide
from cems_cli.rules.snapshot import (
    REFRESH_FAILED_SUFFIX,
    SnapshotError,
    default_snapshot_path,
    load_rule_views,
)

TYPE_CHECKING = False  # `typing` costs ~25 ms to import; annotations are strings anyway
if TYPE_CHECKING:
    from typing import Any

    from cems_cli.rules.snapshot import SnapshotRule

# After a failed rebuild, skip rebuilding for a while: starting the database on every tool call would add
# a second or more to each one, for a snapshot that is still not coming.
REFRESH_BACKOFF_SECONDS = 30.0


def _refresh_recently_failed(marker: str) -> bool:
    try:
        return time.time() - os.path.getmtime(marker) < REFRESH_BACKOFF_SECONDS
    except OSError:
        return False


def _rebuild_snapshot(path: str) -> None:
    """Ask the store to rewrite the snapshot. Any failure is logged and remembered, never raised."""
    marker = path + REFRESH_FAILED_SUFFIX
    if _refresh_recently_failed(marker):
        return
    saved_stdout = None
    try:
        # Whatever the refresh (or a database server it starts) prints must not reach our stdout, which
        # Claude Code reads as the hook's answer: point fd 1 at stderr while it runs.
        saved_stdout = os.dup(1)
        os.dup2(2, 1)
        from cems_cli.rules.refresh import refresh_snapshot

        refresh_snapshot()
    except BaseException:  # even SystemExit from deep inside: this hook must fail open
        log_error("rules snapshot missing or corrupt and the rebuild failed; allowing tool calls")
        try:
            os.makedirs(os.path.dirname(marker) or ".", exist_ok=True)
            with open(marker, "w", encoding="utf-8") as handle:
                handle.write(f"{time.time()}\n")
        except OSError:
            pass
    finally:
        if saved_stdout is not None:
            os.dup2(saved_stdout, 1)
            os.close(saved_stdout)


def load_rules(path: str | None = None) -> list[SnapshotRule]:
    """The snapshot's rules; rebuilds a missing or corrupt snapshot once; [] when there is still none."""
    path = path or default_snapshot_path()
    try:
        return load_rule_views(path)
    except SnapshotError:
        pass
    _rebuild_snapshot(path)
    try:
        return load_rule_views(path)
    except SnapshotError:
        return []


def handle(payload: dict[str, Any]) -> dict[str, Any] | None:
    event = payload.get("hook_event_name")
    if event is not None and event != "PreToolUse":
        return None
    tool_name = payload.get("tool_name")
    tool_input = payload.get("tool_input")
    if not isinstance(tool_name, str) or not tool_name or not isinstance(tool_input, dict):
        return None
    rules = load_rules()
    if not rules:
        return None
    cwd = payload.get("cwd")
    cwd = cwd if isinstance(cwd, str) and cwd else None

    def current_project() -> str | None:
        # Imported on demand: project detection reads .git/config and pulls in pathlib and configparser.
        if cwd is None:
            return None
        from cems_cli.project import project_for_dir

        return project_for_dir(cwd)

    decision = decide(rules, tool_name, tool_input, project=current_project, cwd=cwd)
    return pre_tool_use_answer(decision)


def main() -> int:
    return run_hook(handle)


if __name__ == "__main__":
    raise SystemExit(main())

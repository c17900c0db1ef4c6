"""PreToolUse hook: enforce CEMS rules on a tool call before it runs.

Path: stdin → built-in guard (`cems_cli.rules.guard`: the agent keeps away from CEMS's files and the hook
settings) → rules snapshot (a local JSON file, checked against the digest CEMS wrote with it) → matcher →
deny / ask / context. No database, no model and no third-party import: this runs before every tool call.

When the snapshot is missing, corrupt or not the one CEMS wrote, the hook asks `cems_cli.rules.refresh` to
rebuild it from the store, within REBUILD_BUDGET_SECONDS. If that fails, it denies the call, saying how to
fix it: a rewritten snapshot is what an agent would write to lift its rules, so "no rules" is never assumed.
Only a home with no snapshot, no digest and no embedded store allows: CEMS was never set up there.
"""

from __future__ import annotations

import os
import time

from cems_cli.plumbing.hookio import log_error, pre_tool_use_answer, run_hook
from cems_cli.rules.matcher import decide
from cems_cli.rules.snapshot import (
    REFRESH_FAILED_SUFFIX,
    SnapshotError,
    default_snapshot_path,
    digest_path,
    load_rule_views,
)

TYPE_CHECKING = False  # `typing` costs ~25 ms to import; annotations are strings anyway
if TYPE_CHECKING:
    from typing import Any

    from cems_cli.rules.snapshot import SnapshotRule

# After a failed rebuild, skip rebuilding for a while: starting the database on every tool call would add
# a second or more to each one, for a snapshot that is still not coming.
REFRESH_BACKOFF_SECONDS = 30.0
# Claude Code gives this hook 5 s (plumbing/hooks_install.py) and lets the tool call run when it is killed:
# a rebuild still going after this long is stopped, and the call denied, before that can happen.
REBUILD_BUDGET_SECONDS = 3.5
# The embedded database's folder in CEMS's home (cems_cli.paths.pgdata_path). Its PG_VERSION appears only
# once initdb has finished (cems_cli.store.embedded renames a complete cluster into place), so a first start
# cut short by the rebuild's budget does not turn a fresh home into one that denies everything.
STORE_DIR = "pg"
# The tools the built-in guard looks at (and MCP tools, by name); others skip even its import.
_GUARDED_TOOLS = frozenset({"Write", "Edit", "MultiEdit", "NotebookEdit", "Bash"})
UNTRUSTED_REASON = (
    "CEMS cannot enforce the user's rules: its rules snapshot is missing or was changed outside CEMS, and "
    "rebuilding it from the store failed. Ask the user to run `cems rule list` in a terminal (it rebuilds "
    "the snapshot); until then every tool call is denied."
)


def _refresh_recently_failed(marker: str) -> bool:
    try:
        return time.time() - os.path.getmtime(marker) < REFRESH_BACKOFF_SECONDS
    except OSError:
        return False


def _on_alarm(signum: int, frame: Any) -> None:
    raise TimeoutError(f"the rules snapshot was not rebuilt within {REBUILD_BUDGET_SECONDS} s")


def _rebuild_snapshot(path: str) -> None:
    """Ask the store to rewrite the snapshot. Any failure is logged and remembered, never raised."""
    marker = path + REFRESH_FAILED_SUFFIX
    if _refresh_recently_failed(marker):
        return
    saved_stdout = None
    alarm = None
    try:
        # Whatever the refresh (or a database server it starts) prints must not reach our stdout, which
        # Claude Code reads as the hook's answer: point fd 1 at stderr while it runs.
        saved_stdout = os.dup(1)
        os.dup2(2, 1)
        try:
            import _signal  # the C module, as the matcher uses: `signal` builds enums on import

            previous = _signal.signal(_signal.SIGALRM, _on_alarm)
            alarm = (_signal, previous)
            _signal.setitimer(_signal.ITIMER_REAL, REBUILD_BUDGET_SECONDS)
        except (ImportError, AttributeError, ValueError):
            pass  # no interval timers (Windows): the rebuild runs unbounded
        from cems_cli.rules.refresh import refresh_snapshot

        refresh_snapshot()
    except BaseException:  # even SystemExit from deep inside: the answer is decided by the caller
        log_error("rules snapshot missing, corrupt or changed outside CEMS, and the rebuild failed")
        try:
            os.makedirs(os.path.dirname(marker) or ".", exist_ok=True)
            with open(marker, "w", encoding="utf-8") as handle:
                handle.write(f"{time.time()}\n")
        except OSError:
            pass
    finally:
        if alarm is not None:
            signals, previous = alarm
            signals.setitimer(signals.ITIMER_REAL, 0)
            signals.signal(signals.SIGALRM, signals.SIG_DFL if previous is None else previous)
        if saved_stdout is not None:
            os.dup2(saved_stdout, 1)
            os.close(saved_stdout)


def load_rules(path: str | None = None) -> list[SnapshotRule] | None:
    """The snapshot's rules, once they match their digest; rebuilds the snapshot once when they do not.
    [] when there never was a snapshot here; None when there is one that cannot be trusted nor rebuilt."""
    path = path or default_snapshot_path()
    try:
        return load_rule_views(path)
    except SnapshotError:
        pass
    _rebuild_snapshot(path)
    try:
        return load_rule_views(path)
    except SnapshotError:
        pass
    store = os.path.join(os.path.dirname(path), STORE_DIR, "PG_VERSION")
    if not os.path.lexists(path) and not os.path.lexists(digest_path(path)) and not os.path.exists(store):
        return []  # never set up (no snapshot, no digest, no embedded store): there are no rules to lose
    return None


def _on_timeout() -> str:
    from cems_cli.rules.timeout_policy import rules_on_timeout

    return rules_on_timeout()


def handle(payload: dict[str, Any]) -> dict[str, Any] | None:
    event = payload.get("hook_event_name")
    if event is not None and event != "PreToolUse":
        return None
    tool_name = payload.get("tool_name")
    tool_input = payload.get("tool_input")
    if not isinstance(tool_name, str) or not tool_name or not isinstance(tool_input, dict):
        return None
    cwd = payload.get("cwd")
    cwd = cwd if isinstance(cwd, str) and cwd else None
    guarded = None
    if tool_name in _GUARDED_TOOLS or tool_name.startswith("mcp__"):
        from cems_cli.rules.guard import check

        # Decided before the snapshot is read: it holds whatever the snapshot says, or when there is none.
        guarded = check(tool_name, tool_input, cwd)
    rules = load_rules()
    if rules is None:
        return pre_tool_use_answer(guarded) if guarded is not None else {"hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": UNTRUSTED_REASON,
        }}
    if not rules:
        return pre_tool_use_answer(guarded)

    def current_project() -> str | None:
        # Imported on demand: project detection reads .git/config and pulls in pathlib and configparser.
        if cwd is None:
            return None
        from cems_cli.project import project_for_dir

        return project_for_dir(cwd)

    decision = decide(rules, tool_name, tool_input, project=current_project, cwd=cwd, on_timeout=_on_timeout)
    if guarded is not None and (decision is None or decision.action != "block"):
        return pre_tool_use_answer(guarded)
    if decision is not None:
        # Counted for the rules page of `cems ui`; only when a rule fires, so the usual call pays nothing.
        from cems_cli.plumbing.hookio import cems_home
        from cems_cli.rules.hits import record

        record(cems_home(), str(decision.rule.id), decision.action, time.time())
    return pre_tool_use_answer(decision)  # the user's own block (`rm -rf /`) gives its own reason


def main() -> int:
    return run_hook(handle)


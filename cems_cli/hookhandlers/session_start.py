"""SessionStart hook: inject the profile (pinned guidelines, preferences, recent project context).

Asks the warm search server when it runs; otherwise builds the profile in-process (SQL only, no model) and
starts the server in the background so the session's first prompt finds it warm. Also refreshes the rules
snapshot, so rules a teammate shared reach this machine's PreToolUse hook.
"""

from __future__ import annotations

import os

from cems_cli.defaults import PROFILE_TOKEN_BUDGET
from cems_cli.plumbing.hookio import additional_context_answer, cems_home, log_error, run_hook


def _in_process_profile(project: str | None, budget: int) -> tuple[str, list[str]]:
    from cems_cli.api import Memory
    from cems_cli.config import get_settings

    with Memory(get_settings()) as memory:
        try:
            memory.rules.refresh()
        except Exception:
            log_error("rules snapshot refresh failed at session start")
        return memory.profile_with_ids(project, budget)


def handle(payload: dict) -> dict | None:
    cwd = payload.get("cwd")
    from cems_cli.project import project_for_dir
    from cems_cli.server.client import call, socket_path, spawn

    project = os.environ.get("CEMS_PROJECT") or (
        project_for_dir(cwd) if isinstance(cwd, str) and cwd else None
    )
    home = cems_home()
    answer = None
    if os.path.exists(socket_path(home)):
        answer = call(
            home,
            {
                "op": "profile",
                "project": project,
                "token_budget": PROFILE_TOKEN_BUDGET,
                "user": os.environ.get("CEMS_USER") or None,
                "team": os.environ.get("CEMS_TEAM") or None,
            },
            2.0,
        )
    if answer is not None and "text" in answer:
        text, ids = answer["text"], answer.get("ids") or []
    else:
        spawn(home)
        text, ids = _in_process_profile(project, PROFILE_TOKEN_BUDGET)
    from cems_cli.plumbing.injected import remember

    # What the profile shows, the session's prompts need not recall again (user_prompt_submit).
    remember(home, payload.get("session_id"), ids if text and isinstance(ids, list) else [])
    return additional_context_answer("SessionStart", text) if text else None


def main() -> int:
    return run_hook(handle)

"""UserPromptSubmit hook: recall memories relevant to the prompt and inject them as context.

Asks the warm search server (starting it if needed) within a time budget, so the hook itself stays stdlib
only. A trivial prompt ("ok", "continue") injects nothing: recall there is noise, and it costs a search.
"""

from __future__ import annotations

import math
import os
import re
import time

# What the prompt hook injects is defined once, in cems_cli.defaults (cheap, stdlib only).
from cems_cli import defaults
from cems_cli.plumbing.hookio import additional_context_answer, cems_home, run_hook

TYPE_CHECKING = False  # `typing` costs ~25 ms to import on every prompt; annotations are strings anyway
if TYPE_CHECKING:
    from collections.abc import Mapping

_TRIVIAL = re.compile(
    r"^(?:y|n|yes|no|ok|okay|k|sure|yep|yeah|nope|thanks|thank you|thx|ty|continue|go on|go ahead|proceed|"
    r"do it|done|next|lgtm|sounds good|looks good|great|perfect|cool|nice|good|fine|right|correct|again|"
    r"retry|try again|stop|wait|hmm|hm)[\s.!?]*$",
    re.IGNORECASE,
)
_TAGS = re.compile(r"<(command-[\w-]+|local-command-stdout)>.*?</\1>", re.DOTALL)


def is_trivial(prompt: str) -> bool:
    text = _TAGS.sub(" ", prompt).strip()
    if len(text) < 3 or _TRIVIAL.match(text):
        return True
    return len(re.findall(r"\w+", text)) < 2


def _setting(name: str, default: float) -> float:
    try:
        value = float(os.environ.get(name, default))
    except ValueError:
        return default
    return value if value > 0 else default


_ANSWER_MARGIN = 0.15  # seconds kept for the reply to travel back, be formatted and printed

# Every CEMS_RECALL_<NAME> of the environment is sent as `<name>` (the search server takes the names of its
# recall options, RecallOptions.knobs(), and ignores the rest), so a new knob needs no change here. The time
# budget is the hook's own, and the request's own keys are never overridden.
_RECALL_PREFIX = "CEMS_RECALL_"
_RECALL_OWN = frozenset({"time_budget", "op", "query", "project", "user", "team", "mode", "exclude",
                         "budget_ms"})


def _recall_overrides(environ: Mapping[str, str]) -> dict[str, int | float]:
    """The recall knobs this environment sets: finite positive numbers only (what is unset, malformed,
    infinite or not positive is left to the server's settings)."""
    overrides: dict[str, int | float] = {}
    for name, raw in environ.items():
        key = name[len(_RECALL_PREFIX):].lower()
        if not name.startswith(_RECALL_PREFIX) or key in _RECALL_OWN:
            continue
        try:
            value = float(raw)
        except ValueError:
            continue
        if math.isfinite(value) and value > 0:
            overrides[key] = int(value) if value.is_integer() else value
    return overrides


def handle(payload: dict) -> dict | None:
    started = time.monotonic()
    prompt = payload.get("prompt")
    if not isinstance(prompt, str) or is_trivial(prompt):
        return None
    budget = _setting("CEMS_RECALL_TIME_BUDGET", defaults.RECALL_TIME_BUDGET)
    cwd = payload.get("cwd")
    from cems_cli.project import project_for_dir

    project = os.environ.get("CEMS_PROJECT") or (
        project_for_dir(cwd) if isinstance(cwd, str) and cwd else None
    )
    request: dict[str, object] = {
        "op": "search",
        "query": _TAGS.sub(" ", prompt).strip()[:2000],
        "project": project,
        "user": os.environ.get("CEMS_USER") or None,
        "team": os.environ.get("CEMS_TEAM") or None,
    }
    # Only what this environment sets: the server fills in the rest from its settings, where a value
    # stored with `cems config set` (or config.toml) applies without restarting anything.
    request.update(_recall_overrides(os.environ))
    if os.environ.get("CEMS_SEARCH_MODE"):
        request["mode"] = os.environ["CEMS_SEARCH_MODE"]
    from cems_cli.plumbing.injected import injected

    # The session's profile is in the context already: its memories are not injected a second time.
    shown = injected(cems_home(), payload.get("session_id"))
    if shown:
        request["exclude"] = shown
    # The search gets the rest of the budget, less what the answer's way back and this hook's output take:
    # its LLM stages share it, so a slow endpoint cannot make the prompt wait past the budget.
    remaining = budget - (time.monotonic() - started)
    request["budget_ms"] = max(1, int((remaining - _ANSWER_MARGIN) * 1000))
    from cems_cli.server.client import call_or_start

    answer = call_or_start(cems_home(), request, budget - (time.monotonic() - started))
    if not answer or not answer.get("results"):
        return None
    text = answer.get("recall")
    if not isinstance(text, str):  # a server started by an earlier version, still running: format here
        from cems_cli.engine.recall import format_recall

        text = format_recall(answer["results"], project)
    return additional_context_answer("UserPromptSubmit", text) if text else None


def main() -> int:
    return run_hook(handle)

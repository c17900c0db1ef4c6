"""UserPromptSubmit hook: recall memories relevant to the prompt and inject them as context.

Asks the warm search server (starting it if needed) within a time budget, so the hook itself stays stdlib
only. A trivial prompt ("ok", "continue") injects nothing: recall there is noise, and it costs a search.
"""

from __future__ import annotations

import os
import re
import time

from cems_cli.hookio import additional_context_answer, cems_home, run_hook

DEFAULT_TIME_BUDGET = 1.5  # seconds; CEMS_RECALL_TIME_BUDGET
DEFAULT_TOKEN_BUDGET = 1000  # CEMS_RECALL_TOKEN_BUDGET
# Which memories are worth injecting (measured with `cems eval --sessions`, see bench/RESULTS.md). Once
# capture stores compact learnings, patterns and rules, a third memory rarely adds a fact the first two lack:
# 3 at ≥ 0.6 of the best kept fact recall in 4 of the benchmark's 5 projects (one fact fewer in the fifth)
# and cut injected noise in all 5, against 4 at ≥ 0.5 (0.878 → 0.870 recall, 41% → 35% noise overall).
DEFAULT_MIN_SCORE = 0.1  # CEMS_RECALL_MIN_SCORE: below this a memory is more likely noise than help
DEFAULT_MIN_RELATIVE = 0.6  # CEMS_RECALL_MIN_RELATIVE: nor below this share of the best result's score
# CEMS_RECALL_MIN_SIMILARITY: a memory that shares no word with the prompt is injected only this close in
# meaning. Stricter than `cems search` (0.15), where the user asked: MiniLM puts nonsense such as "xyzzy
# plugh frobnicate" at 0.23 from a real memory. No useful memory of the capture benchmark was lost to it.
DEFAULT_MIN_SIMILARITY = 0.3
DEFAULT_LIMIT = 3  # CEMS_RECALL_LIMIT

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


def handle(payload: dict) -> dict | None:
    started = time.monotonic()
    prompt = payload.get("prompt")
    if not isinstance(prompt, str) or is_trivial(prompt):
        return None
    budget = _setting("CEMS_RECALL_TIME_BUDGET", DEFAULT_TIME_BUDGET)
    cwd = payload.get("cwd")
    from cems_cli.project import project_for_dir

    project = os.environ.get("CEMS_PROJECT") or (
        project_for_dir(cwd) if isinstance(cwd, str) and cwd else None
    )
    request = {
        "op": "search",
        "query": _TAGS.sub(" ", prompt).strip()[:2000],
        "project": project,
        "user": os.environ.get("CEMS_USER") or None,
        "team": os.environ.get("CEMS_TEAM") or None,
        "limit": int(_setting("CEMS_RECALL_LIMIT", DEFAULT_LIMIT)),
        "token_budget": int(_setting("CEMS_RECALL_TOKEN_BUDGET", DEFAULT_TOKEN_BUDGET)),
        "min_score": _setting("CEMS_RECALL_MIN_SCORE", DEFAULT_MIN_SCORE),
        "min_relative": _setting("CEMS_RECALL_MIN_RELATIVE", DEFAULT_MIN_RELATIVE),
        "min_similarity": _setting("CEMS_RECALL_MIN_SIMILARITY", DEFAULT_MIN_SIMILARITY),
        "mode": os.environ.get("CEMS_SEARCH_MODE") or "hybrid",
    }
    from cems_cli.server.client import call_or_start

    answer = call_or_start(cems_home(), request, budget - (time.monotonic() - started))
    if not answer or not answer.get("results"):
        return None
    from cems_cli.recall import format_recall

    text = format_recall(answer["results"])
    return additional_context_answer("UserPromptSubmit", text) if text else None


def main() -> int:
    return run_hook(handle)

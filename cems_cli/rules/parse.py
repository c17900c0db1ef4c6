"""The one-line rule form and rules files.

    [ACTION ]TOOL: PATTERN[ — REASON]

`Bash: git push --force* — force pushes rewrite history` blocks force pushes. The reason follows an em dash
(` — `, or an en dash ` – `) or ` -- `; ACTION (block, ask or warn) defaults to block. Tool names contain no
spaces or colons, so the first colon always ends the tool. A rules file holds one rule per line; blank lines
and lines starting with `#` are skipped.
"""

from __future__ import annotations

from typing import Any, TypedDict

from cems_cli.rules.matcher import ACTIONS
from cems_cli.rules.model import Rule, make_rule

_DASHES = (" — ", " – ")
_DOUBLE_HYPHEN = " -- "


class RuleParts(TypedDict):
    """The parts of a one-line rule, as `make_rule` takes them."""

    tool: str
    pattern: str
    reason: str
    action: str


def _split_reason(rest: str) -> tuple[str, str]:
    """Pattern and reason. An em/en dash splits at its first occurrence (reasons may contain dashes); ` -- `
    at its last, because shell patterns may contain it themselves (`git checkout -- *`)."""
    dash_positions = [(rest.find(dash), dash) for dash in _DASHES if dash in rest]
    if dash_positions:
        index, dash = min(dash_positions)
        return rest[:index], rest[index + len(dash):]
    if rest.endswith((" —", " –")):  # a dangling dash with no reason after it
        return rest[:-2], ""
    index = rest.rfind(_DOUBLE_HYPHEN)
    if index >= 0:
        return rest[:index], rest[index + len(_DOUBLE_HYPHEN):]
    return rest, ""


def _looks_like_tool(word: str) -> bool:
    return word[:1].isupper() or word.startswith(("mcp__", "*"))


def parse_one_line(text: str) -> RuleParts:
    """`"Bash: git push --force* — reason"` → {"tool", "pattern", "reason", "action"}. Raises ValueError.

    The parts are not validated here beyond their shape; pass them to `make_rule(**parts)`.
    """
    line = " ".join(text.split("\n")).strip()  # a pasted rule may wrap; it is still one rule
    head, colon, rest = line.partition(":")
    if not colon:
        raise ValueError(f"expected 'Tool: pattern — reason', got {line!r}")
    words = head.split()
    action = "block"
    if len(words) == 2 and (words[0].lower() in ACTIONS or _looks_like_tool(words[1])):
        # "warn Bash: ..."; "nuke Bash: ..." is a bad action, "curl http://..." is a missing tool
        action, words = words[0].lower(), words[1:]
        if action not in ACTIONS:
            raise ValueError(f"unknown action {action!r} (expected block, ask or warn)")
    if len(words) != 1:
        raise ValueError(f"expected 'Tool: pattern — reason', got {line!r} (tool names have no spaces)")
    pattern, reason = _split_reason(rest)
    pattern = pattern.strip()
    if not pattern:
        raise ValueError("pattern must not be empty")
    return {"tool": words[0], "pattern": pattern, "reason": reason.strip(), "action": action}


def parse_rules_file(text: str, **rule_options: Any) -> list[Rule]:
    """Rules from a file in the one-line form, all-or-nothing: any bad line raises one ValueError naming
    every bad line (`line 3: unknown action ...`). `rule_options` (project, scope, user_id, team_id, ...)
    go to `make_rule` for every rule."""
    rules: list[Rule] = []
    errors: list[str] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        try:
            rules.append(make_rule(**parse_one_line(line), **rule_options))
        except ValueError as err:
            errors.append(f"line {number}: {err}")
    if errors:
        raise ValueError("; ".join(errors))
    return rules

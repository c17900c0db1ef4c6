"""Domain vocabulary shared by every layer: categories, scopes, pin categories."""

from __future__ import annotations

from enum import StrEnum

from cems_cli.errors import UserError


class MemoryCategory(StrEnum):
    PREFERENCES = "preferences"
    DECISIONS = "decisions"
    PATTERNS = "patterns"
    CONTEXT = "context"
    LEARNINGS = "learnings"
    GENERAL = "general"
    RULES = "rules"


class MemoryScope(StrEnum):
    PERSONAL = "personal"
    SHARED = "shared"


class SearchScope(StrEnum):
    PERSONAL = "personal"
    SHARED = "shared"
    BOTH = "both"


class PinCategory(StrEnum):
    GUIDELINE = "guideline"
    CONVENTION = "convention"
    ARCHITECTURE = "architecture"
    STANDARD = "standard"
    DOCUMENTATION = "documentation"


# Memories a capture trigger wrote (the Stop hook's worker, the observer, tool outcomes), as opposed to what a
# person wrote, imported or pinned. Search weighs them below the user's own words (retrieval/adjust.py).
CAPTURED_SOURCES = frozenset({"session", "observer", "tool"})
# What the agent stored itself (the MCP `remember` tool): chosen, unlike a capture, but the agent's words, not
# the person's, and an agent can be steered by the repository it reads. Cited and weighed as the agent's.
AGENT_SOURCE = "mcp"


def project_of(source_ref: str | None) -> str:
    """The project part of a source_ref (`project:org/repo:session:…` → `project:org/repo`), '' for none;
    store/lifecycle.PROJECT_SQL computes the same in SQL."""
    if not source_ref or not source_ref.startswith("project:"):
        return ""
    name, _, _rest = source_ref[len("project:") :].partition(":")
    return "project:" + name


def parse_choice(enum_cls: type[StrEnum], value: str, what: str) -> StrEnum:
    """Turn user text into an enum member, or raise UserError (a ValueError) naming the allowed values."""
    try:
        return enum_cls(value.strip().lower())
    except ValueError:
        allowed = ", ".join(m.value for m in enum_cls)
        raise UserError(f"unknown {what} {value!r} (expected one of: {allowed})") from None

"""What a search returns: the one result type every front end shows (CLI, hooks, MCP, library)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from cems_cli.models import AGENT_SOURCE


@dataclass
class SearchResult:
    id: str
    score: float
    category: str
    content: str
    snippet: str
    title: str | None
    tags: list[str]
    scope: str
    source_ref: str | None
    pinned: bool
    created_at: datetime
    explain: dict[str, Any] = field(default_factory=dict)
    context: list[str] = field(default_factory=list)  # neighbouring chunks of a long memory
    source: str | None = None  # manual, session, observer, tool, import, rule…
    confidence: float = 0.0  # how likely this memory answers the query, 0..1 (retrieval/confidence.py)
    # Below the confidence floor (CEMS_RECALL_MIN_CONFIDENCE): shown only when all results were asked for.
    weak: bool = False

    @property
    def citation(self) -> str:
        """Where the memory came from, for an agent to cite: see `citation`."""
        return citation(self.source, self.source_ref)

    def to_json(self, with_explain: bool = False) -> dict[str, Any]:
        data = {
            "id": self.id,
            "score": round(self.score, 6),
            "confidence": round(self.confidence, 4),
            "category": self.category,
            "content": self.content,
            "snippet": self.snippet,
            "title": self.title,
            "tags": self.tags,
            "scope": self.scope,
            "source_ref": self.source_ref,
            "pinned": self.pinned,
            "created_at": self.created_at.isoformat(),
            "source": self.source,
            "citation": self.citation,
            "weak": self.weak,
        }
        if self.context:
            data["context"] = self.context
        if with_explain:
            data["explain"] = self.explain
        return data


_CAPTURED = {"session": "Claude Code session", "observer": "Claude Code session", "tool": "tool calls"}
_NAMED = {AGENT_SOURCE: "stored by the agent", "import": "imported"}


def citation(source: str | None, source_ref: str | None) -> str:
    """A short human-readable origin: "session 1a2b3c4d, transcript line 12 (project acme/api)", "tool
    calls in project acme/api", "written by hand (project acme/api)", "stored by the agent", "imported".
    Only the person's own memories (`cems remember`, the library) are "written by hand"; what the agent
    stored through MCP is cited as the agent's."""
    parts = (source_ref or "").split(":")
    project = parts[1] if len(parts) > 1 and parts[0] == "project" else None
    where = f" (project {project})" if project else ""
    if "session" in parts:
        at = parts.index("session")
        session = parts[at + 1][:8] if at + 1 < len(parts) else ""
        line = next((p[1:] for p in parts[at + 2 :] if p[:1] == "L" and p[1:].isdigit()), None)
        text = f"session {session}" + (f", transcript line {line}" if line else "")
        return text + where
    if source == "summary":
        return f"summary of memories{where}"
    if source in _CAPTURED:
        return f"{_CAPTURED[source]}{' in project ' + project if project else ''}"
    if source in _NAMED:
        return f"{_NAMED[source]}{where}"
    if source in (None, "manual", "cli"):
        return f"written by hand{where}"
    return f"{source}{where}"

"""What hooks inject into the agent's context: recalled memories and the session profile."""

from __future__ import annotations

TYPE_CHECKING = False  # the prompt hook imports this module: `typing` alone costs it ~3 ms
if TYPE_CHECKING:
    from typing import Any

    from cems_cli.service import MemoryService



def _line(memory_id: str, category: str, created: str, text: str) -> str:
    flat = " ".join(text.split())
    return f"- [{memory_id[:8]}] ({category}, {created[:10]}) {flat}"


def format_recall(results: list[dict[str, Any]]) -> str:
    """A `<memory-recall>` block of factual statements, with ids so the agent can cite or forget them."""
    if not results:
        return ""
    lines = [
        _line(r["id"], r["category"], r.get("created_at", ""), r.get("snippet") or r["content"])
        for r in results
    ]
    return (
        "<memory-recall>\nMemories from earlier sessions that may be relevant (id, category, date):\n"
        + "\n".join(lines)
        + "\n</memory-recall>"
    )


def build_profile(svc: MemoryService, project: str | None, budget: int) -> str:
    """Pinned guidelines, top preferences, then recent context and learnings of this project, in budget."""
    from cems_cli.store.profile import profile_sections
    from cems_cli.text.tokens import estimate_tokens

    sections = profile_sections(svc.conn, svc.identity, project)
    parts: list[str] = []
    used = 0
    seen: set[str] = set()
    for title, records in sections:
        lines = []
        for record in records:
            if record.id in seen:
                continue
            line = _line(record.id, record.category, record.created_at.isoformat(), record.content)
            cost = estimate_tokens(line)
            if used + cost > budget:
                break
            seen.add(record.id)
            used += cost
            lines.append(line)
        if lines:
            parts.append(f"{title}:\n" + "\n".join(lines))
    if not parts:
        return ""
    where = f" for {project}" if project else ""
    return f"<memory-profile>\nWhat CEMS remembers{where}:\n" + "\n\n".join(parts) + "\n</memory-profile>"

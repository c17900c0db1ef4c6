"""What hooks inject into the agent's context: recalled memories and the session profile."""

from __future__ import annotations

from cems_cli.text.inert import for_model

TYPE_CHECKING = False  # the prompt hook imports this module: `typing` alone costs it ~3 ms
if TYPE_CHECKING:
    from typing import Any

    from cems_cli.engine.service import MemoryService


def _line(memory_id: str, category: str, created: str, text: str, about: str = "") -> str:
    """One line per memory, whatever its text or provenance holds (a line break in either could fake the
    next memory's line): every run of whitespace, line separators included, becomes one space."""
    flat, about = " ".join(text.split()), " ".join(about.split())
    return f"- [{memory_id[:8]}] ({category}, {created[:10]}{about}) {flat}"


def _about(result: dict[str, Any], project: str | None) -> str:
    """", confidence 0.82; session 1a2b3c4d, transcript line 12": how sure, and where it came from (the
    project part is left out for the prompt's own project)."""
    parts = []
    if isinstance(result.get("confidence"), (int, float)):
        parts.append(f", confidence {result['confidence']:.2f}")
    cited = result.get("citation")
    if isinstance(cited, str) and cited:
        parts.append(f"; {_here(cited, project)}")
    return "".join(parts)


def _here(cited: str, project: str | None) -> str:
    """A citation without the project part when it is the current project's."""
    if project:
        cited = cited.replace(f" (project {project.removeprefix('project:')})", "")
        cited = cited.replace(f" in project {project.removeprefix('project:')}", "")
    return cited


def format_recall(results: list[dict[str, Any]], project: str | None = None) -> str:
    """A `<memory-recall>` block of factual statements, with ids so the agent can cite or forget them, how
    likely each is to answer the prompt, and where each came from."""
    if not results:
        return ""
    lines = [
        _line(r["id"], r["category"], r.get("created_at", ""), r.get("snippet") or r["content"],
              _about(r, project))
        for r in results
    ]
    header = "Memories from earlier sessions that may be relevant (id, category, date, confidence, source):"
    return _block("memory-recall", header + "\n" + "\n".join(lines))


def _block(tag: str, body: str) -> str:
    """`<tag>` body `</tag>`, the body inert (cems_cli/text/inert.py): every part of it (text, title,
    source, project name) is data a hostile repository may have written, and none of it may close this
    block or open another one."""
    return f"<{tag}>\n{for_model(body)}\n</{tag}>"


def build_profile(svc: MemoryService, project: str | None, budget: int) -> str:
    """Pinned guidelines, top preferences, then recent context and learnings of this project, in budget;
    each with where it came from (a pin from an import or from the agent is not the person's guideline)."""
    return profile_with_ids(svc, project, budget)[0]


def profile_with_ids(svc: MemoryService, project: str | None, budget: int) -> tuple[str, list[str]]:
    """The profile block and the ids of the memories it shows (the prompt hook leaves those out)."""
    from cems_cli.results import citation
    from cems_cli.store.memories import pinned_by
    from cems_cli.store.profile import PINNED, profile_sections
    from cems_cli.text.tokens import estimate_tokens

    sections = profile_sections(svc.conn, svc.identity, project)
    # A pinned shared memory names who pinned it: a guideline in every teammate's session is someone's.
    pinned_shared = [r.id for title, records in sections if title == PINNED for r in records
                     if r.scope == "shared"]
    pinners = pinned_by(svc.conn, pinned_shared, svc.identity) if pinned_shared else {}
    parts: list[str] = []
    used = 0
    seen: set[str] = set()
    for title, records in sections:
        lines = []
        for record in records:
            if record.id in seen:
                continue
            about = f"; {_here(citation(record.source, record.source_ref), project)}"
            if record.id in pinners and title == PINNED:
                about += f"; pinned by {pinners[record.id]}"
            line = _line(record.id, record.category, record.created_at.isoformat(), record.content, about)
            cost = estimate_tokens(line)
            if used + cost > budget:
                break
            seen.add(record.id)
            used += cost
            lines.append(line)
        if lines:
            parts.append(f"{title}:\n" + "\n".join(lines))
    if not parts:
        return "", []
    where = f" for {' '.join(project.split())}" if project else ""
    return _block("memory-profile", f"What CEMS remembers{where}:\n" + "\n\n".join(parts)), list(seen)

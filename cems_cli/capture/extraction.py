"""The LLM extraction of memories from chunks: the system prompt, the user prompt, and reading the answer."""

from __future__ import annotations

from typing import Any

from cems_cli.capture.digests import session_tags
from cems_cli.capture.observations import LLM_CATEGORIES, NO_OBSERVE_MARKER, Chunk, Observation, clip

EXTRACTION_SYSTEM = """You turn a coding agent's session transcript into long-term memories for its developer.
Answer with one JSON object: {"observations": [{"category": "...", "title": "...", "text": "..."}]}.
Categories:
- learnings: a problem and its verified cause or fix, only when the transcript shows it;
  keep the exact error text. Also what the agent found out about the project and said in its answer
  (where something is defined or configured, which file reads which setting, a config key or value, a
  version, a port), with the request it answers in a few words; also when the session only read files.
- decisions: a choice that was made and why, only when the reason is stated.
- patterns: a convention or habitual way of working in this project (how it is built, tested, run).
- preferences: how the user wants things done, only when the user said so.
A record of what the session did is kept separately: do not summarise the session.
Each text is one self-contained factual statement of at most 400 characters that names the project, files,
commands or errors involved, so a later search finds it. No speculation, no advice, no chit-chat, no
pleasantries or plans ("Done.", "Let me know if…", "I'll now…"), nothing the user asked restated. State each
fact once: a decision the user gave and the answer repeated is one observation.
Return at most 8 observations; return {"observations": []} when nothing is worth remembering."""

_MAX_OBSERVATIONS = 8


def extraction_prompt(chunks: list[Chunk]) -> str:
    body = "\n\n".join(chunk.text for chunk in chunks)
    # The marker makes a transcript of this very request (if the endpoint is itself Claude Code) unobserved.
    return f"{NO_OBSERVE_MARKER}\nTranscript excerpt:\n\n{body}"


def parse_extraction(answer: dict[str, Any] | None, chunks: list[Chunk]) -> list[Observation] | None:
    """Observations from the model's answer; None when the answer is not in the asked shape (a failure)."""
    if not isinstance(answer, dict) or not isinstance(answer.get("observations"), list):
        return None
    last = chunks[-1]
    tags: list[str] = []
    for chunk in chunks:
        for tag in session_tags(chunk.session_id, chunk.branch):
            if tag not in tags:
                tags.append(tag)
    found: list[Observation] = []
    for item in answer["observations"][:_MAX_OBSERVATIONS]:
        if not isinstance(item, dict):
            continue
        text = item.get("text")
        category = str(item.get("category") or "").strip().lower()
        if not isinstance(text, str) or not text.strip() or category not in LLM_CATEGORIES:
            continue  # a session summary or an unknown kind: the session record covers what happened
        title = item.get("title")
        found.append(
            Observation(
                text=clip(text, 1000),
                category=category,
                tags=list(tags),
                project=last.project,
                title=clip(title, 80) if isinstance(title, str) and title.strip() else None,
                created_at=last.last_at or None,
                session_id=last.session_id,
                line=chunks[0].line,
            )
        )
    return found

"""A closed chunk's deterministic digest: its observations (changes, failures and fixes, decisions, findings),
the session summary, and the text the LLM extraction reads."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from cems_cli.capture.extract import (
    decision_sentences,
    finding_sentences,
    near_duplicate,
    pattern_statements,
    preference_sentences,
    request_gist,
)
from cems_cli.capture.observations import Observation, _inspects, clip, command_key
from cems_cli.capture.sessions import time_span

if TYPE_CHECKING:
    from cems_cli.capture.chunks import _Open


_LEADING_CD = re.compile(r"^`cd\s+[^`&]*?&&\s*")


def session_tags(session_id: str, branch: str = "") -> list[str]:
    tags = [f"session:{session_id}"] if session_id else []
    if branch:
        tags.append(f"branch:{branch}")
    return tags


def _session_summary(chunk: _Open) -> dict[str, Any]:
    """What this turn adds to its session's record (capture/sessions.py)."""
    asked = [p for p in chunk.prompts if not p.startswith("/")]
    return {
        "project": chunk.project,
        "branch": chunk.branch,
        "first_at": chunk.first_at,
        "last_at": chunk.last_at,
        "asked": [clip(p, 200) for p in asked[:1]],
        "changed": list(chunk.changed),
        "commands": [c for c in chunk.commands if c in chunk.succeeded],
        # Ran something besides looking around (`ls`, `git status`, `kubectl get`): a turn that only looked
        # and answered leaves no record (sessions.worth_remembering).
        "acted": any(not _inspects(c) for c in chunk.commands),
        "blocked": list(chunk.blocked),
        "denied": list(chunk.denied),
        "errors": [e for e in chunk.errors if e.split(":", 1)[0] not in chunk.fixed],
        "fixed_commands": list(chunk.fixed),
        "fixes": len(chunk.learnings),
    }


def _digest(chunk: _Open) -> list[Observation]:
    """The turn's memories besides the session record: learnings, decisions, preferences, patterns, and what
    the answer found out. One memory per fact: what the prompt said and the answer repeated is kept once."""
    tags = session_tags(chunk.session_id, chunk.branch)
    found: list[Observation] = []
    seen: set[str] = set()

    def add(category: str, text: str, title: str, *, line: int = 0, key: str = "", count: int = 1,
            roll: str = "", item: str = "") -> None:
        normal = " ".join(text.lower().split())
        if normal in seen:
            return
        seen.add(normal)
        found.append(
            Observation(
                text=text,
                category=category,
                tags=list(tags),
                project=chunk.project,
                title=clip(title, 80),
                created_at=chunk.last_at or None,
                session_id=chunk.session_id,
                line=line or chunk.line,
                key=key,
                count=count,
                roll=roll,
                item=item,
            )
        )

    for learning in chunk.learnings:
        # The title names the command, not the folder it was run from (`cd /Users/…/frontend && npm test`
        # gave every failure of one session the same 80-character title).
        add("learnings", learning, "Fix: " + _LEADING_CD.sub("`", learning))
    where = f" in {chunk.project.removeprefix('project:')}" if chunk.project else ""
    for blocked in chunk.blocked:  # "`command` (reason)", see _tool_output
        # What the agent may not do here, and why: the answer to "can I force-push to main?" next week.
        command, _, reason = blocked.partition(" (")
        reason = reason.removesuffix(")")
        text = f"{command} is blocked by a rule{where}" + (f": {reason}" if reason else ".")
        # Tried again (this turn, or another session): the same memory, counted (Observer._store_counted).
        key = "blocked\n" + "\n".join((chunk.project or "", command_key(command.strip("`")), reason))
        add("learnings", text, f"Blocked: {command}", key=key, count=chunk.blocked_times.get(blocked, 1))
    prompts = [p for p in chunk.prompts if not p.startswith("/")]
    stated: list[str] = []  # what the user said, that the answer may repeat
    for prompt in prompts:
        for sentence in preference_sentences(prompt):
            add("preferences", sentence, f"Preference: {sentence}")
            stated.append(sentence)
        for sentence in decision_sentences(prompt):
            add("decisions", sentence, f"Decision: {sentence}")
            stated.append(sentence)
    for sentence in decision_sentences(chunk.conclusion, by_agent=True):
        if any(near_duplicate(sentence, said) for said in stated):
            continue  # the user's decision, said back: one memory
        add("decisions", sentence, f"Decision: {sentence}")
    request = prompts[-1] if prompts else ""
    findings = finding_sentences(chunk.conclusion, request, [o.text for o in found])
    if findings:
        # With the request it answers, in a few words: what a later question about the same thing resembles.
        gist = request_gist(request)
        body = " ".join(findings)
        add("learnings", f"{gist} — {body}" if gist else body, f"Found: {gist or findings[0]}",
            line=chunk.conclusion_line)
    for statement in pattern_statements(chunk.project, chunk.session_id, chunk.cwd, chunk.succeeded):
        add("patterns", statement.text, statement.text.removeprefix("In project "), roll=statement.kind,
            item=statement.item)
    return found


def _render(chunk: _Open) -> str:
    head = f"## Session {chunk.session_id or 'unknown'}"
    if chunk.project:
        head += f" in {chunk.project}"
    if chunk.branch:
        head += f" (branch {chunk.branch})"
    when = time_span(chunk.first_at, chunk.last_at)
    if when:
        head += f", {when}"
    if chunk.continued and chunk.prompts:
        head += f"\n(continuing the request: {chunk.prompts[-1]})"
    return "\n".join([head, *chunk.render])

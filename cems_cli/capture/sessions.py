"""One running record per agent session, and the `context` memory rendered from it.

Each finished turn adds to the record what it asked, changed, ran, what was blocked and what failed; the
session's context memory is re-rendered from the whole record (one memory per session, kept up to date).
The text says only what happened: no "Outcome: done." filler, and a session in which nothing was done
(questions and answers only, or only a blocked command) gets no context memory at all.

Records are plain JSON (stored in `capture_sessions.record`); every list is capped so a session of a
thousand turns stays a short memory.
"""

from __future__ import annotations

from typing import Any

_CAPS = {"asked": 4, "changed": 12, "commands": 8, "blocked": 5, "denied": 4, "errors": 4}
_TEXT_LIMIT = 1500


def new_record(session_id: str, project: str | None, branch: str, sidechain: bool) -> dict[str, Any]:
    return {
        "session_id": session_id,
        "project": project,
        "branch": branch,
        "sidechain": sidechain,
        "first_at": "",
        "last_at": "",
        "turns": 0,
        "fixes": 0,
        **{name: [] for name in _CAPS},
        "more": {},
    }


def merge(record: dict[str, Any], turn: dict[str, Any]) -> dict[str, Any]:
    """Fold one turn's summary (`observations.Chunk.session`) into the session's record."""
    merged = dict(record)
    merged["more"] = dict(record.get("more") or {})
    for name, cap in _CAPS.items():
        items = list(record.get(name) or [])
        for item in turn.get(name) or []:
            if not item or item in items:
                continue
            if name == "asked" and len(items) >= cap:
                # Keep the first request (what the session was about) and the latest ones.
                items = [items[0], *items[2:]]
                merged["more"]["asked"] = merged["more"].get("asked", 0) + 1
            elif len(items) >= cap:
                merged["more"][name] = merged["more"].get(name, 0) + 1
                continue
            items.append(item)
        merged[name] = items
    # Errors later fixed in the same session are not open failures any more.
    fixed = set(turn.get("fixed_commands") or [])
    if fixed:
        merged["errors"] = [e for e in merged["errors"] if e.split(":", 1)[0].strip("`") not in fixed]
    merged["first_at"] = record.get("first_at") or turn.get("first_at") or ""
    merged["last_at"] = turn.get("last_at") or record.get("last_at") or ""
    merged["branch"] = record.get("branch") or turn.get("branch") or ""
    merged["project"] = record.get("project") or turn.get("project")
    merged["acted"] = _acted(record) or bool(turn.get("acted", turn.get("commands")))
    merged["turns"] = int(record.get("turns") or 0) + 1
    merged["fixes"] = int(record.get("fixes") or 0) + int(turn.get("fixes") or 0)
    return merged


def worth_remembering(record: dict[str, Any]) -> bool:
    """Something was done, or failed, or the user refused it. A session of questions and answers is not
    context, nor one that only looked around (`ls`, `git status`): its record would be the question asked
    again ("Asked: which i18n library do we use? Ran: `ls`."), the best match for that question the next
    time, above the memory that answers it; what such a session found out is kept as findings
    (`extract.finding_sentences`). Nor is one whose only event is a command a rule blocked: that is one
    counted memory however often it is tried, and a record per attempt only said it again."""
    return _acted(record) or any(record.get(name) for name in ("changed", "denied", "errors"))


def _acted(record: dict[str, Any]) -> bool:
    # Records kept before "acted" existed: any command counted.
    return bool(record.get("acted", record.get("commands")))


def time_span(first_at: str, last_at: str) -> str:
    def short(stamp: str) -> str:
        return stamp[:16].replace("T", " ") if len(stamp) >= 16 else stamp

    start, end = short(first_at), short(last_at)
    if not start:
        return ""
    if end and end != start:
        end = end[11:] if end[:10] == start[:10] else end
        return f"{start}–{end} UTC"
    return f"{start} UTC"


def _listing(record: dict[str, Any], name: str, *, code: bool = False, sep: str = ", ") -> str:
    items: list[str] = record.get(name) or []
    shown = sep.join(f"`{i}`" for i in items) if code else sep.join(items)
    extra = (record.get("more") or {}).get(name, 0)
    return f"{shown} (+{extra} more)" if extra else shown


def render(record: dict[str, Any]) -> str:
    """The session's context memory: where and when, what was asked, done, refused, and what still fails."""
    session = (record.get("session_id") or "unknown")[:8]
    project = (record.get("project") or "").removeprefix("project:")
    kind = "Claude Code subagent" if record.get("sidechain") else "Claude Code session"
    head = f"{kind} {session}" + (f" in {project}" if project else "")
    if record.get("branch"):
        head += f" on branch {record['branch']}"
    when = time_span(record.get("first_at") or "", record.get("last_at") or "")
    parts = [head + (f", {when}." if when else ".")]
    if record.get("asked"):
        parts.append(f"Asked: {_listing(record, 'asked', sep=' / ')}")
    if record.get("changed"):
        parts.append(f"Changed: {_listing(record, 'changed')}.")
    if record.get("commands"):
        parts.append(f"Ran: {_listing(record, 'commands', code=True, sep='; ')}.")
    if record.get("blocked"):
        parts.append(f"Blocked by a rule: {_listing(record, 'blocked', sep='; ')}.")
    if record.get("denied"):
        parts.append(f"Refused by the user: {_listing(record, 'denied', code=True, sep='; ')}.")
    if record.get("errors"):
        parts.append(f"Still failing: {_listing(record, 'errors', sep='; ')}.")
    text = "\n".join(parts)
    return text if len(text) <= _TEXT_LIMIT else text[: _TEXT_LIMIT - 1].rstrip() + "…"

"""The MCP tools: each a JSON schema, a description an agent can act on, and a function over MemoryService.

Every function opens the library's `Memory` the way the CLI's commands do (`cems_cli.api.opened`:
one per call, its connection closed afterwards; the embedding model is process-wide, so it loads once) and
returns a JSON object. Bad input raises the errors the CLI turns into one-line messages (UserError,
TextTooLarge, StoreError…); server.py turns them into tool errors. Arguments arrive checked against the
schema.

Nothing heavy is imported at module level: `tools/list` must not load the model or reach the database.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from cems_cli.models import AGENT_SOURCE, MemoryCategory, MemoryScope, PinCategory, SearchScope
from cems_cli.progressive import GET_IDS_MAX, TIMELINE_WINDOW_MAX, Within, entry_of_result, full_entry

if TYPE_CHECKING:
    from cems_cli.api import Memory

# What `remember` stores as the memory's source: what the agent chose to write, cited as "stored by the
# agent" and weighed between the person's own words and captured memories (retrieval/adjust.py), and
# `cems forget --source mcp` finds it.
MCP_SOURCE = AGENT_SOURCE
# An agent's context is small: a page of results, not the CLI's thousand.
SEARCH_LIMIT_MAX = 50
LIST_LIMIT_MAX = 100
LIST_LIMIT_DEFAULT = 10
TIMELINE_DEFAULT = 5

Handler = Callable[[dict[str, Any]], dict[str, Any]]


def _opened() -> AbstractContextManager[Memory]:
    from cems_cli.api import opened  # at call time: tools/list must not import the library

    return opened()


@dataclass(frozen=True)
class ToolSpec:
    name: str
    title: str
    description: str
    input_schema: dict[str, Any]
    run: Handler
    read_only: bool = False
    destructive: bool = False
    idempotent: bool = False


# --- schema pieces ---------------------------------------------------------------------------------------


def _enum(values: type[StrEnum], description: str, default: str | None = None) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string", "enum": [m.value for m in values], "description": description}
    if default is not None:
        schema["default"] = default
    return schema


def _object(properties: dict[str, Any], required: tuple[str, ...] = ()) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": properties, "additionalProperties": False}
    if required:
        schema["required"] = list(required)
    return schema


_ID = {
    "type": "string",
    "minLength": 1,
    "description": "Memory id, or a unique prefix of it (e.g. its first 8 characters).",
}
_PROJECT = {
    "type": "string",
    "minLength": 1,
    "description": "Project id, e.g. acme/api (project:acme/api works too).",
}
_CATEGORY_FILTER = _enum(MemoryCategory, "Only memories of this category.")
_SCOPE_FILTER = _enum(
    SearchScope, "personal (yours), shared (your team's) or both.", default=SearchScope.BOTH.value
)


# --- output ----------------------------------------------------------------------------------------------


def _memory_json(record: Any, created: bool | None = None) -> dict[str, Any]:
    from cems_cli.results import citation

    data = {
        "id": record.id,
        "category": record.category,
        "scope": record.scope,
        "title": record.title,
        "content": record.content,
        "tags": record.tags,
        "pinned": record.pinned,
        "created_at": record.created_at.isoformat(),
        "source": record.source,
        "source_ref": record.source_ref,
        "citation": citation(record.source, record.source_ref),
    }
    return data if created is None else {"id": record.id, "created": created, **data}


def _result_json(result: Any) -> dict[str, Any]:
    data = {
        "id": result.id,
        "score": round(result.score, 4),
        "confidence": round(result.confidence, 4),
        "category": result.category,
        "scope": result.scope,
        "title": result.title,
        "content": result.content,
        "tags": result.tags,
        "pinned": result.pinned,
        "created_at": result.created_at.isoformat(),
        "source": result.source,
        "source_ref": result.source_ref,
        "citation": result.citation,
    }
    if result.context:  # neighbouring parts of a long memory
        data["context"] = result.context
    return data


def _project(value: str | None) -> str | None:
    from cems_cli.project import normalize_project

    return normalize_project(value) if value else None


# --- the tools: each what the matching `cems` command does, through the same library ------------------


def search(args: dict[str, Any]) -> dict[str, Any]:
    """The compact index by default (progressive recall: `get` fetches the texts chosen); full: true gives
    every result's text and metadata, as before the index existed."""
    from cems_cli.embedding.limits import check_text_size, configured_max_bytes

    query = args["query"]
    check_text_size(query, configured_max_bytes(), "search query", "shorten it")
    with _opened() as memory:
        options = memory.search_options(
            limit=args.get("limit"),
            category=args.get("category"),
            scope=args.get("scope", SearchScope.BOTH.value),
            project=_project(args.get("project")),
        )
        results = memory.search(query, options)
    return search_payload(query, results, full=args.get("full", False))


def search_payload(query: str, results: Sequence[Any], *, full: bool = False) -> dict[str, Any]:
    """What `search` answers for these results: the compact index, or (`full`) every text and its metadata."""
    rows = [_result_json(r) for r in results] if full else [entry_of_result(r).to_json() for r in results]
    return {"query": query, "count": len(results), "results": rows}


def timeline(args: dict[str, Any]) -> dict[str, Any]:
    with _opened() as memory:
        found = memory.timeline(
            args.get("id"), session=args.get("session"), before=args.get("before", TIMELINE_DEFAULT),
            after=args.get("after", TIMELINE_DEFAULT), within=args.get("within"),
        )
    return found.to_json()


def get(args: dict[str, Any]) -> dict[str, Any]:
    with _opened() as memory:
        return get_payload(memory.get_many(args["ids"]))


def get_payload(fetched: Sequence[Any]) -> dict[str, Any]:
    """What `get` answers: each id's memory in full, or its own error."""
    memories = [full_entry(f.record) if f.record is not None else {"id": f.asked, "error": f.error}
                for f in fetched]
    return {"count": sum(f.record is not None for f in fetched), "memories": memories}


def remember(args: dict[str, Any]) -> dict[str, Any]:
    from cems_cli.embedding.limits import check_text_size, configured_max_bytes

    text = args["text"]
    check_text_size(text, configured_max_bytes())
    with _opened() as memory:
        memory_id, created = memory.remember(  # in the current project, as `cems remember` here
            text,
            category=args.get("category", MemoryCategory.GENERAL.value),
            tags=args.get("tags") or [],
            scope=args.get("scope", MemoryScope.PERSONAL.value),
            source=MCP_SOURCE,
        )
        # The stored text, not the given one: secrets and <private> blocks are gone from it.
        return _memory_json(memory.get(memory_id), created)


def forget(args: dict[str, Any]) -> dict[str, Any]:
    with _opened() as memory:
        (memory_id,) = memory.forget(args["id"])
    return {"id": memory_id, "forgotten": True, "archived": True}


def pin(args: dict[str, Any]) -> dict[str, Any]:
    with _opened() as memory:
        memory_id = memory.pin(args["id"], reason=args.get("reason"), category=args.get("pin_category"))
    return {"id": memory_id, "pinned": True}


def list_recent(args: dict[str, Any]) -> dict[str, Any]:
    with _opened() as memory:
        records = memory.list_memories(
            scope=args.get("scope", SearchScope.BOTH.value),
            category=args.get("category"),
            project=_project(args.get("project")),
            limit=args.get("limit", LIST_LIMIT_DEFAULT),
        )
    return {"count": len(records), "memories": [_memory_json(r) for r in records]}


def rule_add(args: dict[str, Any]) -> dict[str, Any]:
    """What `cems rule add` does, with the same one-line form when no tool is given."""
    with _opened() as memory:
        stored, created = memory.rules.add_one(
            args["pattern"], tool=args.get("tool"), action=args.get("action"), reason=args.get("reason"),
            field=args.get("field"), regex=args.get("regex", False), project=args.get("project"),
            scope=args.get("scope", MemoryScope.PERSONAL.value), tool_hint="tool",
        )
    return {**stored.to_dict(), "created": created}


def rule_list(args: dict[str, Any]) -> dict[str, Any]:
    project = _project(args.get("project"))
    with _opened() as memory:
        rules = memory.rules.list_rules(project.lower() if project else None)
    return {"count": len(rules), "rules": [r.to_dict() for r in rules]}


def rule_test(args: dict[str, Any]) -> dict[str, Any]:
    project = _project(args.get("project"))
    with _opened() as memory:
        current = project.lower() if project else memory.current_project().lower()
        rules = memory.rules.list_rules()
        # On this worker thread too, the library keeps the hook's regex budget (rules.bounded).
        decision = memory.rules.test(args["tool"], args["input"], project=current, cwd=os.getcwd())
    return {
        "decision": decision.action if decision else "allow",
        "project": current,
        "rules_checked": len(rules),
        "rule": decision.rule.to_dict() if decision else None,
        "matched": decision.value if decision else None,
        "unchecked": (decision.unchecked or None) if decision else None,
    }


def status(args: dict[str, Any]) -> dict[str, Any]:
    """What `cems status --json` prints."""
    from cems_cli.api import database_status

    with _opened() as memory:
        found = memory.status().to_json()
    return {**found, "database": database_status()}


# --- the catalogue ---------------------------------------------------------------------------------------

_CITE = " Say where what you use comes from: each memory has an id (`cems show <id>`) and a citation."

TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        "search",
        "Search memories",
        "Search the user's long-term memory (preferences, decisions, patterns, context, learnings, rules) "
        "for what is relevant to a question or task: hybrid vector + full-text search, best first. Use it "
        "before deciding something the user may already have decided. Returns a compact index: for each "
        "result its id, title (or best-matching passage), date, category, confidence (how likely it answers, "
        "0..1) and tokens (what its full text costs); nothing when nothing matches. Then call `get` with the "
        "ids worth reading in full, or `timeline` for what was stored around one. full: true returns every "
        "result's text, source and citation at once (costs more tokens)."
        + _CITE,
        _object(
            {
                "query": {
                    "type": "string",
                    "minLength": 1,
                    "description": "What to look for, in plain words.",
                },
                "limit": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": SEARCH_LIMIT_MAX,
                    "description": "How many results at most (default 5).",
                },
                "category": _CATEGORY_FILTER,
                "scope": _SCOPE_FILTER,
                "project": {**_PROJECT, "description": "Only memories of this project, e.g. acme/api."},
                "full": {
                    "type": "boolean",
                    "default": False,
                    "description": "Every result's full text and metadata instead of the index.",
                },
            },
            required=("query",),
        ),
        search,
        read_only=True,
        idempotent=True,
    ),
    ToolSpec(
        "timeline",
        "Memories around one",
        "What was stored around a memory or a session, oldest first, as the same compact index as search "
        "(the anchor's entries marked anchor: true): around a memory, the ones recorded just before and "
        "after it in its session (else its project); around a session, its memories and its project's "
        "before and after. Give id or session. Use it to see what led to a decision or what followed a "
        "failure, then `get` the ids worth reading.",
        _object(
            {
                "id": {**_ID, "description": "The memory to look around: its id or a unique prefix."},
                "session": {
                    "type": "string",
                    "minLength": 4,
                    "description": "A session id, or a unique prefix (a citation's 'session 1a2b3c4d').",
                },
                "before": {
                    "type": "integer",
                    "minimum": 0,
                    "maximum": TIMELINE_WINDOW_MAX,
                    "default": TIMELINE_DEFAULT,
                    "description": "How many memories recorded before.",
                },
                "after": {
                    "type": "integer",
                    "minimum": 0,
                    "maximum": TIMELINE_WINDOW_MAX,
                    "default": TIMELINE_DEFAULT,
                    "description": "How many memories recorded after.",
                },
                "within": _enum(
                    Within,
                    "Walk the session's memories, the project's or all (default: the memory's session if "
                    "it has one, else its project).",
                ),
            }
        ),
        timeline,
        read_only=True,
        idempotent=True,
    ),
    ToolSpec(
        "get",
        "Get memories",
        "The full text of chosen memories, by the ids search or timeline listed: for each its id, category, "
        "date, title and tags (when it has them), content and citation. An id that names no memory of the "
        "user's gets an error of its own (the others still come back)." + _CITE,
        _object(
            {
                "ids": {
                    "type": "array",
                    "items": _ID,
                    "minItems": 1,
                    "maxItems": GET_IDS_MAX,
                    "description": "Memory ids (or unique prefixes), as search or timeline listed them.",
                },
            },
            required=("ids",),
        ),
        get,
        read_only=True,
        idempotent=True,
    ),
    ToolSpec(
        "remember",
        "Remember",
        "Store something worth knowing in later sessions: a preference the user stated, a decision and its "
        "reason, a pattern of this codebase, a learning from a failure. One self-contained fact per memory. "
        "Secrets and <private>…</private> blocks are removed before anything is stored; the same text twice "
        "returns the existing memory (created: false). Returns the id and the text as stored.",
        _object(
            {
                "text": {"type": "string", "minLength": 1, "description": "The memory, self-contained."},
                "category": _enum(MemoryCategory, "What kind of memory it is.", MemoryCategory.GENERAL.value),
                "tags": {
                    "type": "array",
                    "items": {"type": "string", "minLength": 1},
                    "maxItems": 20,
                    "description": 'Short tags, e.g. ["python", "testing"].',
                },
                "scope": _enum(
                    MemoryScope,
                    "personal (only the user) or shared (the user's team; needs CEMS_TEAM).",
                    MemoryScope.PERSONAL.value,
                ),
            },
            required=("text",),
        ),
        remember,
        idempotent=True,
    ),
    ToolSpec(
        "forget",
        "Forget a memory",
        "Forget one of the user's memories: it is archived and no longer found by search. Only for a memory "
        "that is wrong or that the user asked to drop. Guard rules cannot be forgotten here: only the user "
        "removes a rule, in a terminal (`cems rule rm <id>`).",
        _object({"id": _ID}, required=("id",)),
        forget,
        destructive=True,
        idempotent=False,
    ),
    ToolSpec(
        "pin",
        "Pin a memory",
        "Pin a memory that must not fade: it never decays, ranks a little higher and is part of every "
        "session's profile. For standing guidelines and conventions the user confirmed.",
        _object(
            {
                "id": _ID,
                "reason": {"type": "string", "minLength": 1, "description": "Why it matters."},
                "pin_category": _enum(PinCategory, "What kind of standing knowledge it is."),
            },
            required=("id",),
        ),
        pin,
        idempotent=True,
    ),
    ToolSpec(
        "list_recent",
        "List memories",
        "List the user's memories without a query: pinned first, then newest first (as `cems list`). Use "
        "search to find something specific." + _CITE,
        _object(
            {
                "limit": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": LIST_LIMIT_MAX,
                    "default": LIST_LIMIT_DEFAULT,
                    "description": "How many memories.",
                },
                "category": _CATEGORY_FILTER,
                "scope": _SCOPE_FILTER,
                "project": {**_PROJECT, "description": "Only memories of this project, e.g. acme/api."},
            }
        ),
        list_recent,
        read_only=True,
        idempotent=True,
    ),
    ToolSpec(
        "rule_add",
        "Add a guard rule",
        "Add a rule that the PreToolUse hook enforces on every tool call of later turns and sessions: block, "
        "ask or warn when a tool's input matches. Either the one-line form in pattern ('Bash: git push "
        "--force* — force pushes rewrite history', no tool) or pattern plus tool. Glob by default; a glob "
        "that reads as a command also matches reordered and respelt options. Returns the rule and its id.",
        _object(
            {
                "pattern": {
                    "type": "string",
                    "minLength": 1,
                    "description": "Glob (a regex with regex: true), or the one-line form "
                    "'Tool: pattern — reason'.",
                },
                "tool": {
                    "type": "string",
                    "minLength": 1,
                    "description": "Tool name: Bash, Edit, Write, Read, WebFetch, mcp__server__tool…",
                },
                "action": {
                    "type": "string",
                    "enum": ["block", "ask", "warn"],
                    "default": "block",
                    "description": "What happens on a match.",
                },
                "reason": {"type": "string", "description": "Why: shown to the agent when it is stopped."},
                "field": {
                    "type": "string",
                    "minLength": 1,
                    "description": "The tool_input field to match (default: the tool's main one).",
                },
                "regex": {"type": "boolean", "default": False, "description": "pattern is a regex."},
                "project": {**_PROJECT, "description": "Only inside this project (default: every project)."},
                "scope": _enum(
                    MemoryScope, "personal, or shared (binds the whole team).", MemoryScope.PERSONAL.value
                ),
            },
            required=("pattern",),
        ),
        rule_add,
        idempotent=True,
    ),
    ToolSpec(
        "rule_list",
        "List guard rules",
        "The rules in force for the user (theirs and their team's), with ids, tools, patterns, actions and "
        "reasons. No tool here removes or weakens a rule: that is the user's, in a terminal.",
        _object({"project": {**_PROJECT, "description": "Only rules in force in this project."}}),
        rule_list,
        read_only=True,
        idempotent=True,
    ),
    ToolSpec(
        "rule_test",
        "Test the guard rules",
        "What the PreToolUse hook would decide for a tool call (allow, warn, ask or block) and which rule "
        "decides it, without running anything. unchecked (when not null): why the deciding rule could not be "
        "checked for sure (a regex out of the hook's time budget counts as matched).",
        _object(
            {
                "tool": {"type": "string", "minLength": 1, "description": "Tool name, e.g. Bash."},
                "input": {
                    "type": "object",
                    "description": 'The tool_input, e.g. {"command": "git push --force origin main"}.',
                },
                "project": {**_PROJECT, "description": "Project to test in (default: the current one)."},
            },
            required=("tool", "input"),
        ),
        rule_test,
        read_only=True,
        idempotent=True,
    ),
    ToolSpec(
        "status",
        "Memory status",
        "Who and where: user, team, current project, memory counts by scope and category, database and "
        "embedding model.",
        _object({}),
        status,
        read_only=True,
        idempotent=True,
    ),
)

BY_NAME: dict[str, ToolSpec] = {spec.name: spec for spec in TOOLS}

INSTRUCTIONS = (
    "CEMS is the user's long-term memory across coding sessions. Search it before deciding something the "
    "user may already have settled (conventions, preferences, earlier decisions): search lists titles and "
    "what each text costs, `get` reads the ones you choose, `timeline` shows what surrounds one. Remember "
    "durable facts worth knowing next time (one per memory), and say which memory (id, citation) an answer "
    "rests on. Rules added here guard every later tool call."
)

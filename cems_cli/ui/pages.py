"""The viewer's pages: memories, one memory, sessions, the next session's preview, rules, maintenance,
team, and the live stream. Reads are GET (each page works without JavaScript: plain links and forms);
writes are POST with the CSRF token, answered by a redirect (303) to the page that shows the result, or by
the same page again with the error and what was typed (nothing lost)."""

from __future__ import annotations

import json
import os
from datetime import UTC, date, datetime, timedelta
from typing import Any
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from cems_cli.api import UserError
from cems_cli.ui.app import Viewer
from cems_cli.ui.security import check_csrf

CATEGORIES = ("preferences", "decisions", "patterns", "context", "learnings", "general", "rules")
SCOPES = ("both", "personal", "shared")
STATES = ("live", "archived", "all")
RESULTS = 50
EXPLAINED_QUERIES = 8
# What a redirect after a write says; a fixed set, so no request can make a page print its own text.
NOTICES = {
    "forgotten": "Forgotten (archived): restore brings it back.",
    "restored": "Restored.",
    "pinned": "Pinned.",
    "unpinned": "Unpinned.",
    "shared": "Shared with your team.",
    "edited": "Saved.",
    "rule-added": "Rule added: the PreToolUse hook applies it from the next tool call.",
    "rule-exists": "That rule exists already.",
}


def routes(viewer: Viewer) -> list[Route]:
    pages = _Pages(viewer)
    return [
        Route("/", pages.home),
        Route("/memories", pages.memories),
        Route("/memories/{memory_id}", pages.one_memory),
        Route("/memories/{memory_id}/{action}", pages.change, methods=["POST"]),
        Route("/sessions", pages.sessions),
        Route("/preview", pages.preview),
        Route("/rules", pages.rules),
        Route("/rules", pages.add_rule, methods=["POST"]),
        Route("/maintenance", pages.maintenance),
        Route("/maintenance", pages.run_maintenance, methods=["POST"]),
        Route("/team", pages.team),
        Route("/live", pages.live),
    ]


class _Pages:
    def __init__(self, viewer: Viewer) -> None:
        self.viewer = viewer
        self.memory = viewer.memory
        self.explained: dict[str, dict[str, dict[str, Any]]] = {}  # query → result id → its factors

    # Memories ---------------------------------------------------------------------------------------------
    async def home(self, request: Request) -> Response:
        return RedirectResponse("/memories", status_code=303)

    async def memories(self, request: Request) -> Response:
        params = request.query_params
        form = {key: params.get(key, "") for key in
                ("q", "category", "scope", "project", "source", "pinned", "since", "until", "state")}
        error, results, records, page = None, [], [], 1
        try:
            filters = _filters(form)
            page = _page(params.get("page", ""))
            if form["q"].strip():
                results = await self.viewer.call(self._search, form["q"], filters)
            else:
                records = await self.viewer.call(self.memory.browse, limit=RESULTS,
                                                 offset=(page - 1) * RESULTS, **filters)
        except UserError as problem:
            error = str(problem)
        status = 400 if error else 200
        kept = {key: value for key, value in form.items() if value}
        older = urlencode({**kept, "page": page + 1}) if len(records) == RESULTS else ""
        return self.viewer.render(request, "memories.html", status, form=form, results=results,
                                  records=records, error=error, categories=CATEGORIES, scopes=SCOPES,
                                  states=STATES, query=urlencode({"q": form["q"]}) if form["q"] else "",
                                  page=page, older=older)

    def _search(self, query: str, filters: dict[str, Any]) -> list[Any]:
        """Search (weak results too, marked), then the filters search itself does not take. Looking in
        the viewer is not an access: it does not raise what it shows in later rankings."""
        if filters["state"] != "live":
            raise UserError("search covers live memories: clear the query to list archived ones")
        results = self.memory.search(query, limit=RESULTS, category=filters["category"],
                                     scope=filters["scope"], project=filters["project"], explain=True,
                                     include_weak=True, track_access=False)
        # A result opened from this page shows the factors of this very search (its filters included),
        # without searching again: kept for the latest few queries.
        self.explained[" ".join(query.split())] = {r.id: _explain(r) for r in results}
        while len(self.explained) > EXPLAINED_QUERIES:
            self.explained.pop(next(iter(self.explained)))
        since, until = filters["since"], filters["until"]
        return [
            r for r in results
            if (not filters["source"] or r.source == filters["source"])
            and (filters["pinned"] is None or r.pinned == filters["pinned"])
            and (since is None or r.created_at >= since) and (until is None or r.created_at < until)
        ]

    async def one_memory(self, request: Request) -> Response:
        return await self._memory_page(request, request.path_params["memory_id"])

    async def _memory_page(self, request: Request, memory_id: str, *, error: str | None = None,
                           typed: str | None = None, status: int = 200) -> Response:
        query = request.query_params.get("q", "")
        try:
            record, history, explained = await self.viewer.call(self._detail, memory_id, query)
        except UserError as problem:
            return self.viewer.render(request, "error.html", 404, error=str(problem))
        from cems_cli.results import citation

        notice = NOTICES.get(request.query_params.get("done", ""))
        team = self.memory.settings.team
        return self.viewer.render(
            request, "memory.html", status, record=record, history=history, explained=explained,
            citation=citation(record.source, record.source_ref), q=query, error=error, notice=notice,
            text=record.content if typed is None else typed, team=team,
            mine=record.user_id == self.memory.settings.user,
        )

    def _detail(self, memory_id: str, query: str) -> tuple[Any, Any, Any]:
        record = self.memory.get(memory_id)
        history = self.memory.history(record.id)
        explained = self.explained.get(" ".join(query.split()), {}).get(record.id)
        if explained is None and query.strip() and not record.archived:
            found = self.memory.search(query, limit=RESULTS, explain=True, include_weak=True,
                                       track_access=False)
            explained = next((_explain(r) for r in found if r.id == record.id), None)
        return record, history, explained

    async def change(self, request: Request) -> Response:
        form = await check_csrf(request, self.viewer.csrf)
        memory_id, action = request.path_params["memory_id"], request.path_params["action"]
        work = {
            "forget": lambda: self.memory.forget(memory_id)[0],
            "restore": lambda: self.memory.restore(memory_id).id,
            "pin": lambda: self.memory.pin(memory_id, reason=form.get("reason") or None),
            "unpin": lambda: self.memory.unpin(memory_id),
            # `share` takes an id or new text: here only a memory this user can see (`get`), never the path
            # stored as new shared text.
            "share": lambda: self.memory.share(self.memory.get(memory_id).id).id,
            "edit": lambda: self.memory.edit(memory_id, form.get("text", "")),
        }.get(action)
        if work is None:
            return self.viewer.render(request, "error.html", 404, error=f"no such action: {action}")
        try:
            done_id = await self.viewer.call(work)
        except UserError as problem:
            # The page again, with the message and, for an edit, the text as typed.
            return await self._memory_page(request, memory_id, error=str(problem),
                                           typed=form.get("text") if action == "edit" else None, status=400)
        done = {"forget": "forgotten", "restore": "restored", "pin": "pinned", "unpin": "unpinned",
                "share": "shared", "edit": "edited"}[action]
        return RedirectResponse(f"/memories/{done_id}?done={done}", status_code=303)

    # Sessions ---------------------------------------------------------------------------------------------
    async def sessions(self, request: Request) -> Response:
        project = request.query_params.get("project", "")
        error, found = None, []
        try:
            found = await self.viewer.call(self.memory.sessions, _project(project))
        except UserError as problem:
            error = str(problem)
        return self.viewer.render(request, "sessions.html", 400 if error else 200, sessions=found,
                                  project=project, error=error)

    # Next session preview ----------------------------------------------------------------------------------
    async def preview(self, request: Request) -> Response:
        prompt = request.query_params.get("prompt", "")
        folder = request.query_params.get("folder", "")
        error, shown = None, None
        if prompt.strip() or folder.strip():
            try:
                shown = await self.viewer.call(self._preview, prompt, folder)
            except UserError as problem:
                error = str(problem)
        return self.viewer.render(request, "preview.html", 400 if error else 200, prompt=prompt,
                                  folder=folder, shown=shown, error=error)

    def _preview(self, prompt: str, folder: str) -> dict[str, Any]:
        """What the SessionStart and UserPromptSubmit hooks would inject in `folder` (their code: the same
        project rule, profile, trivial-prompt test, recall with the profile's ids left out, formatting)."""
        from cems_cli.engine.recall import format_recall
        from cems_cli.hookhandlers.user_prompt_submit import is_trivial
        from cems_cli.project import project_for_dir

        folder = folder.strip()
        if folder and not os.path.isdir(folder):
            raise UserError(f"no folder {folder!r} on this machine")
        project = os.environ.get("CEMS_PROJECT") or (project_for_dir(folder) if folder else None)
        profile, shown_ids = self.memory.profile_with_ids(project)
        trivial = bool(prompt.strip()) and is_trivial(prompt)
        results = []
        if prompt.strip() and not trivial:
            results = self.memory.recall_preview(prompt, project=project, exclude=shown_ids)
        recall = format_recall([r.to_json() for r in results], project) if results else ""
        return {"project": project, "profile": profile, "profile_ids": shown_ids, "trivial": trivial,
                "results": [{"result": r, "explain": _explain(r)} for r in results], "recall": recall}

    # Rules ------------------------------------------------------------------------------------------------
    async def rules(self, request: Request, *, error: str | None = None, typed: dict[str, str] | None = None,
                    status: int = 200) -> Response:
        params = request.query_params
        tool, value = params.get("tool", "Bash"), params.get("input", "")
        found = await self.viewer.call(self.memory.rules.list_rules)
        tested = None
        if value.strip():
            tested = await self.viewer.call(self._test_rule, tool.strip() or "Bash", value)
        fired = await self.viewer.call(self.memory.rule_firings)
        return self.viewer.render(request, "rules.html", status, rules=found, tool=tool, input=value,
                                  tested=tested, error=error, typed=typed or {}, fired=fired,
                                  notice=NOTICES.get(params.get("done", "")))

    def _test_rule(self, tool: str, value: str) -> dict[str, Any]:
        from cems_cli.rules.matcher import main_field

        field = main_field(tool, None)
        decision = self.memory.rules.test(tool, {field: value})
        return {"tool": tool, "field": field, "action": decision.action if decision else "allow",
                "rule": decision.rule if decision else None, "matched": decision.value if decision else None,
                "unchecked": decision.unchecked if decision else ""}

    async def add_rule(self, request: Request) -> Response:
        form = await check_csrf(request, self.viewer.csrf)
        line = form.get("line", "")
        try:
            _, created = await self.viewer.call(self.memory.rules.add_one, line, tool_hint="a tool")
        except UserError as problem:
            return await self.rules(request, error=str(problem), typed={"line": line}, status=400)
        return RedirectResponse(f"/rules?done={'rule-added' if created else 'rule-exists'}", status_code=303)

    # Maintenance ------------------------------------------------------------------------------------------
    async def maintenance(self, request: Request) -> Response:
        return await self._maintain(request, dry_run=True)

    async def run_maintenance(self, request: Request) -> Response:
        await check_csrf(request, self.viewer.csrf)
        return await self._maintain(request, dry_run=False)

    async def _maintain(self, request: Request, *, dry_run: bool) -> Response:
        try:
            report = await self.viewer.call(self.memory.maintain, dry_run=dry_run)
        except (UserError, RuntimeError) as problem:  # RuntimeError: another maintenance is running
            return self.viewer.render(request, "error.html", 409, error=str(problem))
        return self.viewer.render(request, "maintenance.html", report=report, ran=not dry_run)

    # Team -------------------------------------------------------------------------------------------------
    async def team(self, request: Request) -> Response:
        shown = await self.viewer.call(self._team)
        return self.viewer.render(request, "team.html", **shown)

    def _team(self) -> dict[str, Any]:
        who = self.memory.whoami()
        if not who.get("restricted") and "database" not in who:
            return {"who": who, "server": False, "teams": [], "shared": [], "audit": []}
        teams = [self.memory.teams.show(team.name) for team in self.memory.teams.list_teams()]
        shared = self.memory.browse(scope="shared", limit=RESULTS)
        audit = self.memory.audit(limit=100)
        return {"who": who, "server": True, "teams": teams, "shared": shared, "audit": audit}

    # Live -------------------------------------------------------------------------------------------------
    async def live(self, request: Request) -> Response:
        from cems_cli.ui.stream import stream

        return await stream(self.viewer, request)


# The adjustments' factors, then those of the experiments (retrieval/experiments.py), when named.
_FACTORS = ("priority", "time_decay", "pinned", "project", "source", "time_cue", "time_answer")


def _explain(result: Any) -> dict[str, Any]:
    """A result's score factors as people read them: the confidence and what it is built from, then each
    factor that moved the score (1.0 is neutral), and the raw explain for the rest."""
    inputs = result.explain.get("confidence") or {}
    built = inputs.get("built_from") or {}
    terms = [(name, t.get("weight"), t.get("value")) for name, t in (built.get("terms") or {}).items()
             if isinstance(t, dict)]
    adjust = result.explain.get("adjust") or {}
    factors = [(name, adjust[name]) for name in _FACTORS
               if isinstance(adjust.get(name), (int, float)) and adjust[name] != 1.0]
    return {"confidence": result.confidence, "weak": result.weak, "score": result.score,
            "cosine": inputs.get("cosine"), "lexical": inputs.get("lexical"),
            "relative": inputs.get("relative"), "terms": terms, "intercept": built.get("intercept"),
            "base": adjust.get("base"), "factors": factors,
            "days_since_access": adjust.get("days_since_access"),
            "raw": json.loads(json.dumps(result.explain, default=str))}


def _filters(form: dict[str, str]) -> dict[str, Any]:
    """The memories page's filters as `Memory.browse` takes them; UserError naming a bad one."""
    category = form["category"] or None
    if category is not None and category not in CATEGORIES:
        raise UserError(f"unknown category {category!r}")
    scope = form["scope"] or "both"
    if scope not in SCOPES:
        raise UserError(f"unknown scope {scope!r}")
    state = form["state"] or "live"
    if state not in STATES:
        raise UserError(f"unknown state {state!r}")
    pinned = {"": None, "yes": True, "no": False}.get(form["pinned"], "bad")
    if pinned == "bad":
        raise UserError("pinned: expected yes or no")
    since = _day(form["since"], "since")
    until = _day(form["until"], "until")
    if until is not None:  # up to the end of that day; the last day there is bounds nothing
        until = until + timedelta(days=1) if until.date() < date.max else None
    return {"category": category, "scope": scope, "project": _project(form["project"]),
            "source": _no_nul(form["source"], "source").strip() or None, "pinned": pinned, "since": since,
            "until": until, "state": state}


def _no_nul(value: str, name: str) -> str:
    """A filter as typed, refused when it holds a NUL (PostgreSQL text cannot, and the query would fail)."""
    if "\x00" in value:
        raise UserError(f"{name}: a NUL character is not allowed")
    return value


def _page(value: str) -> int:
    if not value.strip():
        return 1
    if not value.strip().isdigit() or not 1 <= int(value) <= 100_000:
        raise UserError(f"page: expected a number from 1, not {value.strip()[:20]!r}")
    return int(value)


def _day(value: str, name: str) -> datetime | None:
    if not value.strip():
        return None
    try:
        day = date.fromisoformat(value.strip())
    except ValueError:
        raise UserError(f"{name}: expected a date like 2026-01-31, not {value.strip()[:40]!r}") from None
    return datetime(day.year, day.month, day.day, tzinfo=UTC)


def _project(value: str) -> str | None:
    from cems_cli.project import normalize_project

    value = _no_nul(value, "project").strip()
    if not value:
        return None
    try:
        return normalize_project(value)
    except ValueError as error:
        raise UserError(str(error)) from None

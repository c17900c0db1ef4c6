"""`Memory`, one user's memories as the library gives them (`cems.open()`): remember, search, recall, get,
list, forget, pin, share, browse, status, maintain, summaries, audit."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from cems_cli.api._config import Config
from cems_cli.api._rules import Rules
from cems_cli.api._server import Teams
from cems_cli.api._status import Status, _model_bytes
from cems_cli.api._transfer import Transfer
from cems_cli.config import Settings, load_settings
from cems_cli.engine.summaries import SummaryReport, build_summaries
from cems_cli.errors import UserError
from cems_cli.results import SearchResult
from cems_cli.retrieval.options import RecallOptions, SearchOptions
from cems_cli.store.records import MemoryRecord
from cems_cli.store.summaries import StoredSummary, list_summaries

if TYPE_CHECKING:
    import psycopg
    from psycopg_pool import ConnectionPool

    from cems_cli.engine.maintain import MaintenanceReport
    from cems_cli.engine.service import MemoryService
    from cems_cli.progressive import Fetched, IndexEntry, Timeline
    from cems_cli.store.audit import AuditEntry
    from cems_cli.store.browse import History, SessionEntry
    from cems_cli.store.changes import Change
    from cems_cli.store.lifecycle import Restored


class Remembered(NamedTuple):
    """What `remember` and `share` did: the memory's id, and whether it is new (False: the same text was
    already stored, and that memory's id is given)."""

    id: str
    created: bool


def open(  # noqa: A001 - `cems.open()`, like `io.open` / `sqlite3.connect`: the library's front door
    *,
    home: str | Path | None = None,
    user: str | None = None,
    team: str | None = None,
    project: str | None = None,
    database_url: str | None = None,
    settings: Settings | None = None,
) -> Memory:
    """A `Memory` on the settings CEMS would use here (environment, config.toml, defaults), with any of
    these given explicitly taking precedence. Nothing is connected or loaded until it is needed."""
    from cems_cli.paths import make_home

    base = settings or load_settings()
    update: dict[str, Any] = {}
    if home is not None:
        update["home"] = Path(home).expanduser()
    if user is not None:
        update["user"] = user
    if team is not None:
        update["team"] = team
    if project is not None:
        update["project"] = project
    if database_url is not None:
        update["database_url"] = database_url
    chosen = base.model_copy(update=update) if update else base
    # The CLI and the daemons set a private umask; a library caller keeps its own (often 022), so the data
    # folder is made owner-only here and the files CEMS creates in it carry explicit modes.
    make_home(chosen.home)
    return Memory(chosen)


class Memory(Transfer):
    """Your memories: remember, search, recall, get, list, forget, pin, share, rules, status, maintain.

    Methods raise `UserError` (a `ValueError`) for bad input, with a one-line message and nothing stored.
    Use it as a context manager, or call `close()`, to release the database connection.
    """

    def __init__(self, settings: Settings, *, service: MemoryService | None = None) -> None:
        from cems_cli.engine.service import MemoryService

        self._service = service or MemoryService(settings)
        self.rules = Rules(self)
        self.config = Config(self)
        self.teams = Teams(self)

    # Life -----------------------------------------------------------------------------------------------
    @property
    def settings(self) -> Settings:
        return self._service.settings

    def for_identity(
        self, user: str | None, team: str | None = None, project: str | None = None, *,
        connection: psycopg.Connection | None = None,
    ) -> Memory:
        """The same store and model, acting for another user/team/project (the search server answers every
        hook of a machine with one warm `Memory`), on this one's connection or on `connection` (one of
        `connection_pool()`'s, so requests run side by side)."""
        return Memory(self.settings, service=self._service.for_identity(user, team, project, connection))

    def connection_pool(self, max_size: int = 4) -> ConnectionPool:
        """A pool of connections to this store, configured like its own (call `warm_up` first: it applies
        migrations). For a process that serves many clients; close it when done."""
        from cems_cli.store.db import connection_pool

        return connection_pool(self.settings, max_size=max_size, name="cems")

    def warm_up(self) -> None:
        """Connect and load the embedding model now, not on the first call: a server does this before it
        accepts its first request, so no request pays for it."""
        self._service.query_embedder.embed(["warm up"])
        self._service.conn.execute("SELECT 1")
        if self.settings.llm_configured:
            # The SDK's import (~0.7 s, more on a busy machine) would otherwise fall on the first search's
            # LLM stages, inside the prompt hook's 1.5 s: they were skipped for want of time.
            import openai  # noqa: F401

    def close(self) -> None:
        self._service.close()

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # Writing --------------------------------------------------------------------------------------------
    def remember(
        self,
        text: str | bytes,
        *,
        category: str = "general",
        scope: str = "personal",
        tags: str | Sequence[str] | None = None,
        title: str | None = None,
        project: str | None = None,
        source: str | None = "manual",
        pin: bool = False,
        pin_reason: str | None = None,
        pin_category: str | None = None,
        created_at: datetime | None = None,
        expires_at: datetime | None = None,
        context: str | None = None,
    ) -> Remembered:
        """Store one memory (redacted, `<private>` blocks dropped); the same text twice is stored once.
        `project` is a `project:<name>` reference; by default the current one (see `current_project`), as
        `cems remember` does; "" stores the memory without a project."""
        if project is None:
            project = self.current_project()
        memory_id, created = self._service.remember(
            text, category=category, scope=scope, tags=tags, title=title, project=project or None,
            source=source, pin=pin, pin_reason=pin_reason, pin_category=pin_category, created_at=created_at,
            expires_at=expires_at, context=context,
        )
        return Remembered(memory_id, created)

    def share(self, id_or_text: str, team: str | None = None) -> Remembered:
        """Share one of your memories (by id or id prefix), a rule included, or new text, with a team."""
        from cems_cli.engine.rule_management import share_rule

        team = team or self.settings.team
        if not team:
            raise UserError("sharing needs a team: set CEMS_TEAM or pass --team")
        service = self._service
        if team != service.settings.team:
            service = service.for_identity(service.settings.user, team, service.settings.project)
        try:
            record = service.get(id_or_text)
        except UserError:
            record = None
        if record is not None and record.category == "rules":
            return Remembered(*share_rule(service, record.id))
        return Remembered(*service.share(id_or_text, team=team))

    # Reading --------------------------------------------------------------------------------------------
    def search_options(self, *, cwd: str | None = None, **options: Any) -> SearchOptions:
        """The options of a search, as `search` would build them from its keywords: the settings as they
        stand now (stored ones included), then `options` (None leaves a setting). The current project is
        `cwd`'s unless `current_project` is given."""
        return self._service.search_options(cwd=cwd, **options)

    def recall_options(self, **options: Any) -> RecallOptions:
        """The options of a recall: the settings as they stand now (CEMS_RECALL_*, `cems config set`), then
        `options` (None leaves a setting)."""
        return self._service.recall_options(**options)

    def search(
        self,
        query: str,
        options: SearchOptions | None = None,
        *,
        limit: int | None = None,
        category: str | None = None,
        scope: str = "both",
        project: str | None = None,
        mode: str | None = None,
        explain: bool = False,
        cwd: str | None = None,
        track_access: bool = True,
        now: datetime | None = None,
        include_weak: bool = False,
    ) -> list[SearchResult]:
        """The memories that answer `query`, best first (hybrid vector + full text unless `mode` says).
        `project` filters to one project; results of the current project (from `cwd`) rank higher. Only
        results at or above the confidence floor (CEMS_RECALL_MIN_CONFIDENCE, the prompt hook's) come back,
        so a query that matches nothing gets []; `include_weak=True` returns the rest too, marked `weak`.
        `options` (from `search_options()`) stands for all the keywords at once."""
        keywords = (limit, category, scope, project, mode, explain, cwd, track_access, now, include_weak)
        if options is None:
            options = self.search_options(
                limit=limit, category=category, scope=scope, project=project, mode=mode, explain=explain,
                cwd=cwd, track_access=track_access, now=now, include_weak=include_weak,
            )
        elif keywords != (None, None, "both", None, None, False, None, True, None, False):
            raise TypeError("search takes options or keywords, not both")
        return self._service.search(query, options)

    def recall(
        self,
        prompt: str,
        options: RecallOptions | None = None,
        *,
        project: str | None = None,
        limit: int | None = None,
        token_budget: int | None = None,
        min_score: float | None = None,
        min_relative: float | None = None,
        min_similarity: float | None = None,
        min_confidence: float | None = None,
        mode: str | None = None,
        timeout: float | None = None,
        exclude: Sequence[str] = (),
    ) -> list[SearchResult]:
        """What to put in front of an agent for this prompt: few memories, each clearly relevant, within a
        token budget (what is not given comes from the settings: CEMS_RECALL_*, `cems config set`). Recall
        is not an access (it does not raise a memory's priority) but it is use: `last_recalled` is stamped,
        which context expiry reads. `timeout` (seconds): the answer is due by then; the LLM stages share
        what is left and drop what cannot finish, so a hung endpoint cannot make the prompt wait.
        `exclude`: ids the agent's context already holds (its session's profile); others take their place.
        `options` (from `recall_options()`) stands for all the keywords at once."""
        import time

        keywords = (project, limit, token_budget, min_score, min_relative, min_similarity, min_confidence,
                    mode, timeout, tuple(exclude))
        if options is None:
            options = self.recall_options(
                current_project=project, limit=limit, token_budget=token_budget, min_score=min_score,
                min_relative=min_relative, min_similarity=min_similarity, min_confidence=min_confidence,
                mode=mode, deadline=time.monotonic() + timeout if timeout else None,
                exclude_ids=frozenset(str(i) for i in exclude),
            )
        elif keywords != (None,) * 9 + ((),):
            raise TypeError("recall takes options or keywords, not both")
        return self._service.recall(prompt, options)

    def profile(self, project: str | None = None, token_budget: int | None = None) -> str:
        """The `<memory-profile>` block a session starts with: pinned guidelines, preferences, recent
        context and learnings of the project."""
        from cems_cli import defaults
        from cems_cli.engine.recall import build_profile

        budget = defaults.PROFILE_TOKEN_BUDGET if token_budget is None else token_budget
        return build_profile(self._service, project, budget)

    def profile_with_ids(
        self, project: str | None = None, token_budget: int | None = None
    ) -> tuple[str, list[str]]:
        """`profile`, and the ids of the memories it shows."""
        from cems_cli import defaults
        from cems_cli.engine.recall import profile_with_ids

        budget = defaults.PROFILE_TOKEN_BUDGET if token_budget is None else token_budget
        return profile_with_ids(self._service, project, budget)

    def get(self, id_or_prefix: str) -> MemoryRecord:
        return self._service.get(id_or_prefix)

    # Progressive recall: an index first, the full texts chosen from it (cems_cli/progressive.py) --------
    def search_index(self, query: str, **options: Any) -> list[IndexEntry]:
        """`search`, as a compact index: id, title, date, category, confidence and what each full text
        costs in tokens (`get_many` fetches the texts chosen). Takes `search`'s options."""
        from cems_cli.progressive import entry_of_result

        return [entry_of_result(result) for result in self.search(query, **options)]

    def timeline(self, id_or_prefix: str | None = None, *, session: str | None = None, before: int = 5,
                 after: int = 5, within: str | None = None) -> Timeline:
        """What was stored around a memory (within its session, else its project) or a session (its
        memories, and its project's before and after), oldest first, as index entries."""
        from cems_cli.engine.lookup import timeline

        return timeline(self._service, id_or_prefix, session=session, before=before, after=after,
                        within=within)

    def get_many(self, ids: Sequence[str]) -> list[Fetched]:
        """The live memories of these ids (or prefixes), in order; an id that names none of yours (unknown,
        another user's, forgotten) gets its own one-line error instead of failing the rest."""
        from cems_cli.engine.lookup import get_many

        return get_many(self._service, ids)

    def list_memories(
        self, *, scope: str = "both", category: str | None = None, project: str | None = None, limit: int = 50
    ) -> list[MemoryRecord]:
        """Your memories (and your team's shared ones), newest first."""
        return self._service.list_memories(scope=scope, category=category, project=project, limit=limit)

    def current_project(self, cwd: str | None = None) -> str:
        """The `project:<name>` reference of a folder (its git remote, else its path), or CEMS_PROJECT."""
        return self.settings.current_project(cwd)

    # Changing -------------------------------------------------------------------------------------------
    def forget(self, ids: str | Sequence[str], *, purge: bool = False) -> list[str]:
        """Forget memories by id or id prefix, all or none (archive; `purge` deletes). Returns full ids."""
        return self._service.forget_many([ids] if isinstance(ids, str) else list(ids), purge=purge)

    def forget_where(self, *, tag: str | None = None, source: str | None = None, purge: bool = False,
                     confirm: Callable[[list[str]], bool] | None = None) -> list[str]:
        """Forget every live memory of yours with this tag and/or source; `confirm(ids)` may refuse."""
        selected = self._service.forgettable(tag=tag, source=source)
        if not selected or (confirm is not None and not confirm(selected)):
            return []
        return self._service.forget_ids(selected, purge=purge)

    def ids_where(self, *, tag: str | None = None, source: str | None = None) -> list[str]:
        """Ids of your live memories with this tag and/or source (what `forget_where` would forget)."""
        return self._service.forgettable(tag=tag, source=source)

    def forget_ids(self, ids: Sequence[str], *, purge: bool = False) -> list[str]:
        """Forget these full ids (from `ids_where`), all or none."""
        return self._service.forget_ids(ids, purge=purge)

    def pin(self, id_or_prefix: str, *, reason: str | None = None, category: str | None = None) -> str:
        """Pin a memory: never decayed, archived or consolidated away, first in the session profile."""
        return self._service.pin(id_or_prefix, reason=reason, pin_category=category)

    def unpin(self, id_or_prefix: str) -> str:
        return self._service.pin(id_or_prefix, unpin=True)

    def restore(self, id_or_prefix: str) -> Restored:
        """Bring back an archived memory (merged by `maintain`, expired or forgotten); a merge is undone on
        the memory it went into, and the two are not merged again. UserError for an unknown id."""
        restored: Restored = self._service.restore(id_or_prefix)
        return restored

    # Browsing (`cems ui`) -------------------------------------------------------------------------------
    def browse(
        self, *, category: str | None = None, scope: str = "both", project: str | None = None,
        source: str | None = None, pinned: bool | None = None, since: datetime | None = None,
        until: datetime | None = None, state: str = "live", limit: int = 50, offset: int = 0,
    ) -> list[MemoryRecord]:
        """Your memories (and your team's shared ones) by filters, pinned first, newest first. `state`:
        live, archived (forgotten, merged, expired: what `restore` can bring back) or all."""
        from cems_cli.store.browse import STATES, Filters, browse

        service = self._service
        if state not in STATES:
            raise UserError(f"unknown state {state!r} (expected one of: {', '.join(STATES)})")
        if limit < 1 or offset < 0:
            raise UserError("--limit must be at least 1")
        filters = Filters(category=service._category(category), scope=service._search_scope(scope),
                          project=project or None, source=source or None, pinned=pinned, since=since,
                          until=until, state=state)
        return browse(service.conn, service.identity, filters, limit=limit, offset=offset)

    def history(self, id_or_prefix: str) -> History:
        """What happened to one memory: stored, edited, used (searches, recall), merged, archived; on a team
        server the audit trail's entries for it. UserError for an id you cannot see."""
        from cems_cli.store.browse import history

        service = self._service
        found = history(service.conn, service.identity, service.resolve(id_or_prefix))
        if found is None:
            raise UserError(f"no memory with id {id_or_prefix!r}")
        return found

    def edit(self, id_or_prefix: str, text: str, *, title: str | None = None) -> str:
        """New text for one of your live memories (redacted and checked like `remember`'s, re-embedded);
        its category, tags, project and provenance stay. Rules change through `rules`, not here."""
        service = self._service
        record = service.get(id_or_prefix)
        if record.category == "rules":
            raise UserError(f"{id_or_prefix!r} is a guard rule: change it with `cems rule`")
        if record.archived:
            raise UserError(f"memory {id_or_prefix!r} is forgotten: restore it before editing")
        if record.user_id != service.settings.user:
            raise UserError(f"memory {id_or_prefix!r} is not yours to edit")
        # "manual": a person's edit is refused whole when too large, never cut (see MemoryService.prepare).
        memory = service.prepare(text, category=record.category, scope=record.scope, tags=record.tags,
                                 title=record.title if title is None else title, project=record.source_ref,
                                 source="manual", context=record.context)
        if memory.content == record.content and memory.title == record.title:
            return record.id
        if not service.replace(record.id, memory):
            raise UserError("another memory of yours already holds this text: nothing changed")
        return record.id

    def sessions(self, project: str | None = None, *, limit: int = 30) -> list[SessionEntry]:
        """The latest agent sessions and what each stored (memories tagged `session:<id>`), newest first."""
        from cems_cli.store.browse import sessions

        if limit < 1:
            raise UserError("--limit must be at least 1")
        return sessions(self._service.conn, self._service.identity, project or None, limit=limit)

    def changes(self, stop: threading.Event) -> Iterator[Change]:
        """Memories stored, changed, forgotten, restored or purged by any process, as they commit (within a
        quarter of a second), until `stop` is set: yours and your teams' shared ones, ids only (read them with
        `get`). Holds a connection of its own while it runs."""
        from cems_cli.store.changes import changes
        from cems_cli.store.db import connect

        with contextlib.closing(connect(self.settings)) as conn:
            yield from changes(conn, stop)

    def change_batches(self, stop: threading.Event) -> Iterator[list[Change]]:
        """`changes`, for a reader that reads what changed: one batch of distinct ids per poll (at most 100;
        more is one `bulk` change), so a burst of writes costs it one read (store/changes.py)."""
        from cems_cli.store.changes import batches
        from cems_cli.store.db import connect

        with contextlib.closing(connect(self.settings)) as conn:
            yield from batches(conn, stop)

    def records(self, ids: Sequence[str]) -> dict[str, MemoryRecord]:
        """The memories among these full ids you may see (archived ones too), by id, in one read; ids of
        no memory of yours are left out. At most 1000 ids."""
        from cems_cli.store.memories import get_memories

        if len(ids) > 1000:
            raise UserError("at most 1000 ids at a time")
        service = self._service
        return {record.id: record for record in get_memories(service.conn, service.identity, list(ids))}

    def rule_firings(self) -> dict[str, dict[str, int]]:
        """How often each rule fired on this machine ({rule id: {block/ask/warn: times}}), as the PreToolUse
        hook counted them in CEMS_HOME."""
        from cems_cli.rules.hits import counts

        return counts(str(self.settings.home))

    def recall_preview(self, prompt: str, *, project: str | None = None,
                       exclude: Sequence[str] = ()) -> list[SearchResult]:
        """What `recall` would return for this prompt, with each result's explain, without stamping the
        memories as recalled (looking is not use)."""
        options = self.recall_options(current_project=project, exclude_ids=frozenset(exclude), explain=True,
                                      stamp=False)
        return self._service.recall(prompt, options)

    # The store ------------------------------------------------------------------------------------------
    def status(self) -> Status:
        from cems_cli.store import footprint, memories

        service = self._service
        rows = memories.counts(service.conn, service.identity)
        settings = self.settings
        return Status(
            user=settings.user,
            team=settings.team,
            project=settings.current_project(),
            home=str(settings.home),
            embedding={
                "backend": settings.embedding_backend,
                "model": settings.resolved_embedding_model,
                "dim": settings.resolved_embedding_dim,
            },
            llm={
                "configured": settings.llm_configured,
                "model": settings.llm_model if settings.llm_configured else None,
            },
            counts=[{"scope": s, "category": c, "count": n} for s, c, n in rows],
            memory={"page_cache": footprint.page_cache(service.conn), "model_bytes": _model_bytes(settings)},
        )

    def maintain(
        self, *, dry_run: bool = False, progress: Callable[[str], None] | None = None
    ) -> MaintenanceReport:
        """Consolidate near-duplicates, expire what is past its date, prune the long archived (seed 003)."""
        from cems_cli.engine.maintain import run_maintenance

        settings = self._service.live_settings()  # context_ttl_days, archive_grace_days may be stored
        return run_maintenance(self._service.conn, settings, dry_run=dry_run, progress=progress)

    def summaries(self, project: str | None = None) -> list[StoredSummary]:
        """Your summaries of groups of memories (level 1) and of projects (level 2), what an overview
        question is answered from first. `project`: `project:name`, or "" for memories of no project."""
        return list_summaries(self._service.conn, self._service.settings.user, project)

    def summarize(self, *, dry_run: bool = False) -> SummaryReport:
        """Bring your summaries up to date now (maintenance does it daily): a group whose memories did not
        change keeps its text; with an LLM configured a new summary is the model's."""
        return build_summaries(self._service.conn, self._service.live_settings(), dry_run=dry_run)

    # Teams and audit (a shared server) ------------------------------------------------------------------
    def audit(self, *, team: str | None = None, since: datetime | str | None = None,
              limit: int = 200) -> list[AuditEntry]:
        """The audit trail you may read, newest first: who wrote, changed, shared, forgot or searched shared
        memories and rules (your own actions, your teams', everything for an administrator). `since` is a
        time or a duration back from now (`30m`, `12h`, `1d`, `2w`)."""
        from cems_cli.store.audit import entries
        from cems_cli.teams import parse_since

        if limit < 1:
            raise UserError("--limit must be at least 1")
        start = parse_since(since, datetime.now(UTC)) if isinstance(since, str) else since
        return entries(self._service.conn, team=team, since=start, limit=limit)

    def whoami(self) -> dict[str, Any]:
        """Who the store takes you for: on a shared server the database decides (your role, its mapping, your
        teams); on the embedded store, CEMS_USER."""
        service = self._service
        session = service.session
        settings = self.settings
        found = {"user": settings.user, "team": settings.team, "restricted": service.restricted}
        return {**found, **({"database": session.to_json()} if session is not None else {})}

"""The memory operations every front end shares (CLI, hooks, observer, eval): one place, one flow.

The package's modules each hold one part: `_resources` (settings, connection, embedders, identity, a
team server's quotas and audit), `_writing` (prepare and store a memory); `MemoryService` here adds
reading, searching and changing memories.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from cems_cli.engine.service._writing import Writing
from cems_cli.errors import UserError
from cems_cli.models import PinCategory, parse_choice
from cems_cli.results import SearchResult
from cems_cli.store.records import MemoryRecord

if TYPE_CHECKING:
    import psycopg

    from cems_cli.retrieval.options import RecallOptions, SearchOptions

__all__ = ["MemoryService", "UserError"]


class MemoryService(Writing):
    """One user's memory operations: prepare, store, search, recall, forget, pin, share (the reading and
    changing ones here; writing and resources in its bases)."""

    def for_identity(
        self, user: str | None, team: str | None, project: str | None, conn: psycopg.Connection | None = None
    ) -> MemoryService:
        """A service for another user/team/project that shares this one's connection (or uses `conn`, one
        of a pool's) and model."""
        update: dict[str, Any] = {"user": user or self.settings.user, "team": team, "project": project}
        sibling = MemoryService(self._base_settings.model_copy(update=update))
        sibling._conn, sibling._embedder, sibling._query_embedder, sibling._session = (
            conn or self._conn,
            self._embedder,
            self._query_embedder,
            self._session,  # the same connection is the same database identity: bound to it, not to `user`
        )
        return sibling

    def __enter__(self) -> MemoryService:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # Reading --------------------------------------------------------------------------------------
    def resolve(self, id_or_prefix: str) -> str:
        from cems_cli.store import memories

        resolved = memories.resolve_id(self.conn, self.identity, id_or_prefix)
        if resolved is None:
            raise UserError(f"no memory with id {id_or_prefix!r}")
        return resolved

    def get(self, id_or_prefix: str) -> MemoryRecord:
        from cems_cli.store import memories

        record = memories.get_memory(self.conn, self.identity, self.resolve(id_or_prefix))
        if record is None:
            raise UserError(f"no memory with id {id_or_prefix!r}")
        return record

    def list_memories(
        self, *, scope: str = "both", category: str | None = None, project: str | None = None, limit: int = 50
    ) -> list[MemoryRecord]:
        from cems_cli.store import memories

        scope, category = self._search_scope(scope), self._category(category)
        if limit < 1:
            raise UserError("--limit must be at least 1")
        return memories.list_memories(
            self.conn, self.identity, scope=scope, category=category, project=project, limit=limit
        )

    def search_options(self, *, cwd: str | None = None, **overrides: Any) -> SearchOptions:
        """A search's options: the live settings (read now), then `overrides` (None leaves a setting as it
        is). The current project is `cwd`'s unless given. TypeError for an option that does not exist."""
        from cems_cli.retrieval.options import SearchOptions

        settings = self.live_settings()
        if overrides.get("current_project") is None:
            overrides["current_project"] = settings.current_project(cwd)
        return SearchOptions.from_settings(settings, **overrides)

    def recall_options(self, **overrides: Any) -> RecallOptions:
        """What the prompt hook's recall asks: the live settings (CEMS_RECALL_*, `cems config set
        recall_limit 2`, …, read now), then `overrides` (None leaves a setting as it is)."""
        from cems_cli.retrieval.options import RecallOptions

        return RecallOptions.from_settings(self.live_settings(), **overrides)

    def search(self, query: str, options: SearchOptions | None = None) -> list[SearchResult]:
        """Results at or above the confidence floor (`options.min_confidence`, the prompt hook's); with
        `options.include_weak` the rest too, each marked `weak`. `options`: `search_options()` when None."""
        from cems_cli.retrieval.pipeline import run_search

        query = " ".join((query or "").replace("\x00", "").split())
        if not query:
            raise UserError("search query is empty")
        if options is None:
            options = self.search_options()
        if options.limit < 1:
            raise UserError("--limit must be at least 1")
        if options.mode not in ("vector", "hybrid", "auto"):
            raise UserError(f"unknown mode {options.mode!r} (expected one of: vector, hybrid, auto)")
        options = options.replace(category=self._category(options.category),
                                  scope=self._search_scope(options.scope))
        recorded = self.begin_search("search", query, options.scope)
        results = run_search(self, query, options)
        for result in results:
            result.weak = result.confidence < options.min_confidence
        if recorded:
            self.end_search(results)
        if options.track_access and results:
            from cems_cli.store.memories import record_access

            record_access(self.conn, [r.id for r in results])
        return results

    def recall(self, prompt: str, options: RecallOptions | None = None) -> list[SearchResult]:
        """What the prompt hook injects. `options`: `recall_options()` when None; its `deadline` is a
        time.monotonic() moment the answer is due, its `exclude_ids` the ids already in the agent's context
        (left out before the limit and budget apply), and `stamp=False` (a preview) leaves last_recalled as
        it was."""
        from cems_cli.retrieval.pipeline import run_search
        from cems_cli.store.memories import record_recall

        query = " ".join((prompt or "").replace("\x00", "").split())
        if not query:
            return []
        if options is None:
            options = self.recall_options()
        options = options.replace(limit=max(1, options.limit))
        recorded = self.begin_search("recall", query, options.scope)
        results = run_search(self, query, options)
        if recorded:
            self.end_search(results)
        if results and options.stamp:
            # Recall on every prompt is not an access: counting it raised the priority of whatever was
            # injected, so a memory that matched loosely once was injected ever more often (on the capture
            # benchmark the session records reached priority 2.0 and topped unrelated questions). It is use,
            # though: only last_recalled is stamped, which the expiry of captured context memories reads, or
            # a record injected every day would be archived as unused.
            import psycopg

            try:
                record_recall(self.conn, [r.id for r in results])
            except psycopg.Error:  # the stamp is bookkeeping: never lose the answer over it
                import logging

                logging.getLogger(__name__).warning("recall stamp failed", exc_info=True)
        return results

    # Changing -------------------------------------------------------------------------------------
    def forget(self, id_or_prefix: str, purge: bool = False) -> str:
        return self.forget_many([id_or_prefix], purge=purge)[0]

    def forget_many(self, ids_or_prefixes: Sequence[str], purge: bool = False) -> list[str]:
        """Forget (archive, or with `purge` delete) several memories in one transaction: all of them, or none
        when any id is unknown or not yours. Returns their full ids, in the order given, without repeats."""
        from cems_cli.store import memories

        if not ids_or_prefixes:
            raise UserError("no memory id given")
        resolved = memories.resolve_ids(self.conn, self.identity, ids_or_prefixes)
        unknown = list(dict.fromkeys(given for given in ids_or_prefixes if resolved[given] is None))
        if unknown:
            names = ", ".join(repr(given) for given in unknown)
            several = len(ids_or_prefixes) > 1
            raise UserError(f"no memory with id {names}" + ("; nothing was forgotten" if several else ""))
        # The first spelling of an id the user typed names it in messages (a prefix, not the full id).
        labels: dict[str, str] = {}
        for given in ids_or_prefixes:
            labels.setdefault(resolved[given] or given, given)
        return self.forget_ids(list(labels), purge=purge, labels=labels)

    def forgettable(self, *, tag: str | None = None, source: str | None = None) -> list[str]:
        """Ids of your own live memories with this tag and/or source: what `forget --tag/--source` forgets."""
        from cems_cli.store import memories

        if tag is None and source is None:
            raise UserError("select memories with --tag or --source")
        # Rules are left out: they are removed one by one with `cems rule rm` (see forget_ids).
        return memories.owned_live_ids(self.conn, self.identity, tag=tag, source=source, rules=False)

    def forget_ids(
        self, memory_ids: Sequence[str], *, purge: bool = False, labels: dict[str, str] | None = None,
        rules: bool = False,
    ) -> list[str]:
        """Forget these full ids in one transaction, rolled back unless every one of them was yours and live
        (or, for a purge, still there). A rule is forgotten only with `rules` (`cems rule rm`): `forget` is
        also the agent's (MCP, the plugin's pre-approved `cems forget`), and an agent must not be able to
        lift the rules that guard it."""
        from cems_cli.store import memories

        ids = list(dict.fromkeys(memory_ids))
        if not ids:
            return []
        with self.conn.transaction():
            # On a team server an admin of a team may forget its shared memories (the policies agree).
            admin_teams = self.session.admin_teams if self.restricted and self.session else ()
            done = memories.forget_memories(
                self.conn, self.identity, ids, purge=purge, admin_teams=admin_teams
            )
            refused = [memory_id for memory_id in ids if memory_id not in done]
            several = "; nothing was forgotten" if len(ids) > 1 else ""
            if refused:  # raising inside the transaction rolls back what the statement already changed
                name = (labels or {}).get(refused[0], refused[0])
                raise UserError(f"memory {name!r} is not yours to forget, or already forgotten{several}")
            guarded = [memory_id for memory_id, category in done.items() if category == "rules"]
            if guarded and not rules:
                name = (labels or {}).get(guarded[0], guarded[0])
                raise UserError(f"{name!r} is a guard rule: rules are removed only by the user, in a "
                                f"terminal, with `cems rule rm {name}`{several}")
        if "rules" in done.values():
            # A forgotten rule must stop blocking at once: the hook reads only the snapshot.
            from cems_cli.rules.refresh import write_rules_snapshot

            write_rules_snapshot(self.conn, self.identity, self.settings.home)
        return ids

    def restore(self, id_or_prefix: str) -> Any:
        """Bring back one of your archived memories: merged by consolidation (what the merge changed on the
        memory it went into is taken back, and the two are never merged again), expired (its expiry is
        cleared) or forgotten. Returns store.lifecycle.Restored; UserError for an unknown id or one that
        cannot be restored."""
        from cems_cli.store import lifecycle, memories

        memory_id = memories.resolve_ids(self.conn, self.identity, [id_or_prefix])[id_or_prefix]
        with self.conn.transaction():
            try:
                restored = lifecycle.restore(self.conn, self.identity.user, memory_id) if memory_id else None
            except lifecycle.RestoreError as error:
                raise UserError(str(error)) from None
            if restored is None:
                raise UserError(f"no archived memory of yours with id {id_or_prefix!r}")
        if restored.category == "rules":
            # A restored rule applies again at once: the hook reads only the snapshot.
            from cems_cli.rules.refresh import write_rules_snapshot

            write_rules_snapshot(self.conn, self.identity, self.settings.home)
        return restored

    def pin(
        self,
        id_or_prefix: str,
        *,
        reason: str | None = None,
        pin_category: str | None = None,
        unpin: bool = False,
    ) -> str:
        from cems_cli.store import memories
        from cems_cli.text.redact import sanitize_field

        reason = sanitize_field(reason)  # stored beside the content, so kept to the same privacy rules
        category = parse_choice(PinCategory, pin_category, "pin category").value if pin_category else None
        memory_id = self.resolve(id_or_prefix)
        admin_teams = self.session.admin_teams if self.restricted and self.session else ()
        if self.restricted:
            found = memories.get_memory(self.conn, self.identity, memory_id)
            if found is not None and found.scope == "shared" and found.team_id not in admin_teams:
                raise UserError(f"only an admin of team {found.team_id!r} can pin its shared memories")
        if not memories.pin_memory(
            self.conn, self.identity, memory_id, pinned=not unpin, reason=reason, pin_category=category,
            admin_teams=admin_teams,
        ):
            raise UserError(f"memory {id_or_prefix!r} is not yours to pin, or is forgotten")
        return memory_id

    def share(self, id_or_text: str, team: str | None = None) -> tuple[str, bool]:
        """Share an existing memory (by id) or new text with the team, as a shared-scope copy."""
        team = team or self.settings.team
        if not team:
            raise UserError("sharing needs a team: set CEMS_TEAM or pass --team")
        if team != self.settings.team:
            self.require_team(team)
            self._base_settings = self._base_settings.model_copy(update={"team": team})
            self.settings = self.settings.model_copy(update={"team": team})
        source: MemoryRecord | None = None
        try:
            source = self.get(id_or_text)
        except UserError:
            from cems_cli.store.memories import looks_like_id

            if looks_like_id(id_or_text):
                # An id you cannot see (another user's, a typo, an ambiguous prefix) is not new text to share:
                # storing "3f2a91c0" as a memory would also tell nothing about why the share failed.
                shown = id_or_text.strip()
                raise UserError(f"no memory with id {shown!r} that you can see: nothing shared") from None
            source = None
        if source is not None and source.category == "rules":
            # A rule is its memory plus a spec in the rules table: the library shares both (cems.Memory.share,
            # through rules.manage); a bare copy of the memory would block nothing.
            raise UserError(f"{id_or_text!r} is a rule: share it through the library (cems.Memory.share)")
        if source is not None:
            memory = self.prepare(
                source.content,
                category=source.category,
                scope="shared",
                tags=source.tags,
                title=source.title,
                project=source.source_ref,
                source=source.source,
                pin=source.pinned,
                pin_reason=source.pin_reason,
                pin_category=source.pin_category,
            )
        else:
            memory = self.prepare(id_or_text, scope="shared")
        return self.store(memory)

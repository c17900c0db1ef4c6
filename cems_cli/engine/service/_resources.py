"""What a `MemoryService` works with: its settings (bound to the database's identity on a shared server,
with the stored ones applied), its connection and embedders, and the quotas and audit of a team server."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from cems_cli.config import Settings
from cems_cli.errors import UserError
from cems_cli.models import MemoryCategory, SearchScope, parse_choice
from cems_cli.results import SearchResult

if TYPE_CHECKING:
    import psycopg

    from cems_cli.embedding import Embedder
    from cems_cli.store.memories import Identity
    from cems_cli.store.teams import Session


class ServiceResources:
    """The resources and the identity of a `MemoryService` (its base): built lazily, shared by
    `for_identity`'s siblings."""

    def __init__(self, settings: Settings) -> None:
        # What the environment, config.toml and the defaults say; `settings` adds the values stored with
        # `cems config set`, read again by `live_settings()` before each search.
        self._base_settings = settings
        self._settings = settings
        self._conn: psycopg.Connection | None = None
        self._embedder: Embedder | None = None
        self._query_embedder: Embedder | None = None
        # On a shared server (CEMS_DATABASE_URL) who you are comes from the database, not from CEMS_USER:
        # the settings are bound to the session's identity before anything reads them (`_bind`). The
        # embedded store is always a privileged session, so it is never asked and never connects early.
        self._session: Session | None = None
        self._bound = settings.database_url is None
        self._binding = False

    # Resources ------------------------------------------------------------------------------------
    @property
    def settings(self) -> Settings:
        if not self._bound:
            self._bind()
        return self._settings

    @settings.setter
    def settings(self, value: Settings) -> None:
        self._settings = value

    @property
    def base_settings(self) -> Settings:
        """The settings before stored ones: environment, config.toml, defaults."""
        if not self._bound:
            self._bind()
        return self._base_settings

    @property
    def session(self) -> Session | None:
        """Who the database says this connection is (None on the embedded store: its superuser)."""
        if self._session is None and self._settings.database_url is not None:
            from cems_cli.store.teams import session

            self._session = session(self.conn)
        return self._session

    @property
    def restricted(self) -> bool:
        """Row-level security applies: an application role on a shared server (teams, quotas, identity)."""
        session = self.session
        return session is not None and session.restricted

    def _bind(self) -> None:
        """A restricted session's user is the database's (a forged CEMS_USER is ignored), and CEMS_TEAM must
        be one of its teams. A privileged session keeps the configured user: it acts for whoever it says."""
        if self._binding:
            return
        self._binding = True
        try:
            if self.restricted:
                assert self._session is not None
                if self._base_settings.team is not None:
                    self.require_team(self._base_settings.team)
                update = {"user": self._session.user}
                self._base_settings = self._base_settings.model_copy(update=update)
                self._settings = self._settings.model_copy(update=update)
            self._bound = True
        finally:
            self._binding = False

    def require_team(self, team: str, *, admin: bool = False, doing: str = "add shared rules") -> None:
        """UserError unless a restricted session's user is a member (or, with `admin`, an admin) of `team`.
        The database refuses the write anyway; this says why in one line, before any work."""
        if not self.restricted:
            return
        from cems_cli.store.teams import session

        assert self._session is not None
        for attempt in range(2):
            if team in (self._session.admin_teams if admin else self._session.teams):
                return
            if attempt == 0:  # membership may have changed since the session was read (a long-lived server)
                self._session = session(self.conn)
        who = self._session.user
        if team not in self._session.teams:
            teams = ", ".join(self._session.teams) or "no team"
            raise UserError(f"{who} is not a member of team {team!r} (member of: {teams})")
        raise UserError(f"only an admin of team {team!r} can {doing}; {who} is a member")

    def live_settings(self) -> Settings:
        """The settings with the stored ones applied (environment > user > team > config.toml > default),
        as of now: one one-row read when nothing was stored or changed since the last call."""
        from cems_cli.live_settings import LIVE, apply

        base = self.base_settings
        self.settings = apply(base, LIVE.stored(self.conn, base.user, base.team))
        return self.settings

    @property
    def conn(self) -> psycopg.Connection:
        if self._conn is None:
            from cems_cli.store.db import connect

            self._conn = connect(self._settings)
        return self._conn

    def connect_again(self) -> psycopg.Connection:
        """A second connection to the same store (to watch a long statement running on the first)."""
        from cems_cli.store.db import connect

        return connect(self._settings, check_dimension=False)

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            from cems_cli.embedding import get_embedder

            self._embedder = get_embedder(self.settings)
        return self._embedder

    @property
    def query_embedder(self) -> Embedder:
        """The embedder for queries, behind an in-memory and on-disk cache."""
        if self._query_embedder is None:
            from cems_cli.embedding.cache import CachedQueryEmbedder

            self._query_embedder = CachedQueryEmbedder(
                self.embedder, self.settings.home / "cache" / "queries.db"
            )
        return self._query_embedder

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    @property
    def identity(self) -> Identity:
        from cems_cli.store.memories import Identity

        return Identity(self.settings.user, self.settings.team, self.restricted)

    # Quotas and audit (a team server) -------------------------------------------------------------
    def reserve(self, count: int) -> None:
        """UserError when storing `count` more memories would pass the user's quota on a shared server:
        asked before anything is embedded (the database checks again on insert)."""
        if count < 1 or not self.restricted:
            return
        from cems_cli.store.teams import memory_usage

        limit, stored = memory_usage(self.conn)
        if limit is not None and stored + count > limit:
            adding = f" (this adds {count})" if count > 1 else ""
            raise UserError(
                f"memory quota reached: {self.settings.user} stores {stored} of {limit} memories{adding}; "
                "forget some or ask an administrator (cems admin quota)"
            )

    def begin_search(self, action: str, query: str, scope: str) -> bool:
        """On a shared server, before the query is embedded: the database counts the search against the
        user's searches-per-minute quota (UserError once the minute's allowance is spent), records it in the
        audit trail when it reads a team's shared memories (who, when, a hash of the query), and lets this
        connection's search functions run (sql/025_searches_and_changes.sql). Returns whether it is
        recorded: `end_search` then adds its results."""
        if self._settings.database_url is None:
            return False  # the embedded store has one user: no one else's searches to account for
        import psycopg

        from cems_cli.store.audit import begin_search

        try:
            return begin_search(self.conn, action, scope, self.settings.team, query, self.settings.user)
        except psycopg.errors.ConfigurationLimitExceeded as error:
            raise UserError(f"{error.diag.message_primary}; try again in a minute") from None

    def end_search(self, results: Sequence[SearchResult]) -> None:
        """Which of the team's shared memories a recorded search returned, and how many results, onto its
        audit row."""
        from cems_cli.store.audit import end_search

        end_search(self.conn, len(results), [result.id for result in results if result.scope == "shared"])

    # Helpers --------------------------------------------------------------------------------------
    @staticmethod
    def _category(category: str | None) -> str | None:
        if category is None:
            return None
        return parse_choice(MemoryCategory, category, "category").value

    @staticmethod
    def _search_scope(scope: str) -> str:
        return parse_choice(SearchScope, scope, "scope").value

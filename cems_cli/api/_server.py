"""The store as a whole and a team server's administration: teams and members, `cems admin` (init, grant,
quotas), and re-embedding every memory after a model change. Not one user's memories (`Memory`)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from cems_cli.config import Settings
from cems_cli.errors import UserError

if TYPE_CHECKING:
    from cems_cli.api._memory import Memory
    from cems_cli.store.teams import TeamRow


@dataclass(frozen=True)
class Reindexed:
    chunks: int
    model: str
    dim: int

    def to_json(self) -> dict[str, Any]:
        return {"chunks": self.chunks, "model": self.model, "dim": self.dim}


def reindex(settings: Settings, *, progress: Callable[[int, int], None] | None = None) -> Reindexed:
    """Re-embed every chunk of the store (every user's) with the configured model, all or nothing: after
    switching embedding models or dimensions. An administrator's operation, hence not a `Memory` method."""
    from cems_cli.embedding import get_embedder
    from cems_cli.store.db import connect
    from cems_cli.store.reindex import reindex as run_reindex

    with contextlib.closing(connect(settings, check_dimension=False)) as conn:
        if settings.database_url:
            from cems_cli.store.teams import session

            # Under row-level security it would re-embed only your rows, then record the new model for all.
            if session(conn).restricted:
                raise UserError("reindex re-embeds every user's memories: the database administrator runs it")
        embedder = get_embedder(settings)
        model = settings.resolved_embedding_model
        return Reindexed(run_reindex(conn, embedder, model, progress=progress), model, embedder.dim)


class Teams:
    """Teams on a shared server (`cems team …`): who shares memories and rules with whom. Teams and members
    are rows the database guards: administrators (cems_admin) create teams, a team's admins manage its
    members; everyone sees the teams they belong to."""

    def __init__(self, memory: Memory) -> None:
        self._memory = memory

    def create(self, name: str) -> str:
        from cems_cli.store import teams as store
        from cems_cli.teams import database_refusals

        with database_refusals():
            store.create_team(self._memory._service.conn, name)
        return name

    def add(self, team: str, member: str, *, admin: bool = False) -> str:
        """Add a database role (or a CEMS user) to a team, as an admin with `admin`; returns the CEMS user."""
        from cems_cli.store import teams as store
        from cems_cli.teams import database_refusals

        with database_refusals():
            return store.add_member(self._memory._service.conn, team, member, admin)

    def remove(self, team: str, member: str) -> str:
        from cems_cli.store import teams as store
        from cems_cli.teams import database_refusals

        with database_refusals():
            return store.remove_member(self._memory._service.conn, team, member)

    def list_teams(self) -> list[TeamRow]:
        from cems_cli.store import teams as store

        return store.list_teams(self._memory._service.conn)

    def show(self, name: str) -> dict[str, Any]:
        """A team you can see: its members, its live shared memories by category, its shared rules."""
        from cems_cli.store import teams as store

        conn = self._memory._service.conn
        team = store.get_team(conn, name)
        if team is None:
            raise UserError(f"no team {name!r} (or you are not a member)")
        restricted = self._memory._service.restricted
        counts = store.shared_counts(conn, name, restricted=restricted)
        return {**team.to_json(), "members": [m.to_json() for m in store.members(conn, name)],
                "shared_memories": sum(counts.values()), "shared_by_category": counts,
                "shared_rules": store.shared_rules(conn, name, restricted=restricted)}


def refusal(error: BaseException) -> str | None:
    """The one-line reason a team server refused a write (row-level security, a quota), else None."""
    from cems_cli.teams import refusal as reason

    return reason(error)


def init_server(settings: Settings) -> dict[str, Any]:
    """`cems admin init`: a database ready to serve a team (see cems_cli/teams.py)."""
    from cems_cli.teams import init_database

    return init_database(settings)


def grant_role(settings: Settings, role: str, *, user: str | None = None, create: bool = False,
               password: str | None = None, admin: bool = False) -> dict[str, Any]:
    """`cems admin grant`: make a database role a member of this team server."""
    from cems_cli.teams import grant

    return grant(settings, role, user=user, create=create, password=password, admin=admin)


def set_quota(settings: Settings, user: str, *, max_memories: int | None,
              searches_per_minute: int | None) -> list[dict[str, Any]]:
    from cems_cli.teams import set_quota as store_quota

    return store_quota(settings, user, max_memories=max_memories, searches_per_minute=searches_per_minute)


def list_quotas(settings: Settings) -> list[dict[str, Any]]:
    from cems_cli.teams import list_quotas as stored

    return stored(settings)


def end_stuck_sessions(settings: Settings, *, idle_seconds: float,
                       statement_seconds: float) -> list[dict[str, Any]]:
    """`cems admin watchdog`: end members' sessions idle in a transaction or in one statement too long."""
    from cems_cli.teams import end_stuck_sessions as end

    return end(settings, idle_seconds, statement_seconds)

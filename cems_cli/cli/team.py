"""`cems team …`: teams on a shared server (CEMS_DATABASE_URL), guarded by the database itself."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING

import typer

from cems_cli.cli.common import JsonOption, console, emit, emit_json

if TYPE_CHECKING:
    from cems_cli.api import Memory

team_app = typer.Typer(
    help="Teams on a shared server: who shares memories and rules with whom. Administrators create teams; "
    "a team's admins add and remove members and write its shared rules.",
    no_args_is_help=True,
)
NameArgument = typer.Argument(..., help="The team's name.")
RoleArgument = typer.Argument(..., help="A member's database role (or CEMS user name).")


@contextlib.contextmanager
def _memory() -> Iterator[Memory]:
    """These commands name their team: CEMS_TEAM (which must be one of yours) plays no part."""
    from cems_cli.api import Memory
    from cems_cli.config import get_settings

    with Memory(get_settings().model_copy(update={"team": None})) as memory:
        yield memory


@team_app.command("create")
def create(name: str = NameArgument, as_json: bool = JsonOption) -> None:
    """Create a team (CEMS administrators; you administer the team you create)."""
    with _memory() as memory:
        memory.teams.create(name)
    emit(as_json, {"team": name, "created": True}, f"created team {name}", markup=False)


@team_app.command("add")
def add(name: str = NameArgument, role: str = RoleArgument,
        admin: bool = typer.Option(False, "--admin", help="An admin of the team: manages members and "
                                   "writes its shared rules and settings."),
        as_json: bool = JsonOption) -> None:
    """Add a member to a team, or change whether they administer it."""
    with _memory() as memory:
        user = memory.teams.add(name, role, admin=admin)
    emit(as_json, {"team": name, "member": user, "role": role, "admin": admin},
         f"{user} is {'an admin' if admin else 'a member'} of team {name}", markup=False)


@team_app.command("remove")
def remove(name: str = NameArgument, role: str = RoleArgument, as_json: bool = JsonOption) -> None:
    """Remove a member from a team (what they shared stays the team's)."""
    with _memory() as memory:
        user = memory.teams.remove(name, role)
    emit(as_json, {"team": name, "member": user, "removed": True},
         f"removed {user} from team {name}", markup=False)


@team_app.command("list")
def list_(as_json: bool = JsonOption) -> None:
    """Your teams (every team, for an administrator)."""
    with _memory() as memory:
        teams = memory.teams.list_teams()
    if as_json:
        emit_json({"teams": [team.to_json() for team in teams]})
        return
    if not teams:
        console.print("no teams")
        return
    from rich.table import Table

    table = Table(title="Teams")
    for column in ("team", "members", "you", "created by"):
        table.add_column(column)
    for team in teams:
        table.add_row(team.name, str(team.members), "admin" if team.admin else "", team.created_by)
    console.print(table)


@team_app.command("show")
def show(name: str = NameArgument, as_json: bool = JsonOption) -> None:
    """A team's members, how many shared memories it has, and its shared rules."""
    with _memory() as memory:
        info = memory.teams.show(name)
    if as_json:
        emit_json(info)
        return
    console.print(f"team {info['name']}  ({info['shared_memories']} shared memories)", markup=False)
    for member in info["members"]:
        console.print(f"  {member['user']}{'  (admin)' if member['admin'] else ''}", markup=False)
    for rule in info["shared_rules"]:
        console.print(f"  rule {rule['id'][:8]}  {rule['action']}  {rule['tool']}: {rule['pattern']}  "
                      f"by {rule['author']}", markup=False)


def register(app: typer.Typer) -> None:
    app.add_typer(team_app, name="team")

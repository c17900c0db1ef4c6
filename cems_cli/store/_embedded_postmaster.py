"""The running server as `postmaster.pid` describes it: is it this cluster's postmaster (not a reused
PID), is it one we may use (private socket, password logins, its program still on disk), and clearing the
lock files a dead one left."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from cems_cli.store._embedded_layout import _SOCKET_FILE, SUPERUSER, _socket_dir, data_dir, password_file

_log = logging.getLogger("cems.server")


@dataclass(frozen=True)
class PostmasterState:
    pid: int
    port: int
    socket_dir: Path | None
    status: str
    passfile: Path | None = None

    def conninfo(self, dbname: str = "postgres") -> str:
        host = str(self.socket_dir) if self.socket_dir else "127.0.0.1"
        parts = [f"host={_quote(host)}", f"port={self.port}", f"user={SUPERUSER}", f"dbname={_quote(dbname)}"]
        if self.passfile is not None:
            parts.append(f"passfile={_quote(str(self.passfile))}")
        parts.append("connect_timeout=10")
        return " ".join(parts)


def _quote(value: str) -> str:
    """A libpq conninfo value (paths may hold spaces or quotes)."""
    if value and all(c.isalnum() or c in "/._-:" for c in value):
        return value
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def read_postmaster(pgdata: Path) -> PostmasterState | None:
    """Parse `postmaster.pid`; None when absent, unreadable or describing a process that is gone or is not
    this cluster's postmaster (a PID reused after a crash or a reboot)."""
    try:
        lines = (pgdata / "postmaster.pid").read_text().splitlines()
        pid = int(lines[0])
        port = int(lines[3]) if len(lines) > 3 and lines[3].strip() else 5432
        socket_dir = Path(lines[4].strip()) if len(lines) > 4 and lines[4].strip() else None
        status = lines[7].strip() if len(lines) > 7 else ""
    except (OSError, ValueError, IndexError):
        return None
    if not _pid_alive(pid) or not _is_postmaster(pid, lines, data_dir(pgdata)):
        return None
    passfile: Path | None = password_file(pgdata)
    if passfile is not None and not passfile.exists():
        passfile = None
    return PostmasterState(pid=pid, port=port, socket_dir=socket_dir, status=status, passfile=passfile)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, owned by another user (the server's own system user)
        return True
    return True


# How far the start time PostgreSQL records (line 3, whole seconds) may be from the one /proc gives
# (boot time + ticks, itself rounded to a second): a reused PID started long after the file was written.
_START_SLACK_SECONDS = 3.0


def _is_postmaster(pid: int, lines: list[str], cluster: Path) -> bool:
    """Is the live `pid` of a postmaster.pid (`lines`) the postmaster of `cluster`? It is if it runs the
    `postgres` program and either serves that data folder (`-D`, as pg_ctl starts it) or started when the
    file says. Anything else holds a PID the postmaster left behind: commands would fail to reach it for
    ever, and `pg_ctl stop` would signal it. Without /proc (another system) the file is trusted as before."""
    from cems_cli.plumbing import procinfo

    argv = procinfo.cmdline(pid)
    if argv is None:  # no /proc: cannot tell; a /proc that hides it: another user's, never our server
        return not os.path.isdir("/proc/self")
    if not argv or os.path.basename(argv[0]) not in (b"postgres", b"postmaster"):
        return False
    if b"-D" in argv[:-1]:
        given = os.fsdecode(argv[argv.index(b"-D") + 1])
        with contextlib.suppress(OSError):
            if os.path.samefile(given, cluster):
                return True
    started = procinfo.start_epoch(pid)
    try:
        recorded = float(lines[2])
    except (IndexError, ValueError):
        return False
    return started is not None and abs(started - recorded) <= _START_SLACK_SECONDS


def _clear_stale_lock_files(cluster: Path, socket_dir: Path) -> None:
    """Remove `postmaster.pid` and the socket's lock file when they name a live process that is not this
    cluster's postmaster (PostgreSQL would refuse to start: "lock file already exists"). Called with the
    start lock held and after read_postmaster found no server, so no postmaster of ours is starting."""
    from cems_cli.plumbing.procinfo import alive

    for lock_file, extra in (
        (cluster / "postmaster.pid", None),
        (socket_dir / f"{_SOCKET_FILE}.lock", socket_dir / _SOCKET_FILE),
    ):
        try:
            lines = lock_file.read_text().splitlines()
            pid = int(lines[0])
        except (OSError, ValueError, IndexError):
            continue  # absent, or unreadable: PostgreSQL decides
        if alive(pid) and not _is_postmaster(pid, lines, cluster):
            _log.warning("removing %s: it names pid %d, which is not this cluster's server", lock_file, pid)
            lock_file.unlink(missing_ok=True)
            if extra is not None:
                extra.unlink(missing_ok=True)


def _is_secure(state: PostmasterState, pgdata: Path) -> bool:
    """A running server we may use: its socket in the expected private folder, our password file present, its
    program still on disk."""
    if state.status != "ready" or state.passfile is None or state.socket_dir is None:
        return False
    if _program_deleted(state.pid):
        return False
    if state.socket_dir != _socket_dir(data_dir(pgdata), pgdata):
        return False
    try:
        info = os.lstat(state.socket_dir)
    except OSError:
        return False
    return stat.S_ISDIR(info.st_mode) and not info.st_mode & 0o077


def _program_deleted(pid: int) -> bool:
    """Does the server run a program that is no longer on disk? After CEMS's virtualenv is removed or
    reinstalled, the old postmaster keeps serving, but every new session fails to load a library of the
    deleted installation ("could not access file plpgsql"): such a server is restarted from this one."""
    try:
        return os.readlink(f"/proc/{pid}/exe").endswith(" (deleted)")
    except OSError:  # no /proc, or not ours to look at: as before, the server is used
        return False


def _prune_handle_pids(pgdata: Path) -> None:
    """Drop PIDs of dead processes from the wheel's handle list (left by versions that used its layer)."""
    handle_file = pgdata / ".handle_pids.json"
    try:
        pids = json.loads(handle_file.read_text())
        alive = [p for p in pids if isinstance(p, int) and _pid_alive(p)]
        if alive != pids:
            handle_file.write_text(json.dumps(alive))
    except (OSError, ValueError):
        return

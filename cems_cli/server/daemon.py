"""The search server: a warm process (model loaded, database connected) that hooks ask over a Unix socket.

Started on demand by the hooks (detached), one per `CEMS_HOME` (a lock file), and gone after
`CEMS_SERVE_IDLE_SECONDS` (default 30 minutes) without a request. Requests carry the asker's user, team and
project, so one server answers for whoever shares the data folder.

Private to its user: the socket is bound in a folder CEMS creates 0700 and checks before every start
(`$CEMS_HOME/run`, or a short per-user folder when that path is too long for a socket), and the server asks
the kernel (SO_PEERCRED) who connects, dropping any other uid: prompts and memories never reach another
user. `run/server.pid` records the server's start time and boot, so a PID reused by an unrelated process is
neither reported as the server nor signalled.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import math
import os
import signal
import socketserver
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cems_cli.server.client import peer_uid, socket_dir, socket_path

_log = logging.getLogger("cems.server")
DEFAULT_IDLE_SECONDS = 1800.0
MAX_REQUEST_BYTES = 1 << 20
POOL_SIZE = 4  # hooks answered side by side; also the most connections one machine opens to a server


class SearchServer(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True
    # Connections waiting to be accepted (socketserver's default is 5): every session and subagent of the
    # machine asks this one server, and a Unix socket refuses a connect at once when the queue is full.
    request_queue_size = 128

    def __init__(self, path: str, service, pool=None) -> None:
        self.service = service
        # Requests run side by side, each on a connection of the pool (at most POOL_SIZE to a shared
        # server); without a pool they take turns on the service's one connection.
        self.pool = pool
        self.lock = threading.Lock()
        self.last_request = time.monotonic()
        super().__init__(path, _Handler)

    def verify_request(self, request: Any, client_address: Any) -> bool:
        """Only our own uid: the folder already keeps others out, this holds even if it was opened."""
        try:
            uid = peer_uid(request)
        except OSError:
            return False
        if uid is None or uid == os.geteuid():
            return True
        _log.warning("refused a connection from uid %d (this server answers uid %d only)", uid, os.geteuid())
        return False

    def answer(self, request: dict[str, Any]) -> dict[str, Any]:
        self.last_request = time.monotonic()
        op = request.get("op")
        if op == "ping":
            return {"ok": True, "pid": os.getpid()}
        if op not in ("search", "profile"):
            return {"error": f"unknown op {op!r}"}
        if self.pool is not None:
            # A broken connection is found by the pool's check and replaced; the request is not retried.
            with self.pool.connection(timeout=5.0) as conn:
                return self._run(op, request, conn)
        with self.lock:
            try:
                return self._run(op, request)
            except Exception as error:  # a dropped connection (db restarted): reconnect once
                import psycopg

                if not isinstance(error, psycopg.OperationalError):
                    raise
                self.service.close()
                return self._run(op, request)

    def _run(self, op: str, request: dict[str, Any], conn: Any = None) -> dict[str, Any]:
        # One warm `Memory` (model, query cache) answers every hook of this user's machine, for whichever
        # user/team/project the hook names; what a request leaves out comes from the live settings.
        memory = self.service.for_identity(
            request.get("user"), request.get("team"), request.get("project"), connection=conn
        )
        if op == "profile":
            budget = request.get("token_budget")
            text, ids = memory.profile_with_ids(request.get("project"), int(budget) if budget else None)
            return {"text": text, "ids": ids}
        from cems_cli.api import RecallOptions

        # The knobs the hook's environment set (CEMS_RECALL_*), each by its name; the rest from the settings.
        knobs = {name: _number(request, name, kind) for name, kind in RecallOptions.knobs().items()}
        budget_ms = _number(request, "budget_ms", float)
        options = memory.recall_options(
            **knobs,
            current_project=request.get("project"),
            mode=str(request["mode"]) if request.get("mode") else None,
            deadline=time.monotonic() + budget_ms / 1000 if budget_ms else None,
            exclude_ids=frozenset(_ids(request.get("exclude"))),
        )
        found = [r.to_json() for r in memory.recall(str(request.get("query", "")), options)]
        from cems_cli.engine.recall import format_recall

        # The block the prompt hook injects, formatted here: the hook, a process per prompt, then need not
        # import the formatting (and what it imports) at all.
        project = request.get("project")
        block = format_recall(found, project if isinstance(project, str) else None)
        return {"results": found, "recall": block}


def _ids(value: Any) -> list[str]:
    """A request's list of memory ids (what the asker's context already holds); [] when malformed."""
    if not isinstance(value, list):
        return []
    return [v for v in value[:200] if isinstance(v, str) and 0 < len(v) <= 64]


def _number(request: dict[str, Any], key: str, kind: type) -> Any:
    """A request's number, or None (then the setting applies) when absent, malformed, not finite or not
    positive."""
    try:
        value = kind(request[key])
    except (KeyError, TypeError, ValueError, OverflowError):  # OverflowError: int(inf)
        return None
    return value if math.isfinite(value) and value > 0 else None


class _Handler(socketserver.StreamRequestHandler):
    def handle(self) -> None:
        line = self.rfile.readline(MAX_REQUEST_BYTES)
        try:
            request = json.loads(line)
            if not isinstance(request, dict):
                raise ValueError("not an object")
            answer = self.server.answer(request)  # type: ignore[attr-defined]
        except Exception as error:  # never let one bad request take the server down
            _log.exception("request failed")
            answer = {"error": f"{type(error).__name__}: {error}"}
        with contextlib.suppress(OSError):
            self.wfile.write(json.dumps(answer, default=str).encode("utf-8") + b"\n")


_PURPOSE = "the search server's socket"


def _run_dir(home: Path) -> Path:
    """`$CEMS_HOME/run`: lock, pid file and (normally) the socket; private, checked on every start."""
    from cems_cli.plumbing.private_dir import private_dir

    home.mkdir(parents=True, exist_ok=True)
    # tighten: a `run` made by a version that kept the user's 022 umask is ours and nobody could write in it.
    return private_dir(home / "run", os.geteuid(), os.getegid(), purpose=_PURPOSE, tighten=True)


def prepare_socket_dir(home: Path) -> Path:
    """Create (or check) the private folder the socket goes in; NotPrivate, saying why, when it is not."""
    from cems_cli.plumbing.private_dir import private_dir

    run = _run_dir(home)
    folder = Path(socket_dir(str(home)))
    if folder != run:  # the short fallback: its per-user parent must be ours too
        uid, gid = os.geteuid(), os.getegid()
        # As root the embedded server's own user passes through the same parent (store/embedded.py): 0711.
        private_dir(folder.parent, uid, gid, purpose=_PURPOSE, others_may_traverse=uid == 0)
        private_dir(folder, uid, gid, purpose=_PURPOSE)
    return folder


def _take_lock(lock: Any) -> bool:
    """The server's lock, or False when another server holds it. Tried a few times: `server_pid` (status,
    stop) holds it shared for an instant to see whether a server is alive."""
    for attempt in range(5):
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if attempt < 4:
                time.sleep(0.02)
    return False


def serve(idle_seconds: float | None = None) -> int:
    """Run until idle for `idle_seconds` or signalled. Returns 0, or 1 if another server already runs."""
    from cems_cli.api import Memory
    from cems_cli.config import get_settings

    settings = get_settings()
    home = settings.home
    run = _run_dir(home)
    prepare_socket_dir(home)
    lock = open(run / "server.lock", "a+")  # noqa: SIM115 - held for the life of the process
    if not _take_lock(lock):
        return 1
    # At once, while holding the lock: a pid file left by a crashed server must not stand for this one
    # while the model loads (server_pid trusts it only while the lock is held and the identity matches).
    _write_pid_file(run)
    idle = (
        idle_seconds
        if idle_seconds is not None
        else float(os.environ.get("CEMS_SERVE_IDLE_SECONDS", DEFAULT_IDLE_SECONDS))
    )
    service = Memory(settings)
    # Warm everything a request needs before accepting one: connection, model, tokenizer tables.
    service.warm_up()
    pool = service.connection_pool(POOL_SIZE)
    path = socket_path(str(home))
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)  # a stale socket from a killed server; we hold the lock, so it is not live
    server = SearchServer(path, service, pool)
    os.chmod(path, 0o600)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    # shutdown() waits for serve_forever's next poll: at 0.5 s (the default) every stop took up to half a
    # second, paid by `cems db stop`, uninstall and each eval's throwaway home. 20 idle wake-ups a second
    # cost 50 ms of CPU in 20 s of waiting (0.25% of a core), until the idle timeout ends the server.
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        while not stop.wait(1.0):
            if time.monotonic() - server.last_request > idle:
                break
    finally:
        server.shutdown()
        server.server_close()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        if _recorded(run / "server.pid")[0] == os.getpid():
            with contextlib.suppress(FileNotFoundError):
                (run / "server.pid").unlink()
        pool.close()
        service.close()
    return 0


def _write_pid_file(run: Path) -> None:
    """`<pid> <start ticks>@<boot id>`, replaced atomically."""
    from cems_cli.plumbing.procinfo import identity

    pid = os.getpid()
    tmp = run / f".server.pid.{pid}"
    tmp.write_text(f"{pid} {identity(pid) or ''}".rstrip() + "\n")
    os.replace(tmp, run / "server.pid")


def _recorded(pid_file: Path) -> tuple[int | None, str | None]:
    """(pid, identity) from a pid file; a file of an earlier version holds the pid alone."""
    try:
        words = pid_file.read_text().split()
        return int(words[0]), (words[1] if len(words) > 1 else None)
    except (OSError, ValueError, IndexError):
        return None, None


def _lock_held(run: Path) -> bool | None:
    """Does a live process hold `server.lock`? (flock dies with its process; None if it cannot tell)."""
    try:
        handle = open(run / "server.lock", "rb")  # noqa: SIM115 - closed below
    except FileNotFoundError:
        return False
    except OSError:
        return None
    with handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        except OSError:
            return None
        fcntl.flock(handle, fcntl.LOCK_UN)
        return False


def _is_search_server(pid: int, recorded: str | None) -> bool:
    """Is `pid` the search server that wrote the pid file (`cems serve` or the detached
    `-m cems_cli.server.daemon`, of our uid, started when the file says)? After a crash or a reboot the pid
    may belong to anything, which must never be signalled. Where /proc cannot tell, the pid file is trusted
    as before (the caller has checked that a live process holds the server's lock)."""
    from cems_cli.plumbing import procinfo

    words = procinfo.cmdline(pid)
    if words is None:  # no /proc: cannot tell; a /proc that hides the process: another user's
        return not os.path.isdir("/proc/self")
    if procinfo.owner(pid) != os.geteuid():
        return False
    if recorded is not None and recorded != procinfo.identity(pid):
        return False  # same number, another process (or another boot)
    return b"cems_cli.server.daemon" in words or (b"serve" in words and any(b"cems" in w for w in words))


def server_pid(home: Path) -> int | None:
    """The running search server's pid, or None (none runs, or the pid file is stale)."""
    run = home / "run"
    pid, recorded = _recorded(run / "server.pid")
    if pid is None or pid <= 0:
        return None
    from cems_cli.plumbing.procinfo import alive

    if not alive(pid) or _lock_held(run) is False:
        return None
    return pid if _is_search_server(pid, recorded) else None


def _environ(pid: int) -> dict[bytes, bytes] | None:
    """The environment `pid` started with (/proc/<pid>/environ; ours only), or None."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as handle:
            raw = handle.read()
    except OSError:
        return None
    pairs = (item.partition(b"=") for item in raw.split(b"\0") if item)
    return {key: value for key, _, value in pairs}


def _home_of(pid: int) -> str | None:
    """The CEMS_HOME a server process serves, as `paths.cems_home` decides it from its environment."""
    env = _environ(pid)
    if env is None:
        return None
    explicit = os.fsdecode(env.get(b"CEMS_HOME", b"").strip())
    if explicit:
        home = explicit
        if home == "~" or home.startswith("~/"):  # its HOME, not ours
            home = os.fsdecode(env.get(b"HOME", b"/")) + home[1:]
        if not os.path.isabs(home):  # relative to where `cems serve` was typed
            with contextlib.suppress(OSError):
                home = os.path.join(os.readlink(f"/proc/{pid}/cwd"), home)
        return os.path.realpath(home)
    xdg = env.get(b"XDG_DATA_HOME", b"").strip()
    base = os.fsdecode(xdg) if xdg else os.path.join(os.fsdecode(env.get(b"HOME", b"/")), ".local", "share")
    return os.path.realpath(os.path.join(base, "cems"))


_NOT_A_SERVER = (b"--stop", b"--status", b"--daemon", b"--help")  # `cems serve` asking, not serving


def _is_cli_server(words: list[bytes]) -> bool:
    """`cems serve [--idle-timeout N]` (the program `cems`, or `python -m cems_cli.cli.app`)."""
    for index, word in enumerate(words[:-1]):
        program = os.path.basename(word) == b"cems" or word == b"cems_cli.cli.app"
        if program and words[index + 1] == b"serve":
            return not any(option in _NOT_A_SERVER for option in words[index + 2 :])
    return False


def server_processes(home: Path) -> list[int]:
    """Every search server of this user for `home`: the one serving and any other started for it, which
    waits to take the lock (a hook spawns one whenever no server answers, and it loads for seconds before
    it tries the lock) and would take over the moment the serving one stops. Linux /proc; [] elsewhere."""
    from cems_cli.plumbing import procinfo

    target = os.path.realpath(home)
    me = os.getpid()
    found: list[int] = []
    try:
        names = os.listdir("/proc")
    except OSError:
        return found
    for name in names:
        if not name.isdigit() or int(name) == me:
            continue
        pid = int(name)
        words = procinfo.cmdline(pid)
        if not words or procinfo.owner(pid) != os.geteuid():
            continue
        if b"cems_cli.server.daemon" not in words and not _is_cli_server(words):
            continue
        if _home_of(pid) == target:
            found.append(pid)
    return sorted(found)


@dataclass
class Stopped:
    """What `stop_servers` did: the servers it stopped, and any still running when it gave up."""

    stopped: list[int] = field(default_factory=list)
    still_running: list[int] = field(default_factory=list)
    forced: list[int] = field(default_factory=list)  # needed SIGKILL after the grace period

    def to_json(self) -> dict[str, Any]:
        return {
            "stopped": bool(self.stopped),
            "pids": self.stopped,
            "forced": self.forced,
            "running": bool(self.still_running),
            "still_running": self.still_running,
        }


def stop_servers(home: Path, timeout: float = 10.0, kill_after: float = 5.0) -> Stopped:
    """Stop every search server of `home` (the serving one and any waiting to take over), and wait until
    none runs: SIGTERM, then SIGKILL for those still there after `kill_after` seconds (safe: a server only
    reads). One started meanwhile (a hook's) is stopped too. `still_running` lists those that outlived
    `timeout` seconds."""
    deadline = time.monotonic() + timeout
    forced_at = time.monotonic() + kill_after
    signalled: dict[int, str | None] = {}
    report = Stopped()
    from cems_cli.plumbing import procinfo

    while True:
        running = set(server_processes(home))
        recorded = server_pid(home)
        if recorded is not None:
            running.add(recorded)
        for pid in running:
            ident = procinfo.identity(pid)
            if signalled.get(pid, "") != ident:  # new, or the pid reused by another server
                signalled[pid] = ident
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGTERM)
        if not running or time.monotonic() >= deadline:
            break
        if time.monotonic() >= forced_at:
            for pid in running - set(report.forced):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
                report.forced.append(pid)
        time.sleep(0.05)
    report.still_running = sorted(running)
    report.stopped = sorted(set(signalled) - running)
    report.forced = sorted(set(report.forced) & set(report.stopped))
    return report


def stop_server(home: Path, timeout: float = 10.0) -> bool:
    """Stop the search servers of `home`; True if one was running (see stop_servers)."""
    return bool(stop_servers(home, timeout).stopped)


def main() -> int:
    """Entry for the detached process: errors go to `$CEMS_HOME/logs/server.log`, not to a closed stderr."""
    from cems_cli.paths import PRIVATE_UMASK, cems_home

    os.umask(PRIVATE_UMASK)  # inherited from whoever spawned it, but a detached process says so itself
    logs = cems_home() / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    logging.basicConfig(
        filename=str(logs / "server.log"),
        level=logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    from cems_cli.plumbing.private_dir import NotPrivate

    try:
        return serve()
    except NotPrivate as error:  # the message says what is wrong and what to do: no traceback
        _log.error("search server not started: %s", error)
        return 1
    except Exception:
        _log.exception("search server failed")
        return 1


if __name__ == "__main__":
    raise SystemExit(main())

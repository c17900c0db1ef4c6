"""The search server: a warm process (model loaded, database connected) that hooks ask over a Unix socket.

Started on demand by the hooks (detached), one per `CEMS_HOME` (a lock file), and gone after
`CEMS_SERVE_IDLE_SECONDS` (default 30 minutes) without a request. Requests carry the asker's user, team and
project, so one server answers for whoever shares the data folder.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import signal
import socketserver
import threading
import time
from pathlib import Path
from typing import Any

from cems_cli.server.client import socket_path

_log = logging.getLogger("cems.server")
DEFAULT_IDLE_SECONDS = 1800.0
MAX_REQUEST_BYTES = 1 << 20


class SearchServer(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True

    def __init__(self, path: str, service) -> None:
        self.service = service
        self.lock = threading.Lock()  # one psycopg connection: requests take turns on it
        self.last_request = time.monotonic()
        super().__init__(path, _Handler)

    def answer(self, request: dict[str, Any]) -> dict[str, Any]:
        self.last_request = time.monotonic()
        op = request.get("op")
        if op == "ping":
            return {"ok": True, "pid": os.getpid()}
        if op not in ("search", "profile"):
            return {"error": f"unknown op {op!r}"}
        with self.lock:
            try:
                return self._run(op, request)
            except Exception as error:  # a dropped connection (db restarted): reconnect once
                import psycopg

                if not isinstance(error, psycopg.OperationalError):
                    raise
                self.service.close()
                return self._run(op, request)

    def _run(self, op: str, request: dict[str, Any]) -> dict[str, Any]:
        svc = self.service.for_identity(request.get("user"), request.get("team"), request.get("project"))
        if op == "profile":
            from cems_cli.recall import build_profile

            return {
                "text": build_profile(svc, request.get("project"), int(request.get("token_budget") or 2000))
            }
        import psycopg

        from cems_cli.retrieval.pipeline import SearchRequest, run_search
        from cems_cli.store.memories import record_recall

        search = SearchRequest(
            query=str(request.get("query", "")),
            limit=int(request.get("limit") or 5),
            category=None,
            scope="both",
            project_filter=None,
            current_project=request.get("project"),
            mode=str(request.get("mode") or "hybrid"),
            token_budget=int(request.get("token_budget") or 1000),
            min_score=float(request.get("min_score") or 0.0),
            min_relative=float(request.get("min_relative") or 0.0),
            min_similarity=float(request["min_similarity"]) if request.get("min_similarity") else None,
        )
        results = run_search(svc, search)
        if results:
            # Recall on every prompt is not an access: counting it raised the priority of whatever was
            # injected, so a memory that matched loosely once was injected ever more often (on the capture
            # benchmark the session records reached priority 2.0 and topped unrelated questions); explicit
            # searches count. It is use, though: only last_recalled is stamped, which the expiry of captured
            # context memories reads, or a record injected every day would be archived as unused.
            try:
                record_recall(svc.conn, [r.id for r in results])
            except psycopg.Error as error:  # the stamp is bookkeeping: never lose the answer over it
                _log.warning("recall stamp failed: %s", error)
        return {"results": [r.to_json() for r in results]}


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


def _run_dir(home: Path) -> Path:
    run = home / "run"
    run.mkdir(parents=True, exist_ok=True)
    return run


def serve(idle_seconds: float | None = None) -> int:
    """Run until idle for `idle_seconds` or signalled. Returns 0, or 1 if another server already runs."""
    from cems_cli.config import get_settings
    from cems_cli.service import MemoryService

    settings = get_settings()
    home = settings.home
    run = _run_dir(home)
    lock = open(run / "server.lock", "a+")  # noqa: SIM115 - held for the life of the process
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return 1
    idle = (
        idle_seconds
        if idle_seconds is not None
        else float(os.environ.get("CEMS_SERVE_IDLE_SECONDS", DEFAULT_IDLE_SECONDS))
    )
    service = MemoryService(settings)
    # Warm everything a request needs before accepting one: connection, model, tokenizer tables.
    service.query_embedder.embed(["warm up"])
    service.conn.execute("SELECT 1")
    path = socket_path(str(home))
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)  # a stale socket from a killed server; we hold the lock, so it is not live
    server = SearchServer(path, service)
    os.chmod(path, 0o600)
    (run / "server.pid").write_text(str(os.getpid()))
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.5}, daemon=True)
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
        with contextlib.suppress(FileNotFoundError):
            (run / "server.pid").unlink()
        service.close()
    return 0


def _is_search_server(pid: int) -> bool:
    """Is `pid` a search server (`cems serve` or the detached `-m cems_cli.server.daemon`)? A pid file
    outlives its process: after a crash or a reboot the pid may belong to anything, which must never be
    signalled. Where /proc cannot tell, the pid file is trusted as before."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            words = handle.read().split(b"\0")
    except FileNotFoundError:
        return False
    except OSError:
        return True
    return b"cems_cli.server.daemon" in words or (b"serve" in words and any(b"cems" in w for w in words))


def server_pid(home: Path) -> int | None:
    try:
        pid = int((home / "run" / "server.pid").read_text())
        os.kill(pid, 0)
    except (OSError, ValueError):
        return None
    return pid if _is_search_server(pid) else None


def stop_server(home: Path, timeout: float = 10.0) -> bool:
    pid = server_pid(home)
    if pid is None:
        return False
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:  # it exited between the check and the signal
        return True
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and server_pid(home) == pid:
        time.sleep(0.05)
    return True


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
    try:
        return serve()
    except Exception:
        _log.exception("search server failed")
        return 1


if __name__ == "__main__":
    raise SystemExit(main())

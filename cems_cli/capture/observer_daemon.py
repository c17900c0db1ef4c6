"""Running the observer: one instance per CEMS_HOME (pid file), detaching, signals, the watch loop, stop.

The pid file is also a lock (flock): the kernel drops it when the process dies, even by SIGKILL, so a
stale pid file never blocks a restart and "is it running?" never trusts a recycled pid.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

from cems_cli.capture.observer import Observer, RunReport, capture_engine
from cems_cli.capture.observer_settings import ObserverSettings
from cems_cli.config import Settings
from cems_cli.plumbing import procinfo

if TYPE_CHECKING:
    from cems_cli.engine.maintain import PeriodicMaintenance

log = logging.getLogger("cems.observer")

PID_FILE = "observer.pid"
LOG_FILE = "observer.log"
# What the running daemon really watches: its environment, not the one of the shell asking for status.
STATE_FILE = "observer.json"
_LOG_ROTATE_BYTES = 10 * 1024 * 1024
_WATCH_STEP_MS = 250  # how often the watcher looks for a stop request: 4 wake-ups/s, ~0.05% of a core


class AlreadyRunning(RuntimeError):
    def __init__(self, pid: int | None) -> None:
        super().__init__(
            f"the observer is already running (pid {pid})" if pid else "the observer is already running"
        )
        self.pid = pid


class DaemonError(RuntimeError):
    """The detached observer did not come up; the message says why (from its log)."""


# --------------------------------------------------------------------------- pid file


class PidLock:
    def __init__(self, home: Path) -> None:
        self.path = home / PID_FILE
        self._fd: int | None = None

    def acquire(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        # A few tries: `holder()` in another process takes a shared lock for a moment to look.
        for attempt in range(20):
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if attempt == 19:
                    os.close(fd)
                    raise AlreadyRunning(holder(self.path.parent)) from None
                time.sleep(0.02)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            # Emptied, not removed: removing it would let a waiter lock an inode nobody else sees.
            with contextlib.suppress(OSError):
                os.ftruncate(self._fd, 0)
            os.close(self._fd)  # closing drops the lock
            self._fd = None


def holder(home: Path) -> int | None:
    """The pid of the running observer, or None."""
    path = home / PID_FILE
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            for _ in range(50):  # the owner writes its pid right after locking
                text = os.pread(fd, 32, 0).decode(errors="replace").strip()
                if text.isdigit():
                    return int(text)
                time.sleep(0.01)
            return -1
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


# --------------------------------------------------------------------------- running


@contextlib.contextmanager
def _stop_on_signals(stop: threading.Event) -> Iterator[None]:
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    handled = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
    previous = {sig: signal.getsignal(sig) for sig in handled}

    def request_stop(signum: int, _frame: object) -> None:
        log.info("observer: %s received, stopping", signal.Signals(signum).name)
        stop.set()

    for sig in handled:
        signal.signal(sig, request_stop)
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def run(
    settings: Settings,
    observer_settings: ObserverSettings,
    *,
    once: bool = False,
    stop: threading.Event | None = None,
) -> RunReport:
    """Observe until stopped (or one pass with `once`); AlreadyRunning if another observer holds the lock."""
    from cems_cli.engine.maintain import PeriodicMaintenance
    from cems_cli.engine.service import MemoryService

    lock = PidLock(settings.home)
    lock.acquire()
    stop = stop or threading.Event()
    service = MemoryService(settings)
    # A one-off pass (--once) leaves maintenance to `cems maintain`; a watching observer runs it daily.
    maintenance = PeriodicMaintenance(settings, 0 if once else observer_settings.observer_maintain_seconds)
    try:
        with _stop_on_signals(stop):
            observer = capture_engine(service, observer_settings, stop=stop)
            log.info(
                "observer: pid %d watching %s (%s)",
                os.getpid(),
                ", ".join(map(str, observer.roots)),
                "LLM extraction" if observer.llm else "digests",
            )
            if not once:
                _write_state(settings.home, observer, observer_settings)
            observer.progress = CatchUp(settings.home if not once else None)
            total = observer.sync()
            _log_report(total)
            if not once:
                _watch(observer, observer_settings, stop, total, maintenance)
            return total
    finally:
        maintenance.close()
        service.close()
        lock.release()


class CatchUp:
    """A pass over many transcripts (a backlog: the first start, or days away) reports its own rate: in the
    log every CATCH_UP_EVERY seconds, and in a small file `cems observe status` reads while it runs."""

    EVERY = 10.0  # seconds between reports; a pass shorter than this reports nothing
    FILE = "observer-progress.json"

    def __init__(self, home: Path | None, clock: Callable[[], float] = time.monotonic) -> None:
        self.home, self._clock = home, clock
        self._started: float | None = None
        self._last = 0.0

    def __call__(self, done: int, total: int, bytes_read: int) -> None:
        now = self._clock()
        if done == 1 or self._started is None:
            self._started, self._last = now, now
        elapsed = now - self._started
        if done < total and now - self._last < self.EVERY:
            return
        if done == total and elapsed < self.EVERY:
            self._clear()
            return
        self._last = now
        rate = done / elapsed if elapsed > 0 else 0.0
        left = (total - done) / rate if rate > 0 else 0.0
        figures = {"files_done": done, "files_total": total, "bytes_read": bytes_read,
                   "seconds": round(elapsed, 1), "files_per_second": round(rate, 1),
                   "bytes_per_second": round(bytes_read / elapsed) if elapsed > 0 else 0,
                   "seconds_left": round(left)}
        if done < total:
            log.info("observer: catching up: %d of %d transcripts in %.0f s (%.1f files/s, %.1f MB/s), "
                     "about %.0f s left", done, total, elapsed, rate, figures["bytes_per_second"] / 1e6, left)
            self._write(figures)
        else:
            log.info("observer: caught up on %d transcripts (%.1f MB) in %.0f s: %.1f files/s, %.1f MB/s",
                     total, bytes_read / 1e6, elapsed, rate, figures["bytes_per_second"] / 1e6)
            self._clear()

    def _write(self, figures: dict[str, Any]) -> None:
        if self.home is None:
            return
        import json

        temporary = self.home / f".{self.FILE}.{os.getpid()}"
        with contextlib.suppress(OSError):  # a courtesy for `status`: never stops the pass
            temporary.write_text(json.dumps({"pid": os.getpid(), **figures}))
            os.replace(temporary, self.home / self.FILE)

    def _clear(self) -> None:
        if self.home is not None:
            with contextlib.suppress(OSError):
                (self.home / self.FILE).unlink(missing_ok=True)


def catching_up(home: Path, pid: int | None) -> dict[str, Any] | None:
    """The running daemon's progress through a backlog, when it is in one."""
    import json

    try:
        figures = json.loads((home / CatchUp.FILE).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(figures, dict) or not pid or figures.get("pid") != pid:
        return None
    return {k: v for k, v in figures.items() if k != "pid" and isinstance(v, int | float)}


def _write_state(home: Path, observer: Observer, observer_settings: ObserverSettings) -> None:
    """Record the watch settings this process runs with, for `cems observe status` from any shell."""
    import json
    from datetime import UTC, datetime

    state = {
        "pid": os.getpid(),
        "started_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "roots": [str(root) for root in observer.roots],
        "idle_seconds": observer_settings.observer_idle_seconds,
        "llm": observer.llm is not None,
    }
    temporary = home / f".{STATE_FILE}.{os.getpid()}"
    temporary.write_text(json.dumps(state))
    os.replace(temporary, home / STATE_FILE)


class _RunningState(TypedDict):
    """What the running daemon recorded of its settings (STATE_FILE), checked where it is read."""

    roots: list[str]
    idle_seconds: float | None
    llm: object  # a bool from this version
    started_at: object


def _running_state(home: Path, pid: int | None) -> _RunningState | None:
    """The running daemon's recorded settings; None when it is not running or wrote none (a --once run)."""
    import json

    if not pid or pid < 0:
        return None
    try:
        state = json.loads((home / STATE_FILE).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(state, dict) or state.get("pid") != pid:
        return None
    roots = state.get("roots")
    # Written by another version, or damaged: what this shell's settings say is the best answer left.
    if not (isinstance(roots, list) and all(isinstance(r, str) for r in roots)):
        return None
    idle = state.get("idle_seconds")
    return {
        "roots": roots,
        "idle_seconds": float(idle) if isinstance(idle, (int, float)) else None,
        "llm": state.get("llm"),
        "started_at": state.get("started_at"),
    }


def _watch(
    observer: Observer,
    settings: ObserverSettings,
    stop: threading.Event,
    total: RunReport,
    maintenance: PeriodicMaintenance | None = None,
) -> None:
    """Sleep in the kernel until a transcript changes or a tick is due; handle it; repeat."""
    from watchfiles import watch

    tick = settings.observer_tick_seconds
    last_full = time.monotonic()
    while not stop.is_set():
        roots = [root for root in observer.roots if root.is_dir()]
        if not roots:  # nothing to watch yet (Claude Code never ran): look again every tick
            stop.wait(tick)
            if maintenance is not None:
                maintenance.poll()
            total.add(observer.sync([]))
            continue
        armed = False
        try:
            for changes in watch(
                *roots,
                watch_filter=_is_transcript,
                step=_WATCH_STEP_MS,
                rust_timeout=max(int(tick * 1000), 1),
                yield_on_timeout=True,
                stop_event=stop,
                raise_interrupt=False,
                ignore_permission_denied=True,
            ):
                # The watcher is armed only once the generator runs: what changed between the last full pass
                # and now raised no event, so the first wake-up of every watch is a full pass (files that did
                # not change cost a stat). Later full passes are the safety net for events the OS dropped.
                if not armed or time.monotonic() - last_full >= settings.observer_rescan_seconds:
                    report = observer.sync()
                    armed, last_full = True, time.monotonic()
                else:
                    report = observer.sync({Path(path) for _change, path in changes})
                _log_report(report)
                total.add(report)
                if maintenance is not None:  # every wake-up, at least once a tick; starts a thread when due
                    maintenance.poll()
                if [root for root in observer.roots if root.is_dir()] != roots:
                    break  # a root appeared or vanished: watch the new set
        except (OSError, RuntimeError) as error:  # a watched folder removed, inotify limits…
            log.warning("observer: watching failed (%s); retrying in %gs", error, tick)
            stop.wait(tick)
            total.add(observer.sync())


def _is_transcript(_change: object, path: str) -> bool:
    return path.endswith(".jsonl")


def _log_report(report: RunReport) -> None:
    if report.bytes_read or report.observations or report.extracted or report.errors:
        log.info(
            "observer: read %d bytes from %d files, %d lines (%d malformed), stored %d observations, "
            "%d chunks for extraction, %d extractions%s",
            report.bytes_read,
            report.files_read,
            report.lines,
            report.malformed,
            report.observations,
            report.backlog,
            report.extracted,
            f", {len(report.errors)} errors" if report.errors else "",
        )


# --------------------------------------------------------------------------- detach / stop / status


def start_detached(home: Path, timeout: float = 60.0) -> int:
    """Start `cems observe` as a background process; its pid once it holds the lock."""
    running = holder(home)
    if running:
        raise AlreadyRunning(running)
    home.mkdir(parents=True, exist_ok=True)
    log_path = home / LOG_FILE
    if log_path.exists() and log_path.stat().st_size > _LOG_ROTATE_BYTES:
        log_path.replace(log_path.with_suffix(".log.1"))
    from cems_cli.plumbing.procs import child_env, spawn_python

    # Isolated from the folder `cems observe --detach` was typed in (plumbing/procs.py), stderr to the log.
    pid = spawn_python(
        "cems_cli.cli.app", "observe", env=child_env({"CEMS_HOME": str(home.absolute())}), log=str(log_path)
    )
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not procinfo.alive(pid):
            raise DaemonError(f"the observer exited at start: {_log_tail(log_path)}")
        if holder(home) == pid:
            return pid
        time.sleep(0.05)
    raise DaemonError(f"the observer did not start within {timeout:g}s (log: {log_path})")


def _log_tail(path: Path) -> str:
    try:
        lines = [line for line in path.read_text(errors="replace").splitlines() if line.strip()]
    except OSError:
        return f"see {path}"
    return lines[-1] if lines else f"see {path}"


def stop_running(home: Path, timeout: float = 15.0) -> dict[str, object]:
    """SIGTERM the observer and wait for it to let go of the lock; SIGKILL after `timeout` (safe: every
    commit is atomic)."""
    pid = holder(home)
    if not pid or pid < 0:
        return {"running": False, "stopped": False, "pid": None}
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    if _wait_released(home, timeout):
        return {"running": False, "stopped": True, "pid": pid, "forced": False}
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    _wait_released(home, 5.0)
    return {"running": holder(home) is not None, "stopped": True, "pid": pid, "forced": True}


def _wait_released(home: Path, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if holder(home) is None:
            return True
        time.sleep(0.05)
    return holder(home) is None


def status(settings: Settings, observer_settings: ObserverSettings) -> dict[str, Any]:
    """`cems observe status`'s JSON document."""
    from cems_cli.engine.service import MemoryService

    pid = holder(settings.home)
    running = _running_state(settings.home, pid)
    if running is not None and running["idle_seconds"] is not None:
        observer_settings = observer_settings.model_copy(
            update={"observer_idle_seconds": running["idle_seconds"]}
        )
    with MemoryService(settings) as service:
        observer = capture_engine(service, observer_settings)
        if running is not None:
            # Report on what the daemon watches; this shell's CEMS_OBSERVER_PATHS may differ.
            observer.roots = [Path(root) for root in running["roots"]]
        details = observer.status()
    if running is not None and isinstance(running["llm"], bool):
        details["llm"] = running["llm"]
    return {
        "running": pid is not None,
        "pid": pid if pid and pid > 0 else None,
        "started_at": running["started_at"] if running else None,
        # "daemon": what the running observer watches; "settings": what this shell's settings say it would.
        "roots_from": "daemon" if running else "settings",
        "idle_seconds": observer_settings.observer_idle_seconds,
        "catching_up": catching_up(settings.home, pid),
        **details,
    }

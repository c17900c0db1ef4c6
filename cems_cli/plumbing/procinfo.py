"""Who a PID is: start time, owner and command line, from /proc (Linux). Stdlib only.

A pid file outlives its process: after a crash or a reboot its PID may belong to anything, and an
unrelated process must never be taken for a server (commands would fail to reach it forever) nor be
signalled. A PID is trusted only with the identity recorded beside it (when it started, on which boot).
Where /proc cannot tell (another system, hidden processes), every function returns None and callers keep
what they did before.
"""

from __future__ import annotations

import os

_PROC = "/proc"


def alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, another user's
        return True
    return not _zombie(pid)


def _zombie(pid: int) -> bool:
    """Exited but not yet reaped by its parent (a long-lived caller that started it): signals still reach
    its pid, yet nothing runs, holds a lock or answers. Field 3 of /proc/<pid>/stat, after the name."""
    try:
        with open(f"{_PROC}/{pid}/stat", "rb") as handle:
            stat = handle.read()
    except OSError:
        return False
    return stat[stat.rfind(b")") + 2 : stat.rfind(b")") + 3] == b"Z"


def start_ticks(pid: int) -> int | None:
    """When `pid` started, in clock ticks since boot (field 22 of /proc/<pid>/stat)."""
    try:
        with open(f"{_PROC}/{pid}/stat", "rb") as handle:
            raw = handle.read()
    except OSError:
        return None
    # The command name (field 2) is in parentheses and may itself hold spaces and parentheses.
    fields = raw[raw.rfind(b")") + 2 :].split()
    try:
        return int(fields[19])
    except (IndexError, ValueError):
        return None


def start_epoch(pid: int) -> float | None:
    """When `pid` started, in seconds since the epoch (boot time + ticks; good to about a second)."""
    ticks = start_ticks(pid)
    boot = boot_time()
    if ticks is None or boot is None:
        return None
    return boot + ticks / os.sysconf("SC_CLK_TCK")


def boot_time() -> float | None:
    try:
        with open(f"{_PROC}/stat", "rb") as handle:
            for line in handle:
                if line.startswith(b"btime "):
                    return float(line.split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return None


def boot_id() -> str | None:
    """This boot's random id: start ticks compare only within one boot."""
    try:
        with open(f"{_PROC}/sys/kernel/random/boot_id") as handle:
            return handle.read().strip() or None
    except OSError:
        return None


def cmdline(pid: int) -> list[bytes] | None:
    """The process's arguments ([] for a zombie or a kernel thread); None when /proc cannot tell."""
    try:
        with open(f"{_PROC}/{pid}/cmdline", "rb") as handle:
            raw = handle.read()
    except OSError:
        return None
    if not raw:
        return []
    parts = raw.split(b"\0")
    return parts[:-1] if parts[-1] == b"" else parts  # a retitled process may drop the final NUL


def owner(pid: int) -> int | None:
    try:
        return os.stat(f"{_PROC}/{pid}").st_uid
    except OSError:
        return None


def identity(pid: int) -> str | None:
    """`<start ticks>@<boot id>`: what a pid file records to recognise its process later."""
    ticks, boot = start_ticks(pid), boot_id()
    if ticks is None or boot is None:
        return None
    return f"{ticks}@{boot}"


def resident_bytes(pid: int) -> int | None:
    """The process's resident memory (VmRSS), or None where /proc cannot tell."""
    try:
        with open(f"{_PROC}/{pid}/status", encoding="ascii", errors="replace") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None

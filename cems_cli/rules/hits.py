"""How often each rule fired: the PreToolUse hook appends one line per decision a rule made (block, ask,
warn) to `$CEMS_HOME/rule-hits.log`, and the viewer's rules page counts them. Stdlib only, written only
when a rule fires (not on every tool call), owner-only; a failed write never changes the hook's answer."""

from __future__ import annotations

import os
import stat

FILE_NAME = "rule-hits.log"
_READ_LIMIT = 1 << 20  # the newest MiB: about 20,000 firings, enough for counts people read


def record(home: str, rule_id: str, action: str, now: float) -> None:
    line = f"{int(now)} {action} {rule_id}\n".encode("ascii", "replace")
    # O_NONBLOCK: a FIFO put in the log's place would hold a plain open until a reader came, and a hook
    # that times out lets the tool run; with it the open fails at once (ENXIO), and only a regular file is
    # written to.
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK
    try:
        fd = os.open(os.path.join(home, FILE_NAME), flags, 0o600)
    except OSError:
        return
    try:
        if stat.S_ISREG(os.fstat(fd).st_mode):
            os.write(fd, line)  # one write of a short line with O_APPEND: concurrent hooks do not interleave
    except OSError:
        pass
    finally:
        os.close(fd)


def counts(home: str) -> dict[str, dict[str, int]]:
    """{rule id: {action: times}} from the newest part of the log; {} when there is none."""
    try:
        # Not blocking on a FIFO either: the viewer's rules page would wait for a writer forever.
        fd = os.open(os.path.join(home, FILE_NAME), os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return {}
    try:
        with os.fdopen(fd, "rb") as handle:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return {}
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            handle.seek(max(0, size - _READ_LIMIT))
            data = handle.read()
    except OSError:
        return {}
    lines = data.splitlines()
    if size > _READ_LIMIT and lines:
        lines = lines[1:]  # the first line may be cut
    found: dict[str, dict[str, int]] = {}
    for raw in lines:
        parts = raw.decode("ascii", "replace").split()
        if len(parts) != 3 or parts[1] not in ("block", "ask", "warn"):
            continue
        by_action = found.setdefault(parts[2], {})
        by_action[parts[1]] = by_action.get(parts[1], 0) + 1
    return found

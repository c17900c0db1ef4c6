"""The local rules snapshot: a JSON file the PreToolUse hook reads instead of the database.

Every rule change rewrites it atomically (temp file in the same directory, fsync, rename), so the hook sees
either the old or the new file, never half of one. Reading is on the hook's hot path: it uses the fast JSON
loader from `plumbing.hookio` and builds slotted `SnapshotRule` records rather than `Rule` dataclasses
(importing `dataclasses` costs ~40 ms on a small machine). `load_snapshot` gives the CLI real `Rule`s.
"""

from __future__ import annotations

import os

from cems_cli.plumbing.hookio import cems_home, json_loads
from cems_cli.rules.matcher import ACTION_RANK

TYPE_CHECKING = False  # `typing` costs ~25 ms to import; annotations are strings anyway
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

    from cems_cli.rules.model import Rule

SNAPSHOT_VERSION = 2
# Version 2 keeps each rule as a row of these fields, in this order (the fields of `Rule`, which
# tests/unit/test_rules_snapshot.py keeps in step), where version 1 had an object per rule: parsing 500
# objects took ~3.5 ms of the hook, the same rules as rows ~1 ms. Version 1 files are still read.
SNAPSHOT_FIELDS = (
    "id", "tool", "pattern", "action", "reason", "field", "regex", "project", "scope", "user_id", "team_id",
    "created_at",
)
SNAPSHOT_NAME = "rules.snapshot.json"
REFRESH_FAILED_SUFFIX = ".refresh-failed"
# Beside the snapshot: its SHA-256 as CEMS last wrote it, and the file's identity then (inode, size, mtime
# and ctime in ns). The hook trusts the snapshot only when one of them agrees: a snapshot rewritten by
# anything else (an agent's `{"version":1,"rules":[]}`) is rebuilt from the store. The identity is the hot
# path: one fstat instead of hashing ~160 KB (500 rules: 3.5 ms with the stdlib's C SHA-256, a quarter of
# the hook). It is as strong as the hash: any write, rename or replacement sets the ctime, which no
# unprivileged process can set back. The hash is for a snapshot copied or restored whole (new ctime, same
# bytes). The agent can read both files and compute either, so the protection is that it cannot write
# them: the built-in guard (`cems_cli.rules.guard`) keeps its tools out of CEMS's home.
DIGEST_SUFFIX = ".sha256"


class SnapshotError(Exception):
    """The snapshot is missing, unreadable, or not a rules snapshot of a version CEMS reads."""


class SnapshotUntrusted(SnapshotError):
    """The snapshot does not match the digest CEMS wrote with it (or the digest is missing)."""


def sha256_hex(data: bytes) -> str:
    try:  # the C module alone: `hashlib` costs ~10 ms to import on a small machine, `_sha256` ~1 ms
        from _sha256 import sha256
    except ImportError:  # Python 3.12+ renamed it
        try:
            from _sha2 import sha256
        except ImportError:
            from hashlib import sha256
    return sha256(data).hexdigest()


def digest_path(path: str) -> str:
    return path + DIGEST_SUFFIX


class SnapshotRule:
    """The fields the matcher needs, read from one snapshot record (same names as `Rule`)."""

    __slots__ = ("id", "tool", "pattern", "action", "reason", "field", "regex", "project")

    def __init__(self, record: dict[str, Any]) -> None:
        self.id = record["id"]
        self.tool = record["tool"]
        self.pattern = record["pattern"]
        self.action = record["action"]
        self.reason = record.get("reason") or ""
        self.field = record.get("field") or None
        self.regex = record.get("regex") is True
        self.project = record.get("project") or None

    @classmethod
    def from_row(cls, row: list[Any]) -> SnapshotRule:
        """From a version-2 row that `_is_valid_row` accepted (positions as in SNAPSHOT_FIELDS)."""
        view = cls.__new__(cls)
        view.id, view.tool, view.pattern, view.action = row[0], row[1], row[2], row[3]
        view.reason = row[4] or ""
        view.field = row[5] or None
        view.regex = row[6] is True
        view.project = row[7] or None
        return view

    def __repr__(self) -> str:
        return f"SnapshotRule(id={self.id!r}, {self.action} {self.tool}: {self.pattern!r})"


def default_snapshot_path() -> str:
    """Same file as `cems_cli.paths.rules_snapshot_path()`, computed without pathlib."""
    return os.path.join(cems_home(), SNAPSHOT_NAME)


def _is_valid_record(record: Any) -> bool:
    if type(record) is not dict:
        return False
    get = record.get
    return _are_valid(get("id"), get("tool"), get("pattern"), get("action"), get("reason"), get("field"),
                      get("project"))


_ROW_LENGTH = len(SNAPSHOT_FIELDS)


def _is_valid_row(row: Any) -> bool:
    if type(row) is not list or len(row) != _ROW_LENGTH:
        return False
    return _are_valid(row[0], row[1], row[2], row[3], row[4], row[5], row[7])


def _are_valid(rule_id: Any, tool: Any, pattern: Any, action: Any, reason: Any, field: Any,
               project: Any) -> bool:
    # Exact type checks, no generators: this runs for every rule on every tool call.
    if type(rule_id) is not str or type(tool) is not str or type(pattern) is not str:
        return False
    if type(action) is not str:
        return False
    if not (rule_id and tool and pattern) or action not in ACTION_RANK:
        return False
    return (
        (reason is None or type(reason) is str)
        and (field is None or type(field) is str)
        and (project is None or type(project) is str)
    )


def file_identity(stat: os.stat_result) -> str:
    return f"{stat.st_ino} {stat.st_size} {stat.st_mtime_ns} {stat.st_ctime_ns}"


def _read_verified(path: str) -> bytes:
    """The snapshot's bytes, if they are the ones CEMS wrote (see DIGEST_SUFFIX). Raises SnapshotUntrusted."""
    for attempt in range(2):
        raw, identity = _read(path)
        try:
            with open(digest_path(path), "rb") as handle:
                expected = handle.read(256).decode("ascii", "replace").split("\n")
        except OSError:
            raise SnapshotUntrusted(f"rules snapshot {path} has no digest") from None
        if len(expected) > 1 and expected[1] == identity or sha256_hex(raw) == expected[0]:
            return raw
        if attempt == 0:
            # `write_snapshot` replaces the snapshot, then its digest: a reader between the two renames sees
            # the new snapshot and the old digest. Look again a moment later before calling it tampered.
            import time

            time.sleep(0.05)
    raise SnapshotUntrusted(f"rules snapshot {path} does not match its digest (changed outside CEMS)")


def _read(path: str) -> tuple[bytes, str]:
    """The file's bytes and its identity, taken after reading: a write during the read changes the ctime."""
    try:
        with open(path, "rb") as handle:
            raw = handle.read()
            return raw, file_identity(os.fstat(handle.fileno()))
    except OSError as err:
        raise SnapshotError(f"cannot read rules snapshot {path}: {err.strerror or err}") from None


def _parse(path: str | os.PathLike[str] | None, verify: bool) -> tuple[str, int, list[Any]]:
    """The snapshot's path, version and list of rules (objects in version 1, rows in version 2)."""
    path = os.fspath(path) if path is not None else default_snapshot_path()
    raw = _read_verified(path) if verify else _read(path)[0]
    try:
        data = json_loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as err:
        raise SnapshotError(f"corrupt rules snapshot {path}: {err}") from None
    version = data.get("version") if isinstance(data, dict) else None
    rules = data.get("rules") if isinstance(data, dict) else None
    if version not in (1, 2) or type(version) is not int or not isinstance(rules, list) or (
        version == 2 and data.get("fields") != list(SNAPSHOT_FIELDS)
    ):
        raise SnapshotError(f"corrupt rules snapshot {path}: not a version-{SNAPSHOT_VERSION} snapshot")
    return path, version, rules


def read_records(path: str | os.PathLike[str] | None = None, *, verify: bool = False) -> list[dict[str, Any]]:
    """The rule records of a snapshot. Raises SnapshotError if the file is missing or not a snapshot, and,
    with `verify`, SnapshotUntrusted if it is not the one CEMS wrote; single malformed records are dropped,
    so one bad rule cannot switch off all the others."""
    _, version, rules = _parse(path, verify)
    if version == 2:
        rules = [dict(zip(SNAPSHOT_FIELDS, row, strict=True)) for row in rules if _is_valid_row(row)]
    return [record for record in rules if _is_valid_record(record)]


def load_rule_views(path: str | os.PathLike[str] | None = None, *, verify: bool = True) -> list[SnapshotRule]:
    """Snapshot rules as cheap matcher records (the hook's path), checked against their digest.
    Raises SnapshotError (SnapshotUntrusted when the digest disagrees or is missing)."""
    _, version, rules = _parse(path, verify)
    if version == 2:
        return [SnapshotRule.from_row(row) for row in rules if _is_valid_row(row)]
    return [SnapshotRule(record) for record in rules if _is_valid_record(record)]


def load_snapshot(path: str | os.PathLike[str] | None = None) -> list[Rule]:
    """Snapshot rules as validated `Rule`s. Raises SnapshotError; records that fail validation are dropped."""
    from cems_cli.rules.model import Rule

    rules = []
    for record in read_records(path):
        try:
            rules.append(Rule.from_dict(record))
        except ValueError:
            continue
    return rules


def write_snapshot(rules: Iterable[Rule], path: str | os.PathLike[str] | None = None) -> str:
    """Replace the snapshot with `rules`, atomically, readable by the owner only. Returns the path written."""
    import json
    from datetime import UTC, datetime

    path = os.fspath(path) if path is not None else default_snapshot_path()
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, mode=0o700, exist_ok=True)
    header = json.dumps({
        "version": SNAPSHOT_VERSION,
        "generated_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "fields": list(SNAPSHOT_FIELDS),
    }, ensure_ascii=False)
    rows = [json.dumps([record[name] for name in SNAPSHOT_FIELDS], ensure_ascii=False)
            for record in (rule.to_dict() for rule in rules)]
    # One rule a line, for a person reading the file; the same bytes to the parser as one long line.
    body = ",\n".join(rows)
    payload = f'{header[:-1]}, "rules": [\n{body}\n]}}\n'.encode()
    # The snapshot, then its digest with the identity it has after the rename (a rename sets the ctime):
    # a crash between the two leaves a snapshot that fails the check and is rebuilt.
    _replace_atomically(path, payload, directory)
    identity = file_identity(os.stat(path))
    _replace_atomically(digest_path(path), f"{sha256_hex(payload)}\n{identity}\n".encode("ascii"), directory)
    _fsync_directory(directory)
    try:
        os.unlink(path + REFRESH_FAILED_SUFFIX)  # a good snapshot ends any refresh back-off
    except OSError:
        pass
    return path


def _replace_atomically(path: str, payload: bytes, directory: str) -> None:
    import tempfile

    descriptor, temp_path = tempfile.mkstemp(prefix=".rules.snapshot.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(descriptor, "wb") as handle:  # mkstemp creates it 0600
            handle.write(payload)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp_path, path)
    except BaseException:
        try:
            os.unlink(temp_path)
        except OSError:
            pass
        raise


def _fsync_directory(directory: str) -> None:
    # Makes the rename itself durable; not every filesystem allows opening a directory, hence best effort.
    try:
        descriptor = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(descriptor)
    except OSError:
        pass
    finally:
        os.close(descriptor)

"""Scrubbing deleted text out of the database's files: after a purge or pruning, maintenance rewrites the
tables that held it and, on the embedded server, retires the WAL segments that recorded it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import psycopg

from cems_cli.store.member_access import is_restricted, meta_from

# A DELETE only marks rows dead: their bytes (content, title, tags, the full-text lexemes, the vectors) stay
# in the table and index files, in old row versions, in the column statistics ANALYZE sampled, and in the
# write-ahead log, where anyone who can read the data folder finds them with `grep -a`. After a purge (or
# pruning), maintenance rewrites what held them (VACUUM FULL: new files holding live rows only; the old
# ones are emptied at commit and unlinked at the next checkpoint) and, on the embedded server, retires the
# WAL segments that recorded them (the server runs with wal_recycle = off, so a retired segment is
# deleted, not renamed for reuse with its contents intact).
# What remains out of reach: blocks of the deleted files on the disk itself (a file system frees them, it does
# not overwrite them), backups and snapshots, the WAL of an external server (CEMS_DATABASE_URL; its
# administrator's to retire) and of an embedded server an earlier version started with WAL recycling on
# (until it is restarted), and, outside the database, the capture spool's raw tool events and Claude Code's
# transcripts the memory came from.
# memory_edits: an edited memory's texts before (sql/020), deleted with it by a purge.
SCRUB_TABLES = ("memory_documents", "memory_chunks", "rules", "capture_sessions", "memory_summaries",
                "memory_edits")
_SCRUB_KEY = "scrub_pending:"
SCRUB_LOCK_TIMEOUT = "10s"  # VACUUM FULL waits for readers; it must not stall the prompt hook for long


@dataclass
class ScrubReport:
    tables: bool = False  # the tables (and their indexes, TOAST and statistics) rewritten
    wal: bool = False  # the WAL segments that recorded the deleted rows removed
    note: str | None = None  # what was not done, and why

    def to_json(self) -> dict[str, Any]:
        return {"tables": self.tables, "wal": self.wal, "note": self.note}


def mark_scrub_pending(conn: psycopg.Connection, user: str) -> None:
    """Record, in the caller's transaction, that `user` deleted memories whose text is still on disk."""
    if is_restricted(conn):  # a member marks their own key only (sql/023_member_bookkeeping.sql)
        conn.execute("SELECT cems_mark_scrub_pending()")
        return
    conn.execute(
        "INSERT INTO cems_meta (key, value) VALUES (%s, clock_timestamp()::text) "
        "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        (_SCRUB_KEY + user,),
    )


def scrub_pending(conn: psycopg.Connection, user: str) -> bool:
    row = conn.execute(f"SELECT 1 FROM {meta_from(conn)} WHERE key = %s", (_SCRUB_KEY + user,)).fetchone()
    return row is not None


def scrub(conn: psycopg.Connection, *, embedded: bool) -> ScrubReport:
    """Erase the bytes of deleted memories from the database files (see above). Needs an autocommit
    connection (VACUUM runs outside transactions). The tables are rewritten wherever we own them; the
    statistics catalog and the WAL only where we are superuser of the embedded server (on a server of
    someone else's, CHECKPOINT and WAL switches are theirs to decide). Pending marks are cleared only when
    the tables were rewritten, and only those seen before it started (a later purge waits for the next)."""
    report = ScrubReport()
    if not conn.autocommit:
        report.note = "not an autocommit connection"
        return report
    row = conn.execute(
        "SELECT (SELECT rolsuper FROM pg_roles WHERE rolname = current_user), "
        "coalesce(bool_and(pg_has_role(c.relowner, 'USAGE')), false) "
        "FROM pg_class c WHERE c.oid = ANY(%s::regclass[])",
        (list(SCRUB_TABLES),),
    ).fetchone()
    superuser, owner = bool(row and row[0]), bool(row and row[1])
    if not owner:
        report.note = "the memory tables belong to another database role: only their owner can rewrite them"
        return report
    seen = conn.execute(
        "SELECT key, value FROM cems_meta WHERE key LIKE %s", (_SCRUB_KEY.replace("_", r"\_") + "%",)
    ).fetchall()
    tables = ", ".join(SCRUB_TABLES)
    conn.execute(f"SET lock_timeout = '{SCRUB_LOCK_TIMEOUT}'")
    try:
        conn.execute(f"VACUUM FULL {tables}")
        report.tables = True
        if superuser:
            # The column statistics quote sampled values (histogram bounds, common values and lexemes),
            # and ANALYZE of a table left empty keeps the old ones: drop them, recompute them from the
            # live rows, then rewrite the catalog so the dropped rows' bytes go as well.
            conn.execute(
                "DELETE FROM pg_catalog.pg_statistic WHERE starelid = ANY(%(t)s::regclass[]) "
                "OR starelid IN (SELECT indexrelid FROM pg_index WHERE indrelid = ANY(%(t)s::regclass[]))",
                {"t": list(SCRUB_TABLES)},
            )
            conn.execute(f"ANALYZE {tables}")
            conn.execute("VACUUM FULL pg_catalog.pg_statistic")
        else:
            conn.execute(f"ANALYZE {tables}")
            report.note = "column statistics may still quote deleted text: only a superuser can clear them"
    except psycopg.errors.LockNotAvailable:
        report.note = "the tables were busy; the next maintenance retries"
        report.tables = False
    finally:
        conn.execute("RESET lock_timeout")
    if not report.tables:
        return report
    conn.execute(
        "SELECT cems_delete_meta(%s::text[], %s::text[])",  # members hold no DELETE (017)
        ([k for k, _ in seen], [v for _, v in seen]),
    )
    if not (embedded and superuser):
        wal = "the server's write-ahead log is its administrator's to retire"
        report.note = "; ".join(filter(None, [report.note, wal]))
        return report
    recycle = conn.execute("SELECT current_setting('wal_recycle')").fetchone()
    # The deleted rows, and whole pages holding them, are in the segments written up to now: a checkpoint
    # makes them unneeded, the switch closes the current one, and the next checkpoint deletes them all.
    conn.execute("CHECKPOINT")
    conn.execute("SELECT pg_switch_wal()")
    conn.execute("CHECKPOINT")
    if recycle and recycle[0] == "off":
        report.wal = True
    else:
        report.note = (
            "this server recycles WAL segments, which keeps their old contents: restart it "
            "(`cems db stop`; the next command starts it without recycling) and run `cems maintain` again"
        )
    return report

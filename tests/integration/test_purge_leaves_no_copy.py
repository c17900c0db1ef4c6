"""`cems forget --purge`, then `cems maintain`: no file of the embedded PostgreSQL's data folder (tables,
indexes, statistics, write-ahead log) nor of CEMS_HOME holds the purged text any more, as `grep -a` would
find it. What is not covered (blocks of deleted files on the disk itself, backups, the capture spool's raw
events, Claude Code's own transcripts) is listed in cems_cli/store/lifecycle.py and the README."""

from __future__ import annotations

import os
import sqlite3
import uuid
from pathlib import Path

from cems_cli.store.embedded import data_dir, stop_server


def _files_holding(marker: bytes, *roots: Path) -> list[str]:
    found = []
    for root in roots:
        for folder, _dirs, files in os.walk(root):  # symlinks not followed: the cluster is scanned as a root
            for name in files:
                path = os.path.join(folder, name)
                if not os.path.isfile(path) or os.path.islink(path):
                    continue  # sockets, links
                with open(path, "rb") as handle:
                    if marker in handle.read():
                        found.append(path)
    return found


def _checkpoint(pgdata: Path, *, analyze: bool = False) -> None:
    import psycopg

    from cems_cli.store.embedded import ensure_server

    with psycopg.connect(ensure_server(pgdata).conninfo(), autocommit=True) as conn:
        if analyze:  # as autovacuum does: the column statistics sample the rows, and may quote them
            conn.execute("ANALYZE memory_documents, memory_chunks")
        conn.execute("CHECKPOINT")


def test_a_purged_memory_leaves_no_copy_after_maintenance(cli, tmp_path):
    home = tmp_path / "home"
    at_home = {"CEMS_HOME": str(home)}
    marker = f"zqpurge{uuid.uuid4().hex[:12]}"
    text = f"The recovery phrase of the ops vault is {marker}, kept in the safe on floor three."
    try:
        first = cli("remember", text, "--category", "context", "--json", extra_env=at_home)
        assert first.code == 0, first.stderr
        # A near duplicate that consolidation archives into the first: a second copy of the text.
        copy = cli("remember", text.replace("three.", "three!"), "--category", "context", "--json")
        assert copy.code == 0, copy.stderr
        merged = cli("maintain", "--json").json()
        assert merged["consolidated"] and "scrubbed" not in merged  # nothing deleted yet: no scrub
        # Searched for: the access count is rewritten (one more old row version) and the query cached.
        assert cli("search", marker, "--json").json()["results"]
        pgdata = home / "pg"
        _checkpoint(pgdata, analyze=True)  # as the server does every few minutes: rows reach the files
        before = _files_holding(marker.encode(), data_dir(pgdata))
        assert any("pg_wal" not in path for path in before), before  # else the test proves little

        survivor = merged["consolidated"][0]["kept"]
        # Edited: its text before, the marker in it, is kept in the edit history (sql/020), a third copy.
        import cems
        from cems_cli.config import get_settings

        get_settings.cache_clear()
        with cems.open() as memory:
            memory.edit(survivor, "The recovery phrase of the ops vault moved to the new safe.")
            assert memory.history(survivor).edits[0].fields == ["text"]
        purged = cli("forget", survivor, "--purge", "--json")
        assert purged.code == 0, purged.stderr
        _checkpoint(pgdata)
        left = _files_holding(marker.encode(), data_dir(pgdata))
        assert any("pg_wal" not in path for path in left), left  # a DELETE alone leaves the bytes

        report = cli("maintain", "--json").json()
        assert report["scrubbed"] == {"tables": True, "wal": True, "note": None}
        assert _files_holding(marker.encode(), data_dir(pgdata), home) == []
        listed = cli("list", "--json").json()
        assert all(marker not in m["content"] for m in listed["memories"])  # the archived copy went too
        with sqlite3.connect(home / "cache" / "queries.db") as cache:
            assert cache.execute("SELECT count(*) FROM q").fetchone() == (0,)
        assert "scrubbed" not in cli("maintain", "--json").json()  # done: not again until the next purge
    finally:
        stop_server(home / "pg")

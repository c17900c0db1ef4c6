"""Many processes at once: migrations apply once, concurrent writers lose nothing and duplicate nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

from tests.conftest import REPO

MIGRATE = textwrap.dedent("""
    from cems_cli.config import load_settings
    from cems_cli.store.db import connect
    conn = connect(load_settings())
    print(conn.execute("SELECT count(*) FROM schema_migrations").fetchone()[0])
""")

REMEMBER = textwrap.dedent("""
    import json, sys
    from cems_cli.config import load_settings
    from cems_cli.engine.service import MemoryService
    worker = int(sys.argv[1])
    ids = []
    with MemoryService(load_settings()) as svc:
        for i in range(50):
            # Half the texts are the same in every worker: they must be stored once.
            text = f"shared fact number {i}" if i % 2 == 0 else f"worker {worker} private fact {i}"
            ids.append(svc.remember(text)[0])
    print(json.dumps(ids))
""")


def _spawn(code: str, env: dict[str, str], *args: str) -> subprocess.Popen[bytes]:
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("CEMS_")} | env
    return subprocess.Popen(
        [sys.executable, "-c", code, *args],
        env=full_env,
        cwd=str(REPO),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def test_migrations_run_once_under_four_concurrent_processes(tmp_path):
    from cems_cli.store.embedded import stop_server
    from cems_cli.store.migrations import available_migrations

    env = {"CEMS_HOME": str(tmp_path / "home"), "CEMS_USER": "migrator"}
    procs = [_spawn(MIGRATE, env) for _ in range(4)]
    try:
        outputs = [p.communicate(timeout=180) for p in procs]
        for proc, (out, err) in zip(procs, outputs, strict=True):
            assert proc.returncode == 0, err.decode()
            assert err.decode().strip() == "", err.decode()  # nothing spurious on stderr
            assert int(out) == len(available_migrations())
    finally:
        stop_server(tmp_path / "home" / "pg")


def test_eight_writers_lose_nothing_and_duplicate_nothing(env):
    procs = [_spawn(REMEMBER, env, str(w)) for w in range(8)]
    results = []
    for proc in procs:
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err.decode()
        results.append(json.loads(out))
    shared_ids = [ids[0::2] for ids in results]
    assert all(ids == shared_ids[0] for ids in shared_ids), (
        "every worker must get the same id for a shared text"
    )
    from cems_cli.config import load_settings
    from cems_cli.store.db import connect

    conn = connect(load_settings())
    rows = conn.execute(
        "SELECT content, count(*) FROM memory_documents WHERE user_id = %s GROUP BY content",
        (env["CEMS_USER"],),
    ).fetchall()
    chunks = conn.execute(
        "SELECT count(*) FROM memory_chunks c JOIN memory_documents d ON d.id = c.document_id "
        "WHERE d.user_id = %s",
        (env["CEMS_USER"],),
    ).fetchone()[0]
    conn.close()
    assert len(rows) == 25 + 8 * 25
    assert all(count == 1 for _, count in rows)
    assert chunks == len(rows)

"""Exactly once under SIGKILL: the real observer process is killed twenty times at random moments while it
ingests, restarted each time, then allowed to finish; what it stored must be identical to a clean single run
(nothing lost, nothing stored twice, no half-chunk digests)."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from tests.conftest import REPO, cems_subprocess
from tests.integration.test_observer_engine import make_idle
from tests.integration.test_observer_synth import one_pass, write_session

KILLS = 20
# Enough transcript (~10 MB) that twenty lives cannot read it all on a fast, quiet machine: with 40 turns a
# session (1.4 MB) the observer was done after six kills there, and with 120 (4 MB) a CI machine was done
# after eight (12-17 of 20 kills landed during ingestion here). With 300, 20 of 20 here, in ~30 s.
TURNS = 300


def spawn(environment: dict[str, str]) -> subprocess.Popen[bytes]:
    full = {k: v for k, v in os.environ.items() if not k.startswith("CEMS_")} | environment
    return subprocess.Popen(
        [sys.executable, "-m", "cems_cli.cli.app", "observe"],
        env=full,
        cwd=str(REPO),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def progress(conn, user: str) -> tuple[int, int]:
    row = conn.execute(
        "SELECT (SELECT coalesce(sum(read_offset), 0) FROM observer_files WHERE user_id = %(u)s), "
        "(SELECT count(*) FROM memory_documents WHERE user_id = %(u)s)",
        {"u": user},
    ).fetchone()
    return int(row[0]), int(row[1])


def memories(conn, user: str) -> list[tuple]:
    rows = conn.execute(
        "SELECT content, category, tags, title, source, source_ref, created_at FROM memory_documents "
        "WHERE user_id = %s AND NOT archived",
        (user,),
    ).fetchall()
    return sorted((r[0], r[1], tuple(r[2]), r[3], r[4], r[5], r[6].isoformat()) for r in rows)


@pytest.mark.slow
def test_kill_9_twenty_times_during_ingestion_loses_and_duplicates_nothing(env, tmp_path):
    from cems_cli.config import load_settings
    from cems_cli.engine.service import MemoryService

    first, second = tmp_path / "root-a", tmp_path / "root-b"
    files = [
        write_session(first / "-home-dev-shop-api" / "s1.jsonl", "kill-session-1", TURNS, seed=1),
        write_session(first / "-home-dev-shop-api" / "s2.jsonl", "kill-session-2", TURNS, seed=2),
        write_session(
            second / "-home-dev-billing" / "s3.jsonl", "kill-session-3", TURNS, seed=3,
            cwd="/home/dev/billing",
        ),
    ]
    paths = sorted(p for root in (first, second) for p in root.rglob("*.jsonl"))
    for path in paths:
        make_idle(path)
    total = sum(files)
    base = {
        **env,
        "CEMS_OBSERVER_PATHS": f"{first},{second}",
        "CEMS_OBSERVER_IDLE_SECONDS": "300",
        # Small commits: many transaction boundaries for the kills to fall around and inside.
        "CEMS_OBSERVER_COMMIT_CHUNKS": "2",
        "CEMS_OBSERVER_COMMIT_BYTES": "65536",
    }
    clean_user, crash_user = f"clean-{uuid.uuid4().hex[:8]}", f"crash-{uuid.uuid4().hex[:8]}"

    clean = cems_subprocess(["observe", "--once"], {**base, "CEMS_USER": clean_user}, timeout=900)
    assert clean.returncode == 0, clean.stderr.decode()

    seed = int(time.time())
    rng = random.Random(seed)
    crash_env = {**base, "CEMS_USER": crash_user}
    kills: list[tuple[str, int, int]] = []
    with MemoryService(load_settings()) as svc:
        for _ in range(KILLS):
            before = progress(svc.conn, crash_user)
            process = spawn(crash_env)
            try:
                if rng.random() < 0.25:
                    moment = "any"  # anywhere, start-up included
                    time.sleep(rng.uniform(0.2, 1.5))
                else:
                    moment = "ingesting"  # right after a commit, or inside the next one
                    deadline = time.monotonic() + 120
                    # Once every byte is read there is no progress left to wait for (a fast machine gets
                    # there before the last kills): kill at once instead of waiting out the deadline.
                    while (
                        before[0] < total
                        and progress(svc.conn, crash_user) == before
                        and time.monotonic() < deadline
                    ):
                        time.sleep(0.02)
                    assert progress(svc.conn, crash_user) != before or before[0] >= total, (
                        "a restarted observer made no progress although bytes were left to read"
                    )
                    time.sleep(rng.uniform(0.0, 0.3))
            finally:  # the kill itself; also when the test fails half-way, so no observer is left
                process.send_signal(signal.SIGKILL)
                process.wait(timeout=30)
            kills.append((moment, *progress(svc.conn, crash_user)))

        finish = cems_subprocess(["observe", "--once"], crash_env, timeout=900)
        assert finish.returncode == 0, finish.stderr.decode()
        clean_set, crash_set = memories(svc.conn, clean_user), memories(svc.conn, crash_user)
        offsets = svc.conn.execute(
            "SELECT path, read_offset, pending FROM observer_files WHERE user_id = %s ORDER BY path",
            (crash_user,),
        ).fetchall()

    during = sum(1 for _moment, offset, _count in kills if offset < total)
    print(
        f"\nkill -9 x{KILLS} (seed {seed}): {during} while bytes were still unread; "
        f"progress at each kill (bytes, memories): {[(o, c) for _m, o, c in kills]}; "
        f"clean run {len(clean_set)} memories, killed run {len(crash_set)}"
    )
    assert during >= KILLS * 3 // 4, "most kills must land during ingestion (make the data larger)"
    assert crash_set == clean_set
    # The generated sessions repeat an observation now and then; the store keeps one copy of a text.
    assert [(text, category) for text, category, *_rest in crash_set] == sorted(
        {o for path in paths for o in one_pass(path)}
    )
    assert [(Path(p), o, pending) for p, o, pending in offsets] == [
        (p, p.stat().st_size, None) for p in paths
    ]

"""`make run` is `cems demo`: safe to repeat, and it never writes into the user's own store."""

from __future__ import annotations

import json
from pathlib import Path

from cems_cli.cli.demo import DEMO_MEMORIES, DEMO_QUERIES
from cems_cli.store.embedded import read_postmaster
from tests.conftest import cems_subprocess


def test_the_demo_runs_twice_in_its_own_store_and_leaves_the_users_store_alone(tmp_path):
    home = tmp_path / "home"
    env = {"CEMS_HOME": str(home), "CEMS_USER": "newcomer"}
    # Even a user whose memories live on a server: the demo never writes there (nothing listens on port 1).
    first = cems_subprocess(["demo", "--json"], {**env, "CEMS_DATABASE_URL": "postgresql://nobody@127.0.0.1:1/x"})
    assert first.returncode == 0, first.stderr.decode()
    report = json.loads(first.stdout)
    assert report["home"] == str(home / "demo")
    assert (report["remembered"], report["already_stored"]) == (len(DEMO_MEMORIES), 0)
    assert [s["query"] for s in report["searches"]] == DEMO_QUERIES
    best = [s["results"][0]["memory"] for s in report["searches"]]
    assert "Python with type hints" in best[0] and "pgvector" in best[1] and "make test" in best[2]
    assert read_postmaster(home / "demo" / "pg") is None  # the demo's server does not outlive it

    second = cems_subprocess(["demo"], env)
    assert second.returncode == 0, second.stderr.decode()
    assert f"Remembered 0 new memories ({len(DEMO_MEMORIES)} already stored)" in second.stdout.decode()

    try:
        mine = cems_subprocess(["list", "--json"], env)
        assert mine.returncode == 0, mine.stderr.decode()
        assert json.loads(mine.stdout)["memories"] == []  # nothing of the demo in the user's own store
    finally:
        cems_subprocess(["db", "stop"], env)
    assert not Path(home / "pg").exists() or read_postmaster(home / "pg") is None

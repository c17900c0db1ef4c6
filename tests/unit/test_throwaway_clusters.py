"""The clusters the suite makes in-process skip initdb's sync (tests/conftest.py: throwaway_clusters);
a user's cluster is made with initdb's defaults."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from cems_cli.store import _embedded_cluster
from cems_cli.store.embedded import ServerError


def _initdb_command(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[str]:
    """The initdb command `_ensure_cluster` runs (stopped there: the fake initdb fails)."""
    ran: list[list[str]] = []

    def fake_run(command: list[str], user: str | None, *, timeout: float) -> subprocess.CompletedProcess[str]:
        ran.append(command)
        return subprocess.CompletedProcess(command, 1, "", "stopped by the test")

    monkeypatch.setattr(_embedded_cluster, "_run", fake_run)
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    with pytest.raises(ServerError, match="stopped by the test"):
        _embedded_cluster._ensure_cluster(home / "pg", None, 0, 0, tmp_path / "bin")
    (command,) = ran
    assert Path(command[0]).name == "initdb"
    return command


def test_the_suites_clusters_skip_initdbs_sync(monkeypatch, tmp_path):
    assert "--no-sync" in _initdb_command(monkeypatch, tmp_path)


def test_a_users_cluster_is_synced(monkeypatch, tmp_path):
    monkeypatch.setattr(_embedded_cluster, "INITDB_EXTRA_OPTIONS", ())
    assert "--no-sync" not in _initdb_command(monkeypatch, tmp_path)

"""Shared fixtures: one real embedded PostgreSQL per test session, isolated users per test."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.fixtures import fake_ollama, fake_openai  # noqa: F401
from tests.support.paths import FIXTURES  # noqa: F401  re-exported: the shipped Claude Code fixtures

REPO = Path(__file__).resolve().parents[1]

_CEMS_VARS = [k for k in os.environ if k.startswith("CEMS_")]


@pytest.fixture(scope="session")
def cems_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A data folder with a running embedded server, shared by the whole session and stopped at the end."""
    home = tmp_path_factory.mktemp("cems-home")
    yield home
    from cems_cli.server.daemon import stop_server as stop_search_server
    from cems_cli.store.server import stop_server

    stop_search_server(home)  # hooks start it on demand; it must not outlive the session's database
    stop_server(home / "pg")


@pytest.fixture
def env(cems_home: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """CEMS_* environment for one test: the shared server, a fresh user (so tests never see each other)."""
    for key in _CEMS_VARS:
        monkeypatch.delenv(key, raising=False)
    values = {
        "CEMS_HOME": str(cems_home),
        "CEMS_USER": f"user-{uuid.uuid4().hex[:10]}",
        "CEMS_PROJECT": "project:acme/api",
    }
    for key, value in values.items():
        monkeypatch.setenv(key, value)
    from cems_cli.config import get_settings

    get_settings.cache_clear()
    yield values
    get_settings.cache_clear()


@dataclass
class CliResult:
    code: int
    stdout: str
    stderr: str

    def json(self):
        import json

        return json.loads(self.stdout)


@pytest.fixture
def cli(env: dict[str, str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch):
    """Run `cems ARGS…` in-process (the model stays loaded between calls); returns code/stdout/stderr."""
    from cems_cli.cli.app import main
    from cems_cli.config import get_settings

    def run(*args: str, stdin: bytes | None = None, extra_env: dict[str, str] | None = None) -> CliResult:
        for key, value in (extra_env or {}).items():
            monkeypatch.setenv(key, value)
        get_settings.cache_clear()
        if stdin is not None:
            import io

            monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin)))
        capsys.readouterr()
        code = 0
        try:
            main(list(args))
        except SystemExit as exit_:
            code = exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 1)
        out = capsys.readouterr()
        return CliResult(code, out.out, out.err)

    return run


def cems_subprocess(
    args: list[str], env: dict[str, str], stdin: bytes | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[bytes]:
    """Run the real `cems` entry point in a child process."""
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("CEMS_")}
    full_env.update(env)
    return subprocess.run(
        [sys.executable, "-m", "cems_cli.cli.app", *args],
        input=stdin,
        env=full_env,
        capture_output=True,
        timeout=timeout,
        cwd=str(REPO),
    )


@pytest.fixture
def lone_store(env: dict[str, str], monkeypatch: pytest.MonkeyPatch):
    """A MemoryService on a database of its own on the session's server: one user's rows only, as in a
    personal store (the shared database holds every test's users). Dropped afterwards."""
    import psycopg
    from psycopg import sql

    from cems_cli.config import get_settings
    from cems_cli.service import MemoryService
    from cems_cli.store.server import ensure_server

    server = ensure_server(Path(env["CEMS_HOME"]) / "pg")
    name = f"lone_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(server.conninfo(), autocommit=True) as admin:
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    info = psycopg.conninfo.conninfo_to_dict(server.conninfo())
    info["dbname"] = name
    monkeypatch.setenv("CEMS_DATABASE_URL", psycopg.conninfo.make_conninfo(**info))
    get_settings.cache_clear()
    try:
        with MemoryService(get_settings()) as svc:
            yield svc
    finally:
        get_settings.cache_clear()
        with psycopg.connect(server.conninfo(), autocommit=True) as admin:
            admin.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(name)))

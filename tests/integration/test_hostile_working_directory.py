"""A repository cannot run its code inside CEMS.

CEMS runs in the agent's working directory: a repository it did not write. Here that directory holds a
module named like every standard-library module and every installed dependency (and `sitecustomize`,
`cems_cli`, `cems`); importing any of them writes a marker and fails. Each hook, as user and project installs
write it, the `cems` command, `cems mcp`, and the processes they start (the warm search server, the
capture worker, the observer daemon) run from there. None may import a thing from it, and the long-lived
ones must not even sit in it.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from importlib.metadata import packages_distributions
from pathlib import Path

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from tests.conftest import REPO
from tests.support.paths import PAYLOADS, SAMPLE_TRANSCRIPT

BIN = Path(sys.executable).parent
DECOY = (
    "import os\n"
    "with open({marker!r}, 'a') as _f:\n"
    "    _f.write(__name__ + ' ' + str(os.getpid()) + '\\n')\n"
    "raise ImportError('a module of the working directory was imported: ' + __name__)\n"
)


def _shadowing_names() -> set[str]:
    names = {name for name in sys.stdlib_module_names if name.isidentifier()}
    names |= {name for name in packages_distributions() if name.isidentifier()}
    return names | {"sitecustomize", "usercustomize", "cems_cli", "cems", "_entry"}


@pytest.fixture
def hostile_repo(tmp_path: Path) -> tuple[Path, Path]:
    repo = tmp_path / "repo"
    repo.mkdir()
    marker = tmp_path / "imported-from-the-repository.txt"
    for name in _shadowing_names():
        (repo / f"{name}.py").write_text(DECOY.format(marker=str(marker)))
    assert len(list(repo.iterdir())) > 300
    return repo, marker


def _env(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CEMS_", "PYTHON"))}
    user = f"user-{uuid.uuid4().hex[:10]}"
    env.update(CEMS_HOME=str(home), CEMS_USER=user, CEMS_PROJECT="project:acme/api", **extra)
    return env


def _run(argv: list[str], env: dict[str, str], cwd: Path, payload: dict | None = None) -> str:
    stdin = None if payload is None else json.dumps(payload).encode()
    result = subprocess.run(argv, input=stdin, env=env, cwd=cwd, capture_output=True, timeout=180)
    assert result.returncode == 0, (argv, result.stderr.decode())
    assert b"Traceback" not in result.stderr, result.stderr.decode()
    return result.stdout.decode()


def _payload(name: str, cwd: Path, **changes: object) -> dict:
    return {**json.loads((PAYLOADS / name).read_text()), "cwd": str(cwd), **changes}


def _wait(condition, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def _imported(marker: Path) -> str:
    return marker.read_text() if marker.exists() else ""


def _cwd_of(pid: int) -> str:
    return os.readlink(f"/proc/{pid}/cwd")


def test_hooks_the_cli_and_what_they_start_import_nothing_from_the_repository(cems_home, hostile_repo):
    from cems_cli.server.client import call
    from cems_cli.server.daemon import server_pid, stop_server

    repo, marker = hostile_repo
    home = cems_home
    stop_server(home)  # the prompt hook must start it, from the repository
    env = _env(home, CEMS_RECALL_TIME_BUDGET="20")
    hook = {name: [sys.executable, str(REPO / "hooks" / f"{name}.py")] for name in ("session_start",
            "user_prompt_submit", "pre_tool_use", "post_tool_use", "stop")}
    try:
        _run([str(BIN / "cems"), "remember", "Deploys go through `make release`, never a manual push.",
              "--category", "decisions"], env, repo)
        _run([str(BIN / "cems"), "rule", "add", "Bash: rm -rf*", "--reason", "no mass deletes"], env, repo)
        assert "no mass deletes" in _run([str(BIN / "cems"), "rule", "list"], env, repo)

        _run(hook["session_start"], env, repo, _payload("SessionStart.json", repo))
        _run(hook["user_prompt_submit"], env, repo, _payload("UserPromptSubmit.json", repo, prompt="hi"))
        _wait(lambda: call(str(home), {"op": "ping"}, 0.5) is not None, 120, "the search server")
        # Another session: the first one's profile already showed the memory, so its prompts leave it out.
        asked = _payload("UserPromptSubmit.json", repo, prompt="How do deploys go out, make release?",
                         session_id="another-session")
        answer = _run(hook["user_prompt_submit"], env, repo, asked)
        assert "make release" in answer  # the server started from the repository works
        pid = server_pid(home)
        assert pid is not None and _cwd_of(pid) == "/"

        blocked = subprocess.run(
            hook["pre_tool_use"], input=json.dumps(_payload("PreToolUse.json", repo, tool_input={
                "command": "rm -rf /tmp/x"})).encode(), env=env, cwd=repo, capture_output=True, timeout=60)
        assert b"no mass deletes" in blocked.stdout + blocked.stderr
        # A project install's portable command: the `cems-hook` console script.
        _run([str(BIN / "cems-hook"), "pre_tool_use"], env, repo,
             _payload("PreToolUse.json", repo, tool_input={"command": "ls"}))
        _run(hook["post_tool_use"], env, repo, _payload("PostToolUse.json", repo))

        transcript = repo.parent / "transcript.jsonl"
        shutil.copy(SAMPLE_TRANSCRIPT, transcript)
        _run(hook["stop"], env, repo, _payload("Stop.json", repo, transcript_path=str(transcript)))
        _wait_for_worker(home)
        assert _imported(marker) == ""
    finally:
        stop_server(home)


def _wait_for_worker(home: Path) -> None:
    import sqlite3

    def done() -> bool:
        try:
            with sqlite3.connect(home / "spool.db") as conn:
                pending = conn.execute("SELECT count(*) FROM turns WHERE processed_at IS NULL").fetchone()
            return pending[0] == 0
        except sqlite3.Error:
            return False

    _wait(done, 120, "the capture worker")


def test_cems_mcp_imports_nothing_from_the_repository(cems_home, hostile_repo):
    repo, marker = hostile_repo
    params = StdioServerParameters(
        command=str(BIN / "cems"), args=["mcp"], env=_env(cems_home), cwd=str(repo)
    )

    async def main() -> tuple[bool, bool, str]:
        with open(os.devnull, "w") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    stored = await session.call_tool("remember", {"text": "The API listens on port 8081."})
                    found = await session.call_tool("search", {"query": "which port does the API use"})
                    assert not stored.is_error, stored.content[0].text
                    # A regex rule: rule_test decides in a child process (cems_cli.rules.bounded).
                    await session.call_tool("rule_add", {"pattern": r"^kubectl\s+delete", "tool": "Bash",
                                                         "regex": True})
                    tested = await session.call_tool(
                        "rule_test", {"tool": "Bash", "input": {"command": "kubectl delete pod x"}}
                    )
                    decision = "error" if tested.is_error else json.loads(tested.content[0].text)["decision"]
                    return stored.is_error, found.is_error or "8081" not in found.content[0].text, decision

    assert anyio.run(main) == (False, False, "block")
    assert _imported(marker) == ""


def test_the_observer_daemon_runs_outside_the_repository(cems_home, hostile_repo, tmp_path):
    repo, marker = hostile_repo
    watched = tmp_path / "projects"
    watched.mkdir()
    env = _env(cems_home, CEMS_OBSERVER_PATHS=str(watched), CEMS_OBSERVER_IDLE_SECONDS="1")
    started = json.loads(_run([str(BIN / "cems"), "observe", "--daemon", "--json"], env, repo))
    pid = started["pid"]
    try:
        assert _cwd_of(pid) == "/"
        open_fds = {int(fd) for fd in os.listdir(f"/proc/{pid}/fd")}
        assert {0, 1, 2} <= open_fds
        time.sleep(1.0)  # a poll or two of the folder it watches
        assert _imported(marker) == ""
    finally:
        stop = [str(BIN / "cems"), "observe", "stop"]
        subprocess.run(stop, env=env, cwd=repo, capture_output=True, timeout=60)
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def test_a_child_inherits_no_descriptor_and_no_python_variables(tmp_path, monkeypatch):
    """procs.spawn_python: the agent's client may leave descriptors inheritable and set PYTHON* variables
    (a repository's settings can set an environment); the child sees neither."""
    from cems_cli.plumbing import procinfo, procs

    out = tmp_path / "child.json"
    probe = tmp_path / "probe"
    probe.mkdir()
    (probe / "cems_probe_child.py").write_text(
        "import json, os, sys\n"
        "seen = {'fds': sorted(int(f) for f in os.listdir('/proc/self/fd')), 'cwd': os.getcwd(),\n"
        "        'path': sys.path, 'env': [k for k in os.environ if k.startswith('PYTHON')]}\n"
        f"json.dump(seen, open({str(out)!r}, 'w'))\n"
    )
    opened = os.open(os.devnull, os.O_RDONLY)
    leaked = os.dup2(opened, 77, inheritable=True)  # well above what the child itself opens
    os.close(opened)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PYTHONPATH", str(probe))
    monkeypatch.setenv("PYTHONSTARTUP", str(probe / "cems_probe_child.py"))
    try:
        # The module is found only through the root the bootstrap appends: point that root at the probe.
        monkeypatch.setattr(procs, "package_root", lambda: str(probe))
        pid = procs.spawn_python("cems_probe_child")
        _wait(lambda: out.exists() and not procinfo.alive(pid), 30, "the child")
    finally:
        os.close(leaked)
    seen = json.loads(out.read_text())
    assert seen["cwd"] == "/"
    assert leaked not in seen["fds"]
    assert seen["env"] == []
    assert "" not in seen["path"] and str(tmp_path) not in seen["path"]
    assert seen["path"][-1] == str(probe)  # appended: never ahead of the standard library

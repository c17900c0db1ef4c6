"""Every process CEMS starts is started here, isolated from the folder CEMS was started in.

CEMS runs inside repositories it did not write. A Python child started the usual way (`python -m module`
in the agent's working directory) puts that directory first on `sys.path`, so a repository holding
`socketserver.py` or a file named like any dependency would run its code inside CEMS, with the user's
rights, in a long-lived process that holds every memory. So a CEMS child:

- is a Python started with `-E -P`: no `PYTHON*` variable is read (`PYTHONPATH`, `PYTHONSTARTUP`,
  `PYTHONWARNINGS` can all import code) and nothing unsafe is put in front of `sys.path`; the folder that
  holds `cems_cli` is added at the end, so a checkout that is not installed still finds itself;
- starts in `/` (the bootstrap changes folder before it imports anything), so no relative path resolves
  inside the repository and the process does not keep the repository's folder busy;
- inherits no descriptor but stdin/stdout/stderr, which point where the caller says (`/dev/null` by
  default): the bootstrap closes whatever the agent's client left inheritable;
- gets the caller's environment without `PYTHON*` variables and with `CEMS_HOME` made absolute.

Programs that are not Python (the PostgreSQL binaries, `claude`, `git`, the hook commands `cems hooks
doctor` checks) go through `run`, which gives them `/` (or the folder the caller names, on purpose), a closed
stdin and no inherited descriptor.

Stdlib only and cheap to import: the Stop and prompt hooks start the capture worker and the search server
through `spawn_python`, which uses `os.posix_spawn` rather than `subprocess` (whose import costs a hook
~10-25 ms: signal, threading, selectors)."""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # `typing` costs milliseconds in a hook; annotations are strings anyway
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from subprocess import CompletedProcess
    from typing import Any

# Where every child starts: a folder that exists everywhere and belongs to no repository.
NEUTRAL_CWD = "/"

# Run in the child before anything is imported: leave the caller's folder, drop every inherited descriptor
# above 2, make the folder holding cems_cli importable (appended: never ahead of the standard library), then
# run the module as __main__ with the remaining arguments as its argv.
_BOOTSTRAP = (
    "import os,sys;os.chdir('/');os.closerange(3,os.sysconf('SC_OPEN_MAX'));"
    "r=sys.argv.pop(1);r in sys.path or sys.path.append(r);"
    "import runpy;runpy.run_module(sys.argv.pop(1),run_name='__main__',alter_sys=True)"
)


def package_root() -> str:
    """The folder that holds `cems_cli` (site-packages, or a source checkout)."""
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # cems_cli/plumbing/


def python_argv(module: str, *args: str) -> list[str]:
    """The argv that runs `python -m module args…` isolated (see the module's docstring)."""
    return [sys.executable, "-E", "-P", "-c", _BOOTSTRAP, package_root(), module, *args]


def child_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The caller's environment for a child: no `PYTHON*` variable, `CEMS_HOME` absolute (the child starts
    in `/`), then `extra`."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("PYTHON")}
    home = env.get("CEMS_HOME", "").strip()
    if home:
        env["CEMS_HOME"] = os.path.abspath(os.path.expanduser(home))
    if extra:
        env.update(extra)
    return env


def spawn_python(
    module: str, *args: str, env: Mapping[str, str] | None = None, log: str | None = None
) -> int:
    """Start `module` detached (a session of its own, so it outlives the caller) and return its pid.

    stdin and stdout go to /dev/null, stderr to `log` (appended) or /dev/null. A caller that has threading
    loaded gets the child reaped when it exits (a thread waits for it); a hook exits first."""
    argv = python_argv(module, *args)
    child = dict(env) if env is not None else child_env()
    actions: list[tuple] = [(os.POSIX_SPAWN_OPEN, fd, os.devnull, os.O_RDWR, 0) for fd in (0, 1)]
    if log is None:
        actions.append((os.POSIX_SPAWN_OPEN, 2, os.devnull, os.O_RDWR, 0))
    else:
        actions.append((os.POSIX_SPAWN_OPEN, 2, log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600))
    try:
        pid = os.posix_spawn(sys.executable, argv, child, file_actions=actions, setsid=True)
    except (AttributeError, NotImplementedError):  # no posix_spawn, or no setsid for it, on this system
        pass
    else:
        if "threading" in sys.modules:
            # A long-lived caller (the CLI in-process, a server): reap the child when it exits, or it stays a
            # zombie that looks alive to anyone waiting for it to stop. A hook exits first and leaves it to
            # init; it never loads threading just for this.
            import threading

            threading.Thread(target=_reap, args=(pid,), daemon=True).start()
        return pid
    import subprocess

    stderr = subprocess.DEVNULL if log is None else open(log, "ab")  # noqa: SIM115 - closed below
    try:
        return subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            close_fds=True,
            start_new_session=True,
            cwd=NEUTRAL_CWD,
            env=child,
        ).pid
    finally:
        if log is not None:
            stderr.close()  # type: ignore[union-attr]


def _reap(pid: int) -> None:
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:  # reaped by the caller already
        pass


def run(
    argv: Sequence[str],
    *,
    timeout: float | None,
    input: str | bytes | None = None,
    env: Mapping[str, str] | None = None,
    cwd: str = NEUTRAL_CWD,
    text: bool = True,
    user: str | None = None,
    new_session: bool = False,
) -> CompletedProcess:
    """Run a program to completion, its output captured: started in `cwd` (`/` unless the caller means a
    folder, as `cems hooks doctor` does to run a hook as Claude Code would), with no inherited descriptor,
    stdin closed unless `input` is given, as `user` (its own group, no extra groups) when given.

    `new_session`: the child and what it starts form a process group of their own, killed together on a
    timeout. Raises OSError when the program cannot start and subprocess.TimeoutExpired on a timeout."""
    import subprocess

    kwargs: dict[str, Any] = {}
    if user is not None:
        kwargs = {"user": user, "group": user, "extra_groups": []}
    if not new_session:
        return subprocess.run(
            list(argv),
            input=input,
            stdin=subprocess.DEVNULL if input is None else None,
            capture_output=True,
            text=text,
            timeout=timeout,
            cwd=cwd,
            env=dict(env) if env is not None else child_env(),
            close_fds=True,
            check=False,
            **kwargs,
        )
    import signal

    with subprocess.Popen(
        list(argv),
        stdin=subprocess.DEVNULL if input is None else subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=text,
        cwd=cwd,
        env=dict(env) if env is not None else child_env(),
        close_fds=True,
        start_new_session=True,
        **kwargs,
    ) as proc:
        try:
            out, err = proc.communicate(input, timeout=timeout)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except OSError:
                pass
            proc.communicate()
            raise
    return subprocess.CompletedProcess(list(argv), proc.returncode, out, err)

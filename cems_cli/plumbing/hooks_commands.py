"""CEMS's hook commands read back: which settings entries are CEMS's own (`parse_command`), and how
`cems hooks doctor` runs one safely, never through a shell (`invocation`)."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import sys
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path

from cems_cli.plumbing.hookentry import HANDLERS
from cems_cli.resources import data_dir

PORTABLE_PROGRAM = "cems-hook"
# The hook scripts shipped in the hooks data folder, one per handler: what a CEMS command runs.
SCRIPTS = frozenset(f"{handler}.py" for handler in HANDLERS)


# --- recognising CEMS's commands ------------------------------------------------------------------------

_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")


@dataclass(frozen=True)
class CemsCommand:
    """A settings command recognised as one of CEMS's hooks, taken apart."""

    command: str
    handler: str
    program: str  # the interpreter, or cems-hook
    script: str | None  # None for the portable form
    env: dict[str, str] = field(default_factory=dict)

    @property
    def portable(self) -> bool:
        return self.script is None

    @property
    def pinned_home(self) -> str | None:
        return self.env.get("CEMS_HOME")


def _is_cems_hooks_dir(folder: str) -> bool:
    path = Path(folder)
    try:
        if path.resolve() == data_dir("hooks").resolve():
            return True
    except OSError:  # FileNotFoundError included: no hooks folder in this installation
        pass
    # Another checkout or venv of CEMS (still there: it has the bootstrap; or a wheel's data folder, which
    # is recognisable even after that venv was deleted, so doctor can report it and uninstall remove it).
    return (path / "_entry.py").is_file() or path.parts[-3:] == ("cems_cli", "_data", "hooks")


def parse_command(command: str, known: Collection[str] = ()) -> CemsCommand | None:
    """The CEMS hook a command runs, or None when it is someone else's.

    CEMS's commands are `[NAME=value …] <python> <dir>/<script>.py`, where the script is one of the hook
    scripts and the command was recorded by an install (`known`), pins a store, or the folder is a CEMS
    hooks folder; or `[NAME=value …] cems-hook <handler>`. Someone's own `python3 ~/.claude/hooks/stop.py`
    matches none of these, so uninstall never takes it out.
    """
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    env: dict[str, str] = {}
    while words and _ASSIGNMENT.match(words[0]):
        name, _, value = words.pop(0).partition("=")
        env[name] = value
    if len(words) != 2:
        return None
    program, argument = words
    if os.path.basename(program) == PORTABLE_PROGRAM:
        # Even `cems-hook misspelt` is ours: doctor reports it, uninstall removes it.
        return CemsCommand(command, argument, program, None, env)
    script = os.path.basename(argument)
    if script not in SCRIPTS:
        return None
    if command in known or "CEMS_HOME" in env or _is_cems_hooks_dir(os.path.dirname(argument)):
        return CemsCommand(command, script.removesuffix(".py"), program, argument, env)
    return None


# --- running a command safely (doctor) -------------------------------------------------------------------


class NotRunnable(ValueError):
    """A command recognised as CEMS's that is not exactly one CEMS writes; the message says what differs."""


@dataclass(frozen=True)
class Invocation:
    """How doctor runs a hook command: an argv of this installation's own files and the environment the
    command's assignment sets. No shell, so nothing in the settings file is ever interpreted."""

    argv: tuple[str, ...]
    env: dict[str, str] = field(default_factory=dict)


def invocation(command: str) -> Invocation:
    """The argv doctor may run for `command`, or NotRunnable.

    Settings files can come from a cloned repository (`.claude/settings.json` is committed), so anything
    recognised as CEMS-ish is not trusted to be CEMS's. Accepted are exactly the forms install writes, spelt
    exactly as it writes them: `[CEMS_HOME=<absolute path>] cems-hook <handler>` (cems-hook found on this
    PATH), or `[CEMS_HOME=<absolute path>] <this Python> <this installation's hooks dir>/<handler>.py`. The
    argv is built from this installation's own paths, not the file's: what runs is what was checked.
    """
    try:
        words = shlex.split(command)
    except ValueError:
        raise NotRunnable("unbalanced quotes") from None
    env: dict[str, str] = {}
    if words and _ASSIGNMENT.match(words[0]):
        name, _, value = words[0].partition("=")
        if name != "CEMS_HOME":
            raise NotRunnable(f"sets {name}; CEMS sets only CEMS_HOME")
        if not os.path.isabs(value):
            raise NotRunnable(f"CEMS_HOME={value!r} is not an absolute path")
        env[name] = value
        words = words[1:]
    if words and _ASSIGNMENT.match(words[0]):
        raise NotRunnable(f"sets {words[0].partition('=')[0]}; CEMS sets only CEMS_HOME")
    # Re-spelt the way hook_command / portable_hook_command write it: any other quoting, spacing or shell
    # syntax (`;`, `$(…)`, backquotes, redirections) means someone other than CEMS wrote or edited it.
    prefix = f"CEMS_HOME={shlex.quote(env['CEMS_HOME'])} " if env else ""
    if prefix + shlex.join(words) != command:
        raise NotRunnable("spelt differently from what CEMS writes: other quoting, spacing or shell syntax")
    if len(words) != 2:
        raise NotRunnable("CEMS's commands are a program and one argument")
    program, argument = words
    if program == PORTABLE_PROGRAM:
        if argument not in HANDLERS:
            raise NotRunnable(f"unknown handler {argument!r}")
        found = shutil.which(PORTABLE_PROGRAM)
        if found is None:
            raise NotRunnable(f"{PORTABLE_PROGRAM} is not on PATH here")
        if not os.path.isabs(found):  # PATH names a relative folder: it would run the project's own file
            raise NotRunnable(f"{PORTABLE_PROGRAM} is found at the relative path {found}")
        return Invocation((found, argument), env)
    if os.path.basename(program) == PORTABLE_PROGRAM:
        raise NotRunnable(f"CEMS writes {PORTABLE_PROGRAM} by name, not as the path {program}")
    try:
        hooks_dir = data_dir("hooks")
    except FileNotFoundError:
        raise NotRunnable("this installation has no hooks folder") from None
    script = hooks_dir / os.path.basename(argument)
    if (
        not os.path.isabs(argument)
        or os.path.basename(argument) not in SCRIPTS
        or Path(argument).resolve() != script.resolve()
    ):
        raise NotRunnable(f"the script is not in this installation's hooks folder {hooks_dir}")
    if not os.path.isabs(program) or Path(program).resolve() != Path(sys.executable).resolve():
        raise NotRunnable(f"the interpreter is not this installation's Python, {sys.executable}")
    # sys.executable, not the file's spelling of it: a symlink to the same binary in another folder would
    # bring that folder's pyvenv.cfg (and site-packages) along.
    return Invocation((sys.executable, str(script)), env)

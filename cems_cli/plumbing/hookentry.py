"""`cems-hook <handler>`: the hook command for settings files that are shared (a project's committed
`.claude/settings.json`), where an absolute interpreter path would only work on the machine that wrote it.

This runs before every tool call, so it imports nothing but `sys`: no typer, rich or pydantic, not even
`typing`. `hooks/_entry.py` (the bootstrap of the absolute-path hook scripts) dispatches through `dispatch`
too, so both commands load handlers and fail open the same way.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # `typing` costs milliseconds to import; annotations are strings anyway
if TYPE_CHECKING:
    from typing import NoReturn

# One module per name in cems_cli.hookhandlers. Spelled out rather than discovered: listing a package
# needs pkgutil/importlib machinery, and an unknown name must be refused before anything is imported.
HANDLERS = ("session_start", "user_prompt_submit", "pre_tool_use", "post_tool_use", "stop")
# Handlers that run before every tool call, where the interpreter's own work is a large part of the cost
# (measured with callgrind on a 500-rule snapshot: cyclic GC passes during the imports and the snapshot's
# parse, and the teardown at exit, are ~14M of the hook's ~74M instructions). They run with the cyclic
# collector off (a process of a few milliseconds frees everything at exit anyway) and exit without the
# teardown when nothing needs it (see `_exit`). The capture hooks keep the ordinary exit: they write the
# spool and start workers, where a skipped flush or join would lose data.
QUICK_HANDLERS = frozenset({"pre_tool_use"})


def drain_stdin() -> None:
    """Claude Code writes the payload and expects it read; leaving it unread makes its write fail."""
    try:
        sys.stdin.buffer.read()
    except Exception:
        pass


def dispatch(handler: str) -> NoReturn:
    """Run `cems_cli.hookhandlers.<handler>.main()` and exit with its code.

    A handler that cannot be imported (a broken install, a missing dependency) must not stop the agent:
    drain stdin and exit 0, which Claude Code reads as "no opinion". The handlers' own `main()` already
    fails open on anything that goes wrong while they run.
    """
    import os  # already loaded by the interpreter's startup: free

    quick = handler in QUICK_HANDLERS
    if quick:
        import gc  # built into the interpreter: free

        gc.disable()
    os.umask(0o077)  # cems_cli.paths.PRIVATE_UMASK: spool, logs, snapshots and the workers' files, owner-only
    try:
        module = __import__(f"cems_cli.hookhandlers.{handler}", fromlist=["main"])
    except Exception as error:
        drain_stdin()
        # On exit 0 stderr only reaches Claude Code's debug log, which is where someone would look.
        sys.stderr.write(f"cems-hook: cannot load handler {handler!r} ({error}); allowing\n")
        sys.exit(0)
    code = module.main()
    if quick:
        _exit(code)
    sys.exit(code)


def _exit(code: int) -> NoReturn:
    """Exit at once, skipping the interpreter's teardown (module clean-up and a last GC pass), when nothing
    is left for it to do: no thread but this one and nothing registered with `atexit`. The answer is
    flushed first; files the handler wrote were closed by their `with` blocks. Otherwise exit normally
    (a snapshot rebuild may have started the store's threads or registered clean-ups)."""
    import os

    threading = sys.modules.get("threading")
    atexit = sys.modules.get("atexit")
    if (threading is not None and threading.active_count() > 1) or (
        atexit is not None and atexit._ncallbacks() > 0
    ):
        sys.exit(code)
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
    os._exit(code)


def main(argv: list[str] | None = None) -> NoReturn:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1 or args[0] not in HANDLERS:
        drain_stdin()
        sys.stderr.write(f"usage: cems-hook {{{'|'.join(HANDLERS)}}}\n")
        # Exit 1: Claude Code does not block on it (only 2 blocks) but shows the user a hook error, so a
        # misspelt handler in a settings file is noticed instead of silently doing nothing.
        sys.exit(1)
    dispatch(args[0])


if __name__ == "__main__":
    main()

"""Simple commands as parsed, and the fast path for command lines that need no real parser.

Hand-written rather than tree-sitter on purpose: loading tree-sitter costs ~12 ms per process (its binding
imports `re` and `enum`), about as much as the whole PreToolUse hook, and most command lines an agent runs
(`git status`, `cd x && pytest -q | tail -5`, `git commit -m 'a; b'`) are words, quotes and separators
only. `plain_simples` splits exactly those, and returns None for anything else, which then goes to
`cems_cli.command.tree`. Imports nothing.
"""

from __future__ import annotations

# Characters that need the real parser: escapes, expansions, substitutions, redirections, comments,
# grouping, brace expansion, and the ASCII whitespace `str.split` splits on but the shell does not.
# Without them a command line is words, blanks, quoted strings whose contents are literal, and separators.
SHELL_SYNTAX = frozenset("\\$`#()<>{}\x0b\x0c\x1c\x1d\x1e\x1f")
PLAIN_MAX_CHARS = 16 * 1024

# Command names the model must read itself: wrappers it unwraps, programs that run a string as commands or
# change what runs (shells, eval, trap, git's -c and aliases, ssh, docker…), and reserved words. The same
# names as in `cems_cli.command._programs` (tests/unit/test_command_model.py keeps them in step).
NEEDS_MODEL = frozenset({
    # wrappers
    "sudo", "doas", "pkexec", "env", "nice", "nohup", "timeout", "command", "builtin", "exec", "time",
    "stdbuf", "setsid", "ionice", "chrt", "taskset", "caffeinate", "unbuffer", "xvfb-run", "chronic",
    "busybox", "toybox", "coproc", "xargs", "runuser", "flock", "strace", "ltrace", "nsenter", "unshare",
    "chroot", "systemd-run", "firejail", "fakeroot", "proot", "watch", "parallel", "dbus-run-session",
    # shells
    "sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "yash", "fish", "rbash", "csh", "tcsh",
    # reserved words
    "if", "then", "else", "elif", "fi", "do", "done", "while", "until", "{", "}", "!", "esac", "function",
    # commands that run strings or settings
    "su", "script", "eval", "source", ".", "trap", "alias", "find", "ssh", "docker", "podman",
    "nerdctl", "docker-compose", "podman-compose", "kubectl", "export", "declare", "typeset", "local",
    "readonly",
})


# Commands that write or remove the files they are given (`cems_cli.command._writes`; the test of the
# fast path keeps the two in step). A plain line naming none of them writes nothing: redirections are not
# plain, and inline code that may write goes to the model (SHELL_OUT_MARKERS).
WRITERS = frozenset({
    "tee", "sed", "perl", "ruby", "cp", "mv", "install", "ln", "rsync", "scp", "dd", "truncate", "shred",
    "touch", "rm", "unlink", "rmdir", "chmod", "chown", "curl", "wget", "patch",
})


# Interpreters whose inline code (`python -c`, `perl -e`, `node -e`, `awk '…'`) may run a shell command or
# remove a tree; the model reads a line with one of them only when a word holds one of these calls.
INTERPRETERS = frozenset({"python", "python3", "python2", "perl", "ruby", "node", "nodejs", "php", "awk",
                          "gawk", "mawk", "nawk", "bun", "deno"})
SHELL_OUT_MARKERS = ("system", "popen", "subprocess", "exec", "spawn", "rmtree", "rmSync", "rimraf", "`",
                     "qx", "shell_exec", "passthru", "os.remove", "unlink", "Popen")
# Commands that give a program another name for the rest of the line (`cp /bin/rm ~/bin/d`, `hash -p`).
RENAMERS = frozenset({"cp", "ln", "install", "hash"})


class Simple:
    """One simple command as parsed: its words after the static expansions, which of them are fully
    static, its `NAME=value` prefixes and redirections, the static texts fed to its stdin (here-strings,
    here-documents, `echo '…' |`; None for output only known at run time), where it stands in its pipeline,
    and how deep in substitutions or `sh -c` strings it was found."""

    __slots__ = ("words", "static", "assignments", "redirects", "stdin", "pipe", "depth", "reasons")

    def __init__(self, words: list[str], depth: int = 0, pipe: int = 0) -> None:
        self.words = words
        self.static = [True] * len(words)
        self.assignments: list[tuple[str, str | None]] = []
        self.redirects: list[tuple[str, str | None]] = []
        self.stdin: list[str | None] = []
        self.pipe = pipe
        self.depth = depth
        self.reasons: list[str] = []  # what in it cannot be known before it runs

    def __repr__(self) -> str:
        return f"Simple({self.words!r}, pipe={self.pipe}, depth={self.depth})"


def _is_assignment(word: str) -> bool:
    name, eq, _ = word.partition("=")
    if name.endswith("+"):
        name = name[:-1]
    return bool(eq) and name.isascii() and name.isidentifier()


def plain_simples(text: str) -> list[Simple] | None:
    """The simple commands of `text` when it needs no real parser, else None."""
    if len(text) > PLAIN_MAX_CHARS or not text.isascii() or not SHELL_SYNTAX.isdisjoint(text):
        return None
    simples: list[Simple] = []
    words: list[str] = []
    word: list[str] = []
    in_word = False
    pipe = 0
    i, size = 0, len(text)

    def end_word() -> None:
        nonlocal in_word
        if in_word:
            words.append("".join(word))
            word.clear()
            in_word = False

    def end_command(next_pipe: int) -> None:
        nonlocal words, pipe
        end_word()
        if words:
            simple = Simple([], pipe=pipe)
            # `A=1 B=2 cmd`: the assignments before the name are the command's environment
            start = 0
            while start < len(words) and _is_assignment(words[start]):
                name, _, value = words[start].partition("=")
                simple.assignments.append((name.rstrip("+"), value))
                start += 1
            simple.words = words[start:]
            simple.static = [True] * len(simple.words)
            simples.append(simple)
        elif next_pipe and pipe == 0:
            next_pipe = 0  # `| x` with nothing before it: a syntax error, read it as a new command
        words = []
        pipe = next_pipe

    while i < size:
        char = text[i]
        if char in " \t\r":
            end_word()
            i += 1
        elif char in "'\"":
            close = text.find(char, i + 1)
            if close < 0:
                return None  # an unclosed quote: let the real parser decide
            word.append(text[i + 1:close])
            in_word = True
            i = close + 1
        elif char in ";&|\n":
            if char == "|" and text.startswith("||", i):
                end_command(0)
                i += 2
            elif char == "|":
                end_command(pipe + 1)
                i += 2 if text.startswith("|&", i) else 1
            else:
                end_command(0)
                i += 1
        else:
            start = i
            while i < size and text[i] not in " \t\r'\";&|\n":
                i += 1
            word.append(text[start:i])
            in_word = True
    end_command(0)
    return simples


def fast_commands(text: str) -> list[list[str]] | None:
    """The commands of a plain line whose commands the model would return as they are (no wrapper, no
    assignment, no command name with a directory or a pattern), exactly as `model.analyse` gives them;
    None when the model must read the line."""
    simples = plain_simples(text)
    if simples is None:
        return None
    commands: list[list[str]] = []
    if len(simples) > 1 and any(simple.words[:1] and simple.words[0] in RENAMERS for simple in simples):
        return None  # `cp /bin/rm d; d -rf /`: the model follows the new name
    for simple in simples:
        if simple.assignments:
            return None
        name = simple.words[0]
        if name.rstrip("0123456789.") in INTERPRETERS and any(
                marker in word for word in simple.words[1:] for marker in SHELL_OUT_MARKERS):
            return None  # inline code that may shell out: the model reads it
        if name in NEEDS_MODEL or "/" in name or "=" in name or not name.isprintable() or any(
                char in name for char in "*?[~"):
            return None
        # `git status` is as it is; git's own options (`-c alias.p=…`, `-C dir`) and `git config` are not
        if name == "git" and len(simple.words) > 1 and (
                simple.words[1][:1] == "-" or simple.words[1] == "config"):
            return None
        commands.append(simple.words)
    return commands

"""What a Bash command line runs, which files it writes, and what about it cannot be known before it runs.

`analyse(text)` returns an `Analysis`:
* `commands`: every command the line runs, as argument lists, each wrapper layer too
  (`sudo -u root rm -rf /` gives the `sudo …` words, then `rm -rf /`), command names without their
  directory, `git`'s own options dropped and its `-c alias.*` applied (`git -c alias.p='push -f' p` is
  `git push -f`). Strings that another program runs as shell commands are parsed in turn: `bash -c '…'`,
  `su -c`, `ssh host …`, `docker exec c …`, `watch …`, `trap '…' EXIT`, `eval` of static text,
  `echo '…' | bash`, `git -c core.pager='…'`, `GIT_PAGER='…'`, `find -exec`, `xargs`, `parallel`…
* `unchecked`: why part of the line cannot be checked before it runs (`eval "$x"`, `curl … | sh`,
  `source <(…)`, a command name from `$(…)` or an unknown variable, a pager from `$(…)`), [] when all of it
  can. The rules treat such a line as possibly matching a block rule.
* `writes`: files the line writes (`>`, `>>`, `tee`, `sed -i`, `cp`/`mv`/`install`/`ln` destinations,
  `dd of=`, `truncate`, `rm`…), for rules on Edit.

`capture_commands(text)` is the same model seen by capture: the top-level commands, with wrappers that do not
change what runs (`timeout 600`, `nice -n 10`, `sudo`, `env A=1`) removed, and each one's pipeline position.

Imports nothing at module level; `cems_cli.command.tree` (tree-sitter) only for lines the fast path in
`cems_cli.command.plain` cannot split.
"""

from __future__ import annotations

from cems_cli.command.plain import INTERPRETERS, SHELL_OUT_MARKERS, Simple, plain_simples

MAX_DEPTH = 6

# Commands that run the rest of their arguments as a command:
# (short options that take a value, long options that take one, operands before the command, transparent).
# Transparent wrappers change how a command runs, not what it is: capture looks past them.
# `NAME=value` words before the command (`env A=1 cmd`, `sudo A=1 cmd`) are skipped for all of them.
_NONE: frozenset[str] = frozenset()
_WRAPPERS: dict[str, tuple[str, frozenset[str], int, bool]] = {
    "sudo": ("CDghpRrTtUu", frozenset({"--chdir", "--close-from", "--group", "--host", "--prompt", "--chroot",
                                       "--role", "--type", "--command-timeout", "--other-user", "--user"}),
             0, True),
    "doas": ("Cu", _NONE, 0, True),
    "pkexec": ("", frozenset({"--user"}), 0, True),
    "env": ("uCPS", frozenset({"--unset", "--chdir", "--split-string"}), 0, True),
    "nice": ("n", frozenset({"--adjustment"}), 0, True),
    "nohup": ("", _NONE, 0, True),
    "timeout": ("sk", frozenset({"--signal", "--kill-after"}), 1, True),
    "command": ("", _NONE, 0, True),
    "builtin": ("", _NONE, 0, True),
    "exec": ("a", _NONE, 0, True),
    "time": ("fo", frozenset({"--format", "--output"}), 0, True),
    "stdbuf": ("ioe", frozenset({"--input", "--output", "--error"}), 0, True),
    "setsid": ("", _NONE, 0, True),
    "ionice": ("cnpPu", frozenset({"--class", "--classdata", "--pid", "--pgid", "--uid"}), 0, True),
    "chrt": ("TPD", _NONE, 1, True),
    "taskset": ("", _NONE, 1, True),
    "caffeinate": ("tw", _NONE, 0, True),
    "unbuffer": ("", _NONE, 0, True),
    "xvfb-run": ("nsfe", frozenset({"--server-num", "--server-args", "--auth-file", "--error-file"}),
                 0, True),
    "chronic": ("", _NONE, 0, True),
    "busybox": ("", _NONE, 0, False),
    "toybox": ("", _NONE, 0, False),
    "coproc": ("", _NONE, 0, False),
    "xargs": ("adEILnPs", frozenset({"--arg-file", "--delimiter", "--max-args", "--max-procs", "--max-chars",
                                     "--max-lines", "--process-slot-var", "--eof", "--replace"}), 0, False),
    "runuser": ("ugGw", frozenset({"--user", "--group", "--supp-group", "--shell",
                                   "--whitelist-environment"}), 0, False),
    "flock": ("wEc", frozenset({"--timeout", "--wait", "--conflict-exit-code", "--command"}), 1, False),
    "strace": ("abeEIoOpPsSuUX", frozenset({"--output", "--attach", "--user", "--string-limit", "--trace",
                                            "--signal", "--status", "--env", "--trace-path"}), 0, False),
    "ltrace": ("aAeEfnoplsuwxLDT", frozenset({"--output", "--library", "--align", "--indent"}), 0, False),
    "nsenter": ("tSG", frozenset({"--target", "--setuid", "--setgid", "--root", "--wd"}), 0, False),
    "unshare": ("R", frozenset({"--root", "--wd", "--setuid", "--setgid", "--map-user", "--map-group",
                                "--propagation", "--setgroups"}), 0, False),
    "chroot": ("", frozenset({"--userspec", "--groups"}), 1, False),
    "systemd-run": ("uEpMHsS", frozenset({"--unit", "--property", "--description", "--slice", "--setenv",
                                          "--uid", "--gid", "--working-directory", "--machine", "--host",
                                          "--nice", "--on-calendar", "--on-active", "--timer-property",
                                          "--service-type"}), 0, False),
    "firejail": ("", _NONE, 0, False),
    "fakeroot": ("sil", _NONE, 0, False),
    "proot": ("rbwu", frozenset({"--rootfs", "--bind", "--cwd"}), 0, False),
    "watch": ("nd", frozenset({"--interval", "--differences"}), 0, False),
    "parallel": ("jSIE", frozenset({"--jobs", "--sshlogin", "--joblog", "--results", "--delay", "--timeout",
                                    "--retries", "--tmpdir", "--workdir"}), 0, False),
    "dbus-run-session": ("", frozenset({"--config-file", "--dbus-daemon"}), 0, False),
}
# Shells whose `-c` string, script file or stdin they run.
_SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "yash", "fish", "rbash", "csh",
                     "tcsh"})
# Reserved words the fast path leaves in front of a command: `then rm …`, `if ! rm …`, `{ rm …`.
_KEYWORDS = frozenset({"if", "then", "else", "elif", "fi", "do", "done", "while", "until", "{", "}", "!",
                       "esac"})
# `git`'s options before the subcommand that take a value (`git -C dir push` is a `git push`).
_GIT_SHORT_VALUES = "Cc"
_GIT_LONG_VALUES = frozenset({"--git-dir", "--work-tree", "--namespace", "--super-prefix", "--config-env",
                              "--exec-path"})
# git configuration whose value is a shell command git runs (lower case; `*` stands for one section name).
_GIT_COMMAND_KEYS = frozenset({"core.pager", "core.editor", "core.sshcommand", "core.fsmonitor",
                               "core.askpass", "sequence.editor", "diff.external", "credential.helper",
                               "gpg.program", "pager.*", "diff.*.textconv", "diff.*.command",
                               "filter.*.clean", "filter.*.smudge", "filter.*.process", "merge.*.driver",
                               "uploadpack.packobjectshook", "remote.*.receivepack", "remote.*.uploadpack",
                               "web.browser", "interactive.difffilter", "sendemail.sendmailcmd"})
# Environment variables whose value a program runs as a shell command.
_COMMAND_VARIABLES = frozenset({"GIT_PAGER", "PAGER", "MANPAGER", "GIT_EDITOR", "EDITOR", "VISUAL",
                                "GIT_SEQUENCE_EDITOR", "GIT_SSH_COMMAND", "GIT_SSH", "GIT_EXTERNAL_DIFF",
                                "GIT_ASKPASS", "SSH_ASKPASS", "BROWSER", "LESSOPEN", "LESSCLOSE",
                                "PROMPT_COMMAND", "BASH_ENV", "ENV", "SUDO_ASKPASS", "DIFF_VIEWER"})
# Options of `ssh` that take a value; its first operand is the host, the rest a command line.
_SSH_SHORT_VALUES = "BbcDEeFIiJLlmOoPpQRSWw"
_DOCKER_LIKE = frozenset({"docker", "podman", "nerdctl", "docker-compose", "podman-compose"})
_DOCKER_LONG_VALUES = frozenset({
    "--add-host", "--attach", "--blkio-weight", "--cap-add", "--cap-drop", "--cgroup-parent", "--cidfile",
    "--cpu-period", "--cpu-quota", "--cpu-shares", "--cpus", "--cpuset-cpus", "--device", "--dns",
    "--entrypoint", "--env", "--env-file", "--expose", "--gpus", "--group-add", "--health-cmd", "--hostname",
    "--ip", "--ipc", "--label", "--label-file", "--link", "--log-driver", "--log-opt", "--mac-address",
    "--memory", "--memory-swap", "--mount", "--name", "--network", "--net", "--network-alias", "--pid",
    "--platform", "--publish", "--pull", "--restart", "--runtime", "--security-opt", "--shm-size",
    "--stop-signal", "--stop-timeout", "--storage-opt", "--sysctl", "--tmpfs", "--ulimit", "--user",
    "--userns", "--uts", "--volume", "--volumes-from", "--workdir", "--detach-keys", "--pod", "--arch",
})
_DOCKER_SHORT_VALUES = "aceEhlmpuvw"

_STDIN_FILES = ("/dev/stdin", "/dev/fd/", "/proc/self/fd")
_PARALLEL_SEPARATORS = frozenset({":::", "::::", ":::+", "::::+"})
# The words `echo`/`printf` print, for `echo '…' | bash`: static output, parsed as the script it is.
_PRINTERS = frozenset({"echo", "printf"})


class Analysis:
    __slots__ = ("commands", "unchecked", "writes", "parsed", "renames", "scripts")

    def __init__(self) -> None:
        self.commands: list[list[str]] = []
        # Programs given another name earlier on the line (`cp /bin/rm ./d`, `hash -p /bin/rm d`): the name
        # (as written, and normalised) → the program it runs.
        self.renames: dict[str, str] = {}
        # Files written earlier on the line (`echo '…' > x.sh`, `cat > x.sh <<'E'`): their text when static,
        # None when only known at run time; running one (`sh x.sh`, `. x.sh`, `./x.sh`) runs that text.
        self.scripts: dict[str, str | None] = {}
        self.unchecked: list[str] = []
        self.writes: list[str] = []
        self.parsed = True  # False: the line was read only in part (a syntax error somewhere)

    def __repr__(self) -> str:
        return f"Analysis(commands={self.commands!r}, unchecked={self.unchecked!r}, writes={self.writes!r})"


# --- parsing ------------------------------------------------------------------------------------------------


def simples(text: str, depth: int = 0) -> tuple[list[Simple], bool]:
    """The simple commands of `text`: the fast path when it is enough, else tree-sitter."""
    found = plain_simples(text)
    if found is not None:
        for simple in found:
            simple.depth = depth
        return found, True
    from cems_cli.command.tree import tree_simples

    return tree_simples(text, depth)


def analyse(text: str) -> Analysis:
    analysis = Analysis()
    _analyse_text(text, 0, analysis)
    analysis.unchecked = list(dict.fromkeys(analysis.unchecked))
    analysis.writes = list(dict.fromkeys(analysis.writes))
    return analysis


def _analyse_text(text: str, depth: int, analysis: Analysis) -> None:
    try:
        found, clean = simples(text, depth)
    except ImportError:
        analysis.unchecked.append("the shell parser (tree-sitter-bash) is not installed")
        analysis.parsed = False
        return
    if not clean:
        from cems_cli.command.tree import MAX_PARSE_CHARS, MAX_PIPES

        analysis.parsed = False
        if len(text) > MAX_PARSE_CHARS:
            reason = f"the command line is longer than the {MAX_PARSE_CHARS // 1024} KiB that are parsed"
        elif text.count("|") > MAX_PIPES:
            reason = f"the command line has more than {MAX_PIPES} pipes, more than are parsed"
        else:
            reason = "part of the command line does not parse as Bash"
        analysis.unchecked.append(reason)
    for index, simple in enumerate(found):
        _analyse_simple(simple, _producer(found, index), analysis)


def _producer(found: list[Simple], index: int) -> Simple | None:
    """The command whose output feeds `found[index]` through a pipe, if any."""
    simple = found[index]
    if simple.pipe == 0:
        return None
    for other in reversed(found[:index]):
        if other.depth == simple.depth and other.pipe == simple.pipe - 1:
            return other
    return None


def _printed(simple: Simple | None) -> str | None:
    """What a producer writes to the pipe, when static: `echo '…'`, `printf '…'`, `cat <<'EOF'`."""
    if simple is None or not simple.words or not all(simple.static):
        return None
    name = basename(simple.words[0])
    if name in _PRINTERS:
        words = simple.words[1:]
        while words and words[0].startswith("-") and name == "echo" and set(words[0][1:]) <= set("neE"):
            words = words[1:]
        return " ".join(words).replace("\\n", "\n") if name == "printf" else " ".join(words)
    if name == "cat" and len(simple.words) == 1 and simple.stdin and all(s is not None for s in simple.stdin):
        return "\n".join(s for s in simple.stdin if s is not None)
    return None


def basename(word: str) -> str:
    """`/bin/rm` and `./rm` run `rm`; a word with a substitution is left whole."""
    if "/" not in word or "$" in word or "`" in word:
        return word
    return word.rpartition("/")[2] or word


def _is_assignment(word: str) -> bool:
    name, eq, _ = word.partition("=")
    if name.endswith("+"):
        name = name[:-1]
    return bool(eq) and name.isascii() and name.isidentifier()


def skip_options(argv: list[str], start: int, short_values: str, long_values: frozenset[str]) -> int:
    """Index of the first operand at or after `start`: options skipped, with the values of those that take
    one (`-u root`, `--user root`; attached values `-uroot`, `--user=root` need no skipping), and `--`."""
    i, size = start, len(argv)
    while i < size:
        word = argv[i]
        if word == "--":
            return i + 1
        if len(word) < 2 or word[0] != "-":
            return i
        i += 1
        if word[1] == "-":
            if "=" not in word and word in long_values:
                i += 1
            continue
        for index in range(1, len(word)):
            if word[index] in short_values:
                if index == len(word) - 1:
                    i += 1
                break
    return i


def option_value(argv: list[str], start: int, end: int, short: str, long: str) -> str | None:
    """The value of option `-short`/`--long` among argv[start:end], if given (last one wins)."""
    value = None
    i = start
    while i < end:
        word = argv[i]
        if long and word == long and i + 1 < end:
            value = argv[i + 1]
        elif long and word.startswith(long + "="):
            value = word[len(long) + 1:]
        elif short and len(word) > 1 and word[0] == "-" and word[1] != "-" and short in word:
            at = word.index(short)
            value = word[at + 1:] or (argv[i + 1] if i + 1 < end else None)
        i += 1
    return value


# --- one simple command ------------------------------------------------------------------------------------


def _analyse_simple(simple: Simple, producer: Simple | None, analysis: Analysis) -> None:
    depth = simple.depth
    for operator, target in simple.redirects:
        if operator.startswith((">", "&>")) or operator == "<>":
            if target is not None:
                analysis.writes.append(target)
                _remember_script(target, _printed(simple) if operator in (">", ">>", ">|") else None,
                                 operator == ">>", analysis)
    if simple.words and basename(simple.words[0]) == "tee" and all(simple.static):
        text = _printed(producer) if simple.pipe > 0 else None
        for target in _operands(simple.words):
            _remember_script(target, text, "-a" in simple.words or "--append" in simple.words, analysis)
    for name, value in simple.assignments:
        if name in _COMMAND_VARIABLES:
            _run_string(value, depth, analysis, f"${name} is set to a command only known at run time")
    if not simple.words:
        return
    stdin = list(simple.stdin)
    if simple.pipe > 0:
        stdin.append(_printed(producer))
    _unwrap(simple.words, simple.static, stdin, depth, analysis)


def _script_key(path: str) -> str:
    import posixpath

    return posixpath.normpath(path)


def _remember_script(target: str, text: str | None, append: bool, analysis: Analysis) -> None:
    key = _script_key(target)
    if append and key in analysis.scripts:
        before = analysis.scripts[key]
        text = None if before is None or text is None else before + "\n" + text
    analysis.scripts[key] = text


def _run_script(path: str, depth: int, analysis: Analysis) -> bool:
    """Run the text of a file written earlier on this line, if it is one; True when it was."""
    if not analysis.scripts:
        return False
    key = _script_key(path)
    if key not in analysis.scripts:
        return False
    _run_string(analysis.scripts.pop(key), depth, analysis,  # popped: a script running itself ends here
                "runs a script written on this line with text only known at run time")
    return True


def _run_string(script: str | None, depth: int, analysis: Analysis, unknown: str) -> None:
    """A string some program runs as shell commands: parsed when static, else the line cannot be checked."""
    if script is None:
        analysis.unchecked.append(unknown)
    elif depth < MAX_DEPTH:
        _analyse_text(script, depth + 1, analysis)
    else:
        analysis.unchecked.append("commands nested too deep to follow")


def _name_reason(word: str) -> str:
    if "$(" in word or "`" in word:
        return "the command name comes from a command substitution"
    if "$" in word:
        return "the command name comes from a variable only known at run time"
    return "the command name is only known at run time"


def _unwrap(argv: list[str], static: list[bool], stdin: list[str | None], depth: int,
            analysis: Analysis) -> None:
    start = 0
    static = list(static)
    while start < len(argv):
        word = argv[start]
        if _is_assignment(word):  # `then A=1 cmd`, `env A=1 cmd`, `sudo A=1 cmd`
            name, _, value = word.partition("=")
            if name in _COMMAND_VARIABLES:
                _run_string(value if static[start] else None, depth, analysis,
                            f"${name} is set to a command only known at run time")
            start += 1
            continue
        if not static[start]:
            analysis.unchecked.append(_name_reason(word))
            return
        if "/" in word and _run_script(word, depth, analysis):  # `./x.sh` written earlier on the line
            return
        name = basename(word)
        if name in _KEYWORDS and (start + 1 < len(argv)):
            start += 1
            continue
        if name == "function":
            start += 2
            continue
        if name not in ("[", "[[") and (any(char in name for char in "*?[") or name.startswith("~")):
            analysis.unchecked.append("the command name is a file name pattern")
            return
        renamed = _renamed(word, analysis) if analysis.renames else None
        if renamed == _UNKNOWN_PROGRAM:
            analysis.unchecked.append("the command runs a program copied or linked from a name only known "
                                      "at run time")
            return
        if renamed is not None and renamed != name:
            analysis.commands.append([name, *argv[start + 1:]])  # as written, for rules that name it
            name = renamed
        argv, static = [name, *argv[start + 1:]], [True, *static[start + 1:]]
        start = 0
        if name == "git":
            argv, static = _git(argv, static, depth, analysis)
        analysis.commands.append(argv)
        _writes(argv, analysis)
        wrapper = _WRAPPERS.get(name)
        if wrapper is not None:
            short_values, long_values, operands, _ = wrapper
            start = skip_options(argv, 1, short_values, long_values)
            if name == "command" and any(w in ("-v", "-V") for w in argv[1:start]):
                return  # `command -v rm` only says where rm is
            if name == "coproc" and start + 1 < len(argv) and argv[start + 1] in ("{", "("):
                start += 1  # `coproc NAME { rm -rf /; }`: a compound command may have a name
            if name == "xargs" and start < len(argv) and basename(argv[start]) in _SHELLS:
                _xargs_shell(argv, start, static, analysis)
            if name == "env":
                split = option_value(argv, 1, start, "S", "--split-string")
                if split is not None and depth < MAX_DEPTH:  # env -S 'rm -rf' /: the string is split
                    found, _ = simples(split, depth + 1)
                    words = [w for s in found for w in s.words]
                    argv, static = [*words, *argv[start:]], [True] * len(words) + static[start:]
                    start, depth = 0, depth + 1
                    continue
                if start < len(argv) and argv[start] == "-":
                    start += 1
            elif name in ("flock", "runuser"):
                script = option_value(argv, 1, start, "c", "--command")
                if script is not None:
                    _run_string(script, depth, analysis, "")
                    return
                if name == "runuser" and start < len(argv) and not argv[start].startswith("-") and \
                        "-u" not in argv[1:start] and "--user" not in " ".join(argv[1:start]):
                    start += 1  # `runuser USER [-c …]`: the user is an operand
                    rest = argv[start:]
                    script = option_value(rest, 0, len(rest), "c", "--command")
                    if script is not None:
                        _run_string(script, depth, analysis, "")
                    return
            elif name == "parallel":
                _parallel(argv, start, depth, analysis)
                return
            start += operands
            if name == "watch" and start < len(argv):  # watch runs its words through `sh -c`
                _run_string(" ".join(argv[start:]) if all(static[start:]) else None, depth, analysis,
                            "watch runs a command only known at run time")
                return
            if start >= len(argv):
                return
            if depth >= MAX_DEPTH:
                analysis.unchecked.append("commands nested too deep to follow")
                return
            depth += 1
            continue
        if depth >= MAX_DEPTH:
            return
        _special(name, argv, static, stdin, depth, analysis)
        return


_UNKNOWN_PROGRAM = "\0"


def _renamed(word: str, analysis: Analysis) -> str | None:
    import posixpath

    return analysis.renames.get(word) or analysis.renames.get(posixpath.normpath(word))


def _rename(name: str, program: str, analysis: Analysis) -> None:
    """`name` runs `program` from here on (`ln -s /bin/rm /tmp/d; /tmp/d -rf /` is `rm -rf /`)."""
    import posixpath

    program = basename(program)
    if any(char in program for char in "$`*?["):
        program = _UNKNOWN_PROGRAM  # `ln -s $(which rm) d`, `cp /bin/r? d`: known only at run time
    if name and program:
        analysis.renames[name] = program
        analysis.renames[posixpath.normpath(name)] = program
        if "/" in name:  # a copy into a folder on PATH runs by its bare name too
            analysis.renames.setdefault(posixpath.basename(name), program)


def _xargs_shell(argv: list[str], start: int, static: list[bool], analysis: Analysis) -> None:
    """`… | xargs sh` runs script files named by its input, and `xargs -I{} sh -c '{}'` runs the input
    itself: words only known at run time become the script."""
    replace = option_value(argv, 1, start, "I", "--replace")
    if replace is None and any(w == "-i" or w.startswith("--replace") for w in argv[1:start]):
        replace = "{}"
    shell = argv[start:]
    script_at = next((i + 1 for i, w in enumerate(shell[1:], start=1)
                      if len(w) > 1 and w[0] == "-" and w[1] != "-" and "c" in w), None)
    if script_at is None or script_at >= len(shell):
        analysis.unchecked.append("xargs runs a shell on input only known at run time")
    elif replace and replace in shell[script_at]:
        analysis.unchecked.append("xargs puts input only known at run time into a shell script")


def _special(name: str, argv: list[str], static: list[bool], stdin: list[str | None], depth: int,
             analysis: Analysis) -> None:
    """Commands that run a string or a part of their arguments as commands."""
    if name in _SHELLS:
        _shell(argv, static, stdin, depth, analysis)
    elif name in ("su", "script"):
        script = option_value(argv, 1, len(argv), "c", "--command")
        if script is not None or "-c" in argv:
            _run_string(script if all(static) else None, depth, analysis,
                        f"{name} -c runs a command only known at run time")
    elif name.rstrip("0123456789.") in INTERPRETERS and len(argv) > 1:
        _inline_code(name.rstrip("0123456789."), argv, static, depth, analysis)
    elif name == "hash" and len(argv) > 2:  # `hash -p /bin/rm d`: `d` runs rm
        program = option_value(argv, 1, len(argv), "p", "")
        operands = _operands(argv, "p")
        if program is not None:
            for alias in operands:
                _rename(alias, program, analysis)
    elif name == "eval":
        _run_string(" ".join(argv[1:]) if all(static) else None, depth, analysis,
                    "eval runs text only known at run time")
    elif name in ("source", "."):
        target = argv[1] if len(argv) > 1 else ""
        # `source venv/bin/activate` runs a file, like `./script.sh`; a substitution or stdin is unknowable
        if len(argv) > 1 and (not static[1] or target.startswith(_STDIN_FILES)):
            analysis.unchecked.append(f"{name} reads commands only known at run time")
        elif len(argv) > 1:
            _run_script(target, depth, analysis)
    elif name == "trap" and len(argv) > 2 and argv[1] not in ("-p", "-l"):
        action = argv[2] if argv[1] == "--" and len(argv) > 3 else argv[1]
        index = argv.index(action)
        _run_string(action if static[index] else None, depth, analysis,
                    "trap runs a command only known at run time")
    elif name in ("export", "declare", "typeset", "local", "readonly"):
        for index, word in enumerate(argv[1:], start=1):
            variable, eq, value = word.partition("=")
            if eq and variable in _COMMAND_VARIABLES:
                _run_string(value if static[index] else None, depth, analysis,
                            f"${variable} is set to a command only known at run time")
    elif name == "alias":
        for word in argv[1:]:
            alias, eq, value = word.partition("=")
            if eq:
                _run_string(value, depth, analysis, "")
    elif name == "find":
        _find_exec(argv, static, depth, analysis)
    elif name == "ssh":
        start = skip_options(argv, 1, _SSH_SHORT_VALUES, _NONE) + 1  # past the host
        if start < len(argv):
            _run_string(" ".join(argv[start:]) if all(static[start:]) else None, depth, analysis,
                        "ssh runs a command only known at run time")
    elif name in _DOCKER_LIKE:
        _container(argv, static, depth, analysis)
    elif name == "kubectl" and "exec" in argv[1:3] and "--" in argv:
        start = argv.index("--") + 1
        if start < len(argv):
            _unwrap(argv[start:], static[start:], [], depth + 1, analysis)


def _shell(argv: list[str], static: list[bool], stdin: list[str | None], depth: int,
           analysis: Analysis) -> None:
    """`bash -c 'script'`, `sh -ec '…'`, `bash <<< '…'`, `echo '…' | sh`: the script is parsed as commands."""
    i, size, has_c, reads_stdin = 1, len(argv), False, False
    while i < size:
        word = argv[i]
        if word in ("--", "-"):
            i += 1
            break
        if len(word) < 2 or word[0] not in "-+":
            break
        i += 1
        if word in ("-o", "+o", "-O", "+O", "--rcfile", "--init-file"):
            i += 1
        elif word[1] != "-":
            has_c = has_c or "c" in word
            reads_stdin = reads_stdin or "s" in word
    if has_c:
        if i < size:
            _run_string(argv[i] if static[i] else None, depth, analysis,
                        f"{argv[0]} -c runs a command only known at run time")
    elif i < size and not reads_stdin and static[i]:  # `sh x.sh`: a script written earlier on the line?
        _run_script(argv[i], depth, analysis)
    elif i >= size or reads_stdin:  # no script file: the shell reads its commands from stdin
        for text in stdin:
            _run_string(text, depth, analysis,
                        f"{argv[0]} reads commands from a pipe or file only known at run time")


def _parallel(argv: list[str], start: int, depth: int, analysis: Analysis) -> None:
    """`parallel CMD ::: args` runs CMD with each arg; `parallel ::: 'cmd1' 'cmd2'` runs each as a command."""
    separator = next((i for i in range(start, len(argv)) if argv[i] in _PARALLEL_SEPARATORS), len(argv))
    if separator > start:
        command = " ".join(argv[start:separator])
        arguments = [w for w in argv[separator + 1:] if not w.startswith(":::")]
        for argument in arguments or [""]:  # each argument is appended to the command (or fills `{}`)
            _run_string(command.replace("{}", argument) if "{}" in command else f"{command} {argument}",
                        depth, analysis, "")
    else:
        for word in argv[separator + 1:]:
            if word not in _PARALLEL_SEPARATORS:
                _run_string(word, depth, analysis, "")
    if separator < len(argv) and argv[separator].startswith("::::"):
        analysis.unchecked.append("parallel reads commands from a file")


# Options that take the program text inline, per interpreter (awk: its first operand).
_INLINE_OPTIONS = {"python": ("-c",), "python2": ("-c",), "python3": ("-c",), "perl": ("-e", "-E"),
                   "ruby": ("-e",), "node": ("-e", "--eval", "-p", "--print"), "nodejs": ("-e", "--eval"),
                   "php": ("-r",), "bun": ("-e", "--eval"), "deno": ("eval",)}
# Calls that run their string argument through a shell (or spawn it as a command line).
# (`os.system(` is found as `system(`; perl and ruby also call `system "…"` without parentheses.)
_SHELL_CALLS = ("system(", "system ", "popen(", "subprocess.run(", "subprocess.call(", "check_call(",
                "check_output(", "getoutput(", "getstatusoutput(", "Popen(", "execSync(", "exec(",
                "spawnSync(", "spawn(", "shell_exec(", "passthru(", "qx(", "qx{", "%x(", "%x{")
# Calls that remove a tree, read as `rm -r -f PATH` so `rm -rf*` rules see them.
_TREE_REMOVALS = ("rmtree(", "rmSync(", "rimraf(", "rimraf.sync(", "remove_dir_all(")


def _inline_code(name: str, argv: list[str], static: list[bool], depth: int, analysis: Analysis) -> None:
    """`python -c 'import os; os.system("rm -rf /")'`, `perl -e 'system "…"'`, `node -e 'execSync("…")'`:
    the string a shell-out call is given is parsed as commands, and a tree removal reads as `rm -r -f`.
    Hand-written scan of the code's string literals, no parser per language: code that builds the string
    (`"r" + "m"`) or passes a variable is only known at run time, and says so."""
    if name in ("awk", "gawk", "mawk", "nawk"):
        index = skip_options(argv, 1, "fvF", frozenset())
        code_at = index if index < len(argv) and "-f" not in argv[1:index] else -1
    else:
        options = _INLINE_OPTIONS.get(name, ())
        code_at = next((i + 1 for i, word in enumerate(argv[1:-1], start=1) if word in options or (
            word[:1] == "-" and word[1:2] not in ("-", "") and "-" + word[-1] in options)), -1)  # `perl -ne`
    if code_at < 0 or code_at >= len(argv):
        return
    code = argv[code_at]
    if not any(marker in code for marker in SHELL_OUT_MARKERS):
        return
    if not static[code_at]:
        analysis.unchecked.append(f"{name} runs code only known at run time")
        return
    for call in _SHELL_CALLS:
        _literal_calls(code, call, name, depth, analysis, shell=True)
    for call in _TREE_REMOVALS:
        _literal_calls(code, call, name, depth, analysis, shell=False)
    if name in ("perl", "ruby") and "`" in code:
        for piece in code.split("`")[1::2]:
            _run_string(piece, depth, analysis, "")


def _literal_calls(code: str, call: str, name: str, depth: int, analysis: Analysis, shell: bool) -> None:
    at = code.find(call)
    while at >= 0:
        if at and (code[at - 1].isalnum() or code[at - 1] == "_") and not call[0].isupper() and \
                "." not in call[:-1]:
            at = code.find(call, at + 1)  # `my_system(`: another function
            continue
        rest = code[at + len(call):].lstrip()
        literal = _leading_literal(rest)
        if literal is None:
            analysis.unchecked.append(f"{name} runs a command built at run time ({call.rstrip('({')}…)")
        elif shell:
            _run_string(literal, depth, analysis, "")
        else:
            analysis.commands.append(["rm", "-r", "-f", literal])
            analysis.writes.append(literal)
        at = code.find(call, at + 1)


def _leading_literal(text: str) -> str | None:
    """The string literal `text` starts with ('…', "…", or a list of them, joined by blanks), when it is
    not continued by concatenation or formatting; None otherwise."""
    if text[:1] == "[":
        words: list[str] = []
        rest = text[1:].lstrip()
        while rest[:1] in ("'", '"'):
            close = rest.find(rest[0], 1)
            if close < 0:
                return None
            words.append(rest[1:close])
            rest = rest[close + 1:].lstrip()
            if rest[:1] == ",":
                rest = rest[1:].lstrip()
        return " ".join(words) if rest[:1] == "]" and words else None
    if text[:1] not in ("'", '"'):
        return None
    close = text.find(text[0], 1)
    if close < 0 or "\\" in text[1:close]:
        return None
    after = text[close + 1:].lstrip()
    if after[:1] in ("+", ".", "%"):  # "r" + "m", "…".format(), "…" % x: built at run time
        return None
    return text[1:close]


def _container(argv: list[str], static: list[bool], depth: int, analysis: Analysis) -> None:
    """`docker run [options] IMAGE cmd…`, `docker exec [options] CONTAINER cmd…`, `docker container run`."""
    if argv[0].endswith("-compose"):  # `docker-compose run …` is `docker compose run …`
        argv, static = [argv[0], "compose", *argv[1:]], [True, True, *static[1:]]
    i = 1
    while i < len(argv) and argv[i].startswith("-"):
        i += 1
    if i < len(argv) and argv[i] in ("container", "compose"):  # `docker compose run SERVICE cmd…` too
        i += 1
        while i < len(argv) and argv[i].startswith("-"):
            i += 2 if argv[i] in ("-f", "--file", "-p", "--project-name", "--profile", "--env-file") else 1
    if i >= len(argv) or argv[i] not in ("run", "exec", "create"):
        return
    # past the options, then the image or container
    start = skip_options(argv, i + 1, _DOCKER_SHORT_VALUES, _DOCKER_LONG_VALUES) + 1
    entrypoint = option_value(argv, i + 1, start, "", "--entrypoint")
    if entrypoint is not None:
        _unwrap([entrypoint, *argv[start:]], [True] + static[start:], [], depth + 1, analysis)
    elif start < len(argv):
        _unwrap(argv[start:], static[start:], [], depth + 1, analysis)


def _find_exec(argv: list[str], static: list[bool], depth: int, analysis: Analysis) -> None:
    """`find . -exec rm -rf {} +`: the words between -exec (-execdir, -ok, -okdir) and `;` or `+` run."""
    i, size = 1, len(argv)
    while i < size:
        if argv[i] in ("-exec", "-execdir", "-ok", "-okdir"):
            end = i + 1
            while end < size and argv[end] not in (";", "+"):
                end += 1
            if end > i + 1:
                _unwrap(argv[i + 1:end], static[i + 1:end], [], depth + 1, analysis)
            i = end
        elif argv[i] == "-delete":
            analysis.commands.append(["rm", "-r", "-f", *[w for w in argv[1:i] if not w.startswith("-")][:1]])
        i += 1


# --- git ----------------------------------------------------------------------------------------------------


def _git_key_runs_command(key: str) -> bool:
    key = key.lower()
    if key in _GIT_COMMAND_KEYS:
        return True
    section, _, rest = key.partition(".")
    middle, _, last = rest.rpartition(".")
    return bool(middle) and f"{section}.*.{last}" in _GIT_COMMAND_KEYS or f"{section}.*" in _GIT_COMMAND_KEYS


def _git(argv: list[str], static: list[bool], depth: int, analysis: Analysis) -> tuple[list[str], list[bool]]:
    """`git [options] sub …` as `git sub …`: `-c alias.X=…` applied to the subcommand, `-c` keys that run a
    command (`core.pager`, `core.sshCommand`…) parsed as commands, and `git config KEY VALUE` for them."""
    aliases: dict[str, str] = {}
    i = 1
    while i < len(argv):
        word = argv[i]
        if word == "-c" and i + 1 < len(argv):
            setting, known = argv[i + 1], static[i + 1]
            i += 2
        elif word.startswith("-c") and len(word) > 2:
            setting, known = word[2:], static[i]
            i += 1
        elif word.startswith("--config-env"):
            i += 1 if "=" in word else 2
            continue
        elif word.startswith("-"):  # one option at a time: a `-c` may follow (`git -C dir -c alias.p=…`)
            i += 2 if word == "-C" or word in _GIT_LONG_VALUES else 1
            continue
        else:
            break
        key, _, value = setting.partition("=")
        if not known:
            if "=" not in setting or not key or "$" in key or "`" in key:
                analysis.unchecked.append("git -c sets a setting only known at run time")
                continue
            value_known = False
        else:
            value_known = True
        if key.lower().startswith("alias."):
            aliases[key[6:].lower()] = value if value_known else "\0"
        elif key.lower() == "core.hookspath":
            analysis.unchecked.append("git runs hooks from a folder set on the command line")
        elif _git_key_runs_command(key):
            _run_string(value if value_known else None, depth, analysis,
                        f"git -c {key} runs a command only known at run time")
    rest, rest_static = argv[i:], static[i:]
    if rest and rest[0] in aliases:
        alias = aliases[rest[0]]
        if alias == "\0":
            analysis.unchecked.append("a git alias only known at run time")
        elif alias.startswith("!"):
            _run_string(alias[1:] + (" " + " ".join(rest[1:]) if rest[1:] else ""), depth, analysis, "")
        else:
            found, _ = simples(alias, depth + 1)
            words = [w for s in found for w in s.words]
            rest, rest_static = [*words, *rest[1:]], [True] * len(words) + rest_static[1:]
    if len(rest) >= 3 and rest[0] == "config":
        _git_config(rest, depth, analysis)
    return ["git", *rest], [True, *rest_static]


def _git_config(rest: list[str], depth: int, analysis: Analysis) -> None:
    operands = [w for w in rest[1:] if not w.startswith("-")]
    if len(operands) >= 2:
        key, value = operands[0], operands[1]
        if key.lower().startswith("alias.") and value.startswith("!"):
            _run_string(value[1:], depth, analysis, "")
        elif key.lower().startswith("alias."):
            _run_string("git " + value, depth, analysis, "")
        elif key.lower() == "core.hookspath":
            analysis.unchecked.append("git is set to run hooks from another folder")
        elif _git_key_runs_command(key):
            _run_string(value, depth, analysis, "")


# --- writes -------------------------------------------------------------------------------------------------


def _operands(argv: list[str], short_values: str = "", long_values: frozenset[str] = _NONE) -> list[str]:
    """The operands of argv[1:], options anywhere among them (GNU style) and the values of those that take
    one skipped; everything after `--` is an operand."""
    out: list[str] = []
    i, size = 1, len(argv)
    while i < size:
        word = argv[i]
        i += 1
        if word == "--":
            out.extend(argv[i:])
            break
        if len(word) < 2 or word[0] != "-":
            out.append(word)
        elif word[1] == "-":
            if "=" not in word and word in long_values:
                i += 1
        else:
            for index in range(1, len(word)):
                if word[index] in short_values:
                    if index == len(word) - 1:
                        i += 1
                    break
    return out


def _writes(argv: list[str], analysis: Analysis) -> None:
    """Files this command (one layer, already unwrapped) writes or removes."""
    name = argv[0]
    writes = analysis.writes
    if name == "tee":
        writes.extend(_operands(argv))
    elif name in ("sed", "perl", "ruby") and any(
            w.startswith("-i") or w == "--in-place" or w.startswith("--in-place=")
            or (w.startswith("-") and not w.startswith("--") and "i" in w[1:] and name != "sed")
            for w in argv[1:]):
        operands = _operands(argv, "ef", frozenset({"--expression", "--file"}))
        explicit = any(w in ("-e", "--expression", "-f", "--file") or w.startswith(("-e", "--expression="))
                       for w in argv[1:] if not w.startswith("-i"))
        writes.extend(operands if explicit else operands[1:])
    elif name in ("cp", "mv", "install", "ln", "rsync", "scp"):
        target = option_value(argv, 1, len(argv), "t", "--target-directory")
        operands = _operands(argv, "tSm" if name != "rsync" else "e", frozenset({
            "--target-directory", "--suffix", "--mode", "--backup"}))
        if target is not None:
            writes.append(target)
        elif operands:
            writes.append(operands[-1])
            if len(operands) == 2 and name in ("cp", "ln", "install") and not operands[1].endswith("/"):
                _rename(operands[1], operands[0], analysis)
        if name == "mv":  # the sources disappear
            writes.extend(operands[:-1] if target is None else operands)
    elif name == "dd":
        writes.extend(word[3:] for word in argv[1:] if word.startswith("of="))
    elif name in ("truncate", "shred", "touch", "rm", "unlink", "rmdir", "chmod", "chown"):
        operands = _operands(argv, "srdt" if name in ("truncate", "touch") else "", frozenset({"--size",
                                                                                               "--reference"}))
        if name in ("chmod", "chown"):
            operands = operands[1:]
        writes.extend(operands)
    elif name in ("curl", "wget"):
        value = option_value(argv, 1, len(argv), "o" if name == "curl" else "O",
                             "--output" if name == "curl" else "--output-document")
        if value is not None:
            writes.append(value)
    elif name == "patch":
        operands = _operands(argv, "pioBdDFrVYz", frozenset({"--input", "--output", "--directory"}))
        writes.extend(operands[:1])


# --- capture's view -----------------------------------------------------------------------------------------


class Invocation:
    """A top-level command as capture sees it: its words without environment assignments, redirections or
    transparent wrappers (`timeout 600 pytest -q` is `pytest -q`), and its position in its pipeline."""

    __slots__ = ("words", "pipe")

    def __init__(self, words: list[str], pipe: int) -> None:
        self.words = words
        self.pipe = pipe

    def __repr__(self) -> str:
        return f"Invocation({self.words!r}, pipe={self.pipe})"


def unwrap_transparent(words: list[str]) -> list[str]:
    """`timeout 600 pytest -q` → `pytest -q`; `sudo -E env A=1 nice -n 10 make test` → `make test`."""
    start = 0
    while start < len(words):
        word = words[start]
        if _is_assignment(word):
            start += 1
            continue
        wrapper = _WRAPPERS.get(basename(word))
        if wrapper is None or not wrapper[3]:
            break
        short_values, long_values, operands, _ = wrapper
        start = skip_options(words, start + 1, short_values, long_values) + operands
        if basename(word) == "env" and start < len(words) and words[start] == "-":
            start += 1
    return words[start:]


def capture_commands(text: str) -> list[Invocation]:
    """The top-level simple commands of `text`, in order, for capture (see `Invocation`)."""
    try:
        found, _ = simples(text)
    except Exception:  # capture must go on: a line it cannot read yields no command, as an empty one
        found = []
    out: list[Invocation] = []
    for simple in found:
        if simple.depth != 0 or not simple.words:
            continue
        words = [word for word in simple.words]
        words = unwrap_transparent(words)
        if words:
            out.append(Invocation(words, simple.pipe))
    return out

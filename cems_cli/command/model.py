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

from cems_cli.command._nested import _container, _find_exec, _git, _inline_code
from cems_cli.command._programs import (
    _COMMAND_VARIABLES,
    _DOCKER_LIKE,
    _KEYWORDS,
    _NONE,
    _PARALLEL_SEPARATORS,
    _PRINTERS,
    _SHELLS,
    _SSH_SHORT_VALUES,
    _STDIN_FILES,
    _WRAPPERS,
    MAX_DEPTH,
)
from cems_cli.command._writes import _operands, _writes
from cems_cli.command.plain import INTERPRETERS, Simple, _is_assignment
from cems_cli.command.words import (
    _UNKNOWN_PROGRAM,
    _rename,
    _renamed,
    basename,
    option_value,
    simples,
    skip_options,
)


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

"""Command lines inside other programs' arguments: interpreters' inline code, containers, `find -exec` and
git's aliases, pagers and editors.

Each one is read by the model in turn (`model._run_string`, `model._unwrap`), imported when first called:
the model imports this module, and the recursion goes back into it."""

from __future__ import annotations

from cems_cli.command._programs import (
    _DOCKER_LONG_VALUES,
    _DOCKER_SHORT_VALUES,
    _GIT_COMMAND_KEYS,
    _GIT_LONG_VALUES,
)
from cems_cli.command.plain import SHELL_OUT_MARKERS
from cems_cli.command.words import option_value, simples, skip_options

TYPE_CHECKING = False
if TYPE_CHECKING:
    from cems_cli.command.model import Analysis

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
    from cems_cli.command.model import _run_string

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
    from cems_cli.command.model import _run_string

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
    from cems_cli.command.model import _unwrap

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
    from cems_cli.command.model import _unwrap

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
    from cems_cli.command.model import _run_string

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
    from cems_cli.command.model import _run_string

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

"""Shell command lines as the shell sees them, for rules that name a command.

`\\rm -rf /`, `'rm' -fr /`, `sudo -u root /bin/rm -r -f /`, `bash -c 'rm -rf /'` and `x=$(rm -rf /)` all run
`rm` with the same options. `simple_commands` lexes a Bash line the way the shell does (quotes, escapes,
`$'…'`, comments, line continuations, here-documents, every control operator) and returns each simple
command's words: command name without its directory, leading assignments and redirections dropped,
wrappers (`sudo`, `env`, `nice`, `timeout`, `xargs`, …) unwrapped, and the commands inside `sh -c` strings,
`$(…)`, backticks, `<(…)`, here-documents, `eval` and `find -exec` parsed in turn (at most MAX_DEPTH levels
deep). `cems_cli.rules.matcher` then compares those commands with glob rules by name, operands and option
set, so `rm -rf*` also catches `rm -fr`, `rm -r -f`, `rm -Rf` and `rm --recursive --force`.

Command lines without quoting, substitution or wrappers (most of them) never come here:
`matcher.plain_commands` splits them the same way without importing this module.

The lexer is written here rather than taken from `shlex`: shlex imports `re` and `collections`, ~7 ms per
tool call on the PreToolUse path (about twice the whole hook), and it differs from the shell where it
matters for evasion: `a#b` ends the word at `#`, `\\$` keeps its backslash inside double quotes, and it
knows nothing of `$'…'`, line continuations, here-documents or command substitution. On input without
those, it splits exactly like `shlex.shlex(text, posix=True, punctuation_chars=True)` with
`whitespace_split=True` and no commenters (tests/unit/test_rules_shell.py checks this on random input).

Everything errs towards seeing more commands, never fewer: what cannot be parsed is left to the plain-text
matching the rules also do. Imports nothing: this runs before every Bash call.
"""

from __future__ import annotations

# Past this many characters a command line is only matched as plain text: lexing is linear but runs in
# Python, and 64 KiB of worst-case input (every character a separator) costs ~20 ms.
MAX_PARSE_CHARS = 64 * 1024
# `sh -c "sh -c '…'"`, `$( $( … ) )`, `eval`, `find -exec`: each level is parsed again; deeper is plain text.
MAX_DEPTH = 4

# Characters the lexer stops at; every other character is part of the current word. NUL is here only
# because it is the marker `str.translate` writes, so runs of ordinary characters are skipped in C.
_SPECIAL = " \t\r\n'\"\\$`#;&|()<>\0"
_MARKS = dict.fromkeys(map(ord, _SPECIAL), "\0")
_IN_DOUBLE_QUOTES = "\"\\$`"
_BLANKS = " \t\r"  # \r is a word character to bash; splitting on it too keeps CRLF lines readable

# Longest first. Control operators end a simple command; redirections take the next word as their target.
_OPERATORS = (";;&", "&>>", "<<-", "<<<", "&&", "||", ";;", ";&", "|&", "&>", ">>", ">|", ">&", "<&", "<>",
              "<<", ";", "&", "|", "(", ")", "<", ">", "\n")
_REDIRECTIONS = frozenset({"&>>", "<<-", "<<<", "&>", ">>", ">|", ">&", "<&", "<>", "<<", "<", ">"})

# Reserved words that may precede a command in the same simple command: `if rm …`, `then rm …`, `{ rm …`.
_KEYWORDS = frozenset({"if", "then", "else", "elif", "fi", "do", "done", "while", "until", "{", "}", "!",
                       "esac"})
_SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "yash", "fish"})


# Commands that run the rest of their arguments as a command: (short options that take a value, long
# options that take one, operands before the command). `sudo -u USER cmd`, `timeout DURATION cmd`.
# `NAME=value` words before the command (`env A=1 cmd`, `sudo A=1 cmd`) are skipped for all of them.
# Plain tuples: this table is built on every Bash call that needs the lexer, and objects cost more.
_NONE: frozenset[str] = frozenset()
_WRAPPERS: dict[str, tuple[str, frozenset[str], int]] = {
    "sudo": ("CDghpRrTtUu", frozenset({"--chdir", "--close-from", "--group", "--host", "--prompt",
                                       "--chroot", "--role", "--type", "--command-timeout", "--other-user",
                                       "--user"}), 0),
    "doas": ("Cu", _NONE, 0),
    "env": ("uCPS", frozenset({"--unset", "--chdir", "--split-string"}), 0),
    "nice": ("n", frozenset({"--adjustment"}), 0),
    "nohup": ("", _NONE, 0),
    "timeout": ("sk", frozenset({"--signal", "--kill-after"}), 1),
    "xargs": ("adEILnPs", frozenset({"--arg-file", "--delimiter", "--max-args", "--max-procs", "--max-chars",
                                     "--max-lines", "--process-slot-var"}), 0),
    "command": ("", _NONE, 0),
    "builtin": ("", _NONE, 0),
    "exec": ("a", _NONE, 0),
    "time": ("fo", frozenset({"--format", "--output"}), 0),
    "stdbuf": ("ioe", frozenset({"--input", "--output", "--error"}), 0),
    "setsid": ("", _NONE, 0),
    "ionice": ("cnpPu", frozenset({"--class", "--classdata", "--pid", "--pgid", "--uid"}), 0),
    "chrt": ("TPD", _NONE, 1),
    "taskset": ("", _NONE, 1),
    "caffeinate": ("tw", _NONE, 0),
    "unbuffer": ("", _NONE, 0),
    "busybox": ("", _NONE, 0),
    "coproc": ("", _NONE, 0),
    "watch": ("n", frozenset({"--interval"}), 0),
}
# Options of `git` itself, before the subcommand, that take a value: `git -C dir push` is a `git push`.
_GIT_SHORT_VALUES = "Cc"
_GIT_LONG_VALUES = frozenset({"--git-dir", "--work-tree", "--namespace", "--super-prefix", "--config-env"})



# --- lexing ---------------------------------------------------------------------------------------------


class _Simple:
    """One simple command as lexed: its words (assignments included) and the text of any here-string fed
    to its stdin (`bash <<< 'rm x'` runs that text)."""

    __slots__ = ("words", "stdin")

    def __init__(self) -> None:
        self.words: list[str] = []
        self.stdin: list[str] = []


def _ansi_c(text: str, start: int) -> tuple[str, int]:
    """Decode the body of `$'…'` starting at `start` (just past the quote); returns it and the end index.
    `$'\\x72m'` is `rm` to the shell, so it must be to the rules too."""
    out: list[str] = []
    i, n = start, len(text)
    while i < n:
        char = text[i]
        if char == "'":
            return "".join(out), i + 1
        if char != "\\" or i + 1 >= n:
            out.append(char)
            i += 1
            continue
        kind = text[i + 1]
        i += 2
        if kind in _C_ESCAPES:
            out.append(_C_ESCAPES[kind])
        elif kind in _OCTAL:  # \NNN: up to three octal digits, this one included
            end = i
            while end < n and end - i < 2 and text[end] in _OCTAL:
                end += 1
            out.append(chr(int(text[i - 1:end], 8) & 0xFF))
            i = end
        elif kind in _HEX_DIGITS:  # \xHH, \uHHHH, \UHHHHHHHH
            end = i
            while end < n and end - i < _HEX_DIGITS[kind] and text[end] in _HEX:
                end += 1
            code = int(text[i:end], 16) if end > i else -1
            out.append(chr(code) if 0 <= code < 0x110000 else "\\" + kind + text[i:end])
            i = end
        elif kind == "c" and i < n:  # \cX: control character
            out.append(chr(ord(text[i]) & 0x1F))
            i += 1
        else:
            out.append("\\" + kind)
    return "".join(out), n


_C_ESCAPES = {"a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b", "f": "\f", "n": "\n", "r": "\r", "t": "\t",
              "v": "\v", "\\": "\\", "'": "'", '"': '"', "?": "?"}
_OCTAL = "01234567"
_HEX = "0123456789abcdefABCDEF"
_HEX_DIGITS = {"x": 2, "u": 4, "U": 8}


def _backquoted(text: str, start: int) -> tuple[str, int]:
    """The command inside backquotes opening before `start`, with `\\``, `\\\\` and `\\$` unescaped."""
    out: list[str] = []
    i, n = start, len(text)
    while i < n:
        char = text[i]
        if char == "`":
            return "".join(out), i + 1
        if char == "\\" and i + 1 < n and text[i + 1] in "`\\$":
            out.append(text[i + 1])
            i += 2
        else:
            out.append(char)
            i += 1
    return "".join(out), n


def _parenthesised(text: str, start: int, marks: str) -> int:
    """Index just past the `)` closing a `$(` or `<(` whose body starts at `start` (quotes, escapes and
    nested parentheses skipped); len(text) when it never closes."""
    depth, i, n = 1, start, len(text)
    while i < n:
        i = marks.find("\0", i)
        if i < 0:
            return n
        char = text[i]
        if char == "\\":
            i += 2
        elif char == "'":
            close = text.find("'", i + 1)
            i = n if close < 0 else close + 1
        elif char == '"':
            i = _double_quoted(text, i + 1, marks, [], [])
        elif char == "`":
            i = _backquoted(text, i + 1)[1]
        elif char == "(":
            depth += 1
            i += 1
        elif char == ")":
            depth -= 1
            i += 1
            if depth == 0:
                return i
        else:
            i += 1
    return n


def _double_quoted(text: str, start: int, marks: str, out: list[str], nested: list[str]) -> int:
    """Append the value of a "…" string starting at `start` to `out`, the commands it substitutes to
    `nested`; returns the index past the closing quote."""
    i, n = start, len(text)
    while i < n:
        j = marks.find("\0", i)
        if j < 0:
            j = n
        if j > i:
            out.append(text[i:j])
            i = j
            continue
        char = text[i]
        if char not in _IN_DOUBLE_QUOTES:
            out.append(char)
            i += 1
        elif char == '"':
            return i + 1
        elif char == "\\":
            following = text[i + 1:i + 2]
            if following == "\n":
                pass  # line continuation
            elif following in ("$", "`", '"', "\\"):
                out.append(following)
            else:
                out.append("\\" + following)
            i += 2
        elif char == "`":
            body, i = _backquoted(text, i + 1)
            nested.append(body)
            out.append("`" + body + "`")
        elif text.startswith("$(", i):
            end = _parenthesised(text, i + 2, marks)
            nested.append(text[i + 2:end - 1] if text[end - 1:end] == ")" else text[i + 2:end])
            out.append(text[i:end])
            i = end
        else:
            out.append("$")
            i += 1
    return n


def _heredoc_substitutions(body: str, nested: list[str]) -> None:
    """Commands substituted inside an unquoted here-document (`$(…)`, backquotes): they run."""
    marks = body.translate(_MARKS)
    i, n = 0, len(body)
    while i < n:
        i = marks.find("\0", i)
        if i < 0:
            return
        if body[i] == "\\":
            i += 2
        elif body.startswith("$(", i):
            end = _parenthesised(body, i + 2, marks)
            nested.append(body[i + 2:end - 1] if body[end - 1:end] == ")" else body[i + 2:end])
            i = end
        elif body[i] == "`":
            text, i = _backquoted(body, i + 1)
            nested.append(text)
        else:
            i += 1


def lex(text: str) -> tuple[list[_Simple], list[str]]:
    """The simple commands of `text` and the bodies of the commands it substitutes (`$(…)`, backquotes,
    `<(…)`, `>(…)`, including those in double quotes and unquoted here-documents), not yet parsed."""
    marks = text.translate(_MARKS)
    commands: list[_Simple] = []
    nested: list[str] = []
    current = _Simple()
    word: list[str] = []
    in_word = False  # a word has begun, possibly empty ('' is a word)
    quoted = False  # some of the current word was quoted or escaped: `2>` is a descriptor, `'2'>` is not
    redirect = ""  # the redirection waiting for its target word
    heredocs: list[tuple[str, bool, bool]] = []  # delimiter, strip tabs, substitutes
    i, n = 0, len(text)

    def end_word() -> None:
        nonlocal in_word, quoted, redirect
        if not in_word:
            return
        value = "".join(word)
        word.clear()
        was_quoted = quoted
        in_word = quoted = False
        if not redirect:
            current.words.append(value)
            return
        if redirect == "<<<":
            current.stdin.append(value)
        elif redirect in ("<<", "<<-"):  # a quoted delimiter (<<'EOF') turns substitution off in the body
            heredocs.append((value, redirect == "<<-", not was_quoted))
        redirect = ""

    def end_command() -> None:
        nonlocal current
        end_word()
        if current.words or current.stdin:
            commands.append(current)
        current = _Simple()

    while i < n:
        j = marks.find("\0", i)
        if j < 0:
            j = n
        if j > i:
            word.append(text[i:j])
            in_word = True
            i = j
            continue
        char = text[i]
        if char in _BLANKS:
            end_word()
            i += 1
            continue
        if not in_word:
            if char == "#":  # a comment runs to the end of the line; inside a word `#` is a letter
                newline = text.find("\n", i)
                i = n if newline < 0 else newline
                continue
            if char in "<>" and text.startswith("(", i + 1):  # process substitution: runs its commands
                end = _parenthesised(text, i + 2, marks)
                nested.append(text[i + 2:end - 1] if text[end - 1:end] == ")" else text[i + 2:end])
                word.append(text[i:end])
                in_word = True
                i = end
                continue
        if char in ";&|()<>\n":
            operator = next(op for op in _OPERATORS if text.startswith(op, i))
            if operator in _REDIRECTIONS and in_word and not quoted and "".join(word).isdigit():
                word.clear()  # `2>&1`: the digits name a file descriptor, they are not an argument
                in_word = False
            end_word()
            i += len(operator)
            if operator in _REDIRECTIONS:
                redirect = operator
            else:
                redirect = ""
                end_command()
                if operator == "\n" and heredocs:
                    i = _read_heredocs(text, i, heredocs, nested)
            continue
        in_word = True
        if char == "'":
            close = text.find("'", i + 1)
            close = n if close < 0 else close
            word.append(text[i + 1:close])
            quoted = True
            i = close + 1
        elif char == '"':
            quoted = True
            i = _double_quoted(text, i + 1, marks, word, nested)
        elif char == "\\":
            following = text[i + 1:i + 2]
            if following == "\n":  # line continuation: both characters vanish
                in_word = bool(word)
            else:
                word.append(following)
                quoted = True
            i += 2
        elif char == "`":
            body, i = _backquoted(text, i + 1)
            nested.append(body)
            word.append("`" + body + "`")
        elif char == "$":
            following = text[i + 1:i + 2]
            if following == "'":
                value, i = _ansi_c(text, i + 2)
                word.append(value)
                quoted = True
            elif following == '"':  # $"…" is a translatable string: the same as "…" here
                quoted = True
                i = _double_quoted(text, i + 2, marks, word, nested)
            elif following == "(":
                end = _parenthesised(text, i + 2, marks)
                nested.append(text[i + 2:end - 1] if text[end - 1:end] == ")" else text[i + 2:end])
                word.append(text[i:end])
                i = end
            else:
                word.append("$")
                i += 1
        else:  # `#` inside a word, NUL
            word.append(char)
            i += 1
    end_command()
    return commands, nested


def _read_heredocs(text: str, start: int, heredocs: list[tuple[str, bool, bool]], nested: list[str]) -> int:
    """Consume the bodies of the here-documents opened on the line that just ended; returns where the
    next line of commands starts.

    Quotes mean nothing inside a body (`don't` opens no string), so the body must not be lexed as part of
    the line. It is still parsed as commands on its own: a shell may be reading it (`bash <<EOF`), and
    `<<` is not always a here-document (`(( x = 1 << 2 ))`, `let y=1<<2`), in which case the "body" is in
    fact the next lines of commands. Substitutions in an unquoted body run in any case."""
    i, n = start, len(text)
    for delimiter, strip_tabs, substitutes in heredocs:
        lines: list[str] = []
        while i < n:
            end = text.find("\n", i)
            end = n if end < 0 else end
            line = text[i:end]
            i = end + 1
            if (line.lstrip("\t") if strip_tabs else line) == delimiter:
                break
            lines.append(line)
        body = "\n".join(lines)
        nested.append(body)
        if substitutes:
            _heredoc_substitutions(body, nested)
    heredocs.clear()
    return min(i, n)


# --- simple commands ------------------------------------------------------------------------------------


def simple_commands(text: str) -> list[list[str]]:
    """Every command `text` runs, as argument lists (`[["rm", "-rf", "/"]]`), outermost first. A wrapped
    command appears once per layer: `sudo -u root rm -rf /` gives the `sudo …` words, then `rm -rf /`."""
    found: list[list[str]] = []
    text = text[:MAX_PARSE_CHARS]
    try:
        _collect(text, 0, found)
    except RecursionError:
        # Hundreds of nested `"$(` levels: read the line again blind to quoting, where every substitution
        # and operator separates commands. Cruder, but it still sees a command hidden after the nesting.
        for line in text.translate(_QUOTE_BLIND).split("\n"):
            words = line.split()
            if words:
                _unwrap(words, [], MAX_DEPTH, found)
    return found


_QUOTE_BLIND = str.maketrans({"'": None, '"': None, "\\": None, **dict.fromkeys("$`();&|<>", "\n")})


def _collect(text: str, depth: int, found: list[list[str]]) -> None:
    commands, nested = lex(text)
    for command in commands:
        _unwrap(command.words, command.stdin, depth, found)
    if depth < MAX_DEPTH:
        for body in nested:
            _collect(body, depth + 1, found)


def _is_assignment(word: str) -> bool:
    name, eq, _ = word.partition("=")
    if name.endswith("+"):  # A+=1
        name = name[:-1]
    return bool(eq) and name.isascii() and name.isidentifier()


def _basename(word: str) -> str:
    """`/bin/rm` and `./rm` run `rm`; a substitution such as `$(dirname x)/run` is left whole."""
    if "/" not in word or "$" in word or "`" in word:
        return word
    return word.rpartition("/")[2] or word


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


def _option_value(argv: list[str], start: int, end: int, short: str, long: str) -> str | None:
    """The value of option `-short`/`--long` among argv[start:end], if given (last one wins)."""
    value = None
    i = start
    while i < end:
        word = argv[i]
        if word == long and i + 1 < end:
            value = argv[i + 1]
        elif word.startswith(long + "="):
            value = word[len(long) + 1:]
        elif len(word) > 1 and word[0] == "-" and word[1] != "-" and short in word:
            at = word.index(short)
            value = word[at + 1:] or (argv[i + 1] if i + 1 < end else None)
        i += 1
    return value


def _unwrap(words: list[str], stdin: list[str], depth: int, found: list[list[str]]) -> None:
    argv = words
    start = 0
    while start < len(argv):
        if _is_assignment(argv[start]):  # `A=1 cmd`, `then A=1 cmd`, `env A=1 cmd`
            start += 1
            continue
        name = _basename(argv[start])
        if name in _KEYWORDS:
            start += 1
            continue
        if name == "function":  # `function f { …`: the body's first command follows the name
            start += 2
            continue
        argv = [name, *argv[start + 1:]]
        start = 0
        if name == "git":
            argv = [name, *argv[skip_options(argv, 1, _GIT_SHORT_VALUES, _GIT_LONG_VALUES):]]
        found.append(argv)
        wrapper = _WRAPPERS.get(name)
        if wrapper is not None:
            short_values, long_values, operands = wrapper
            start = skip_options(argv, 1, short_values, long_values)
            if name == "env":
                split = _option_value(argv, 1, start, "S", "--split-string")
                if split is not None:  # env -S 'rm -rf' /: the string is split into words
                    if depth < MAX_DEPTH:
                        split_words = [w for c in lex(split)[0] for w in c.words]
                        argv = [*split_words, *argv[start:]]
                        start = 0
                        depth += 1
                        continue
                if start < len(argv) and argv[start] == "-":  # `env -` is `env -i`
                    start += 1
            start += operands
            if name == "watch" and start < len(argv) and depth < MAX_DEPTH:
                _collect(" ".join(argv[start:]), depth + 1, found)  # watch runs its words through sh -c
                return
            continue
        if depth >= MAX_DEPTH:
            return
        if name in _SHELLS:
            _shell(argv, stdin, depth, found)
        elif name in ("su", "runuser"):
            script = _option_value(argv, 1, len(argv), "c", "--command")
            if script is not None:
                _collect(script, depth + 1, found)
        elif name == "eval":
            _collect(" ".join(argv[1:]), depth + 1, found)
        elif name == "find":
            _find_exec(argv, depth, found)
        return


def _shell(argv: list[str], stdin: list[str], depth: int, found: list[list[str]]) -> None:
    """`bash -c 'script'`, `sh -ec '…'`, `bash <<< '…'`: the script is parsed as commands (here-documents
    are parsed as commands whoever reads them, see `_read_heredocs`)."""
    i, size, has_c = 1, len(argv), False
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
        elif word[1] != "-" and "c" in word:
            has_c = True
    if has_c:
        if i < size:
            _collect(argv[i], depth + 1, found)
    elif i >= size:  # no script file: the shell reads its commands from stdin
        for text in stdin:
            _collect(text, depth + 1, found)


def _find_exec(argv: list[str], depth: int, found: list[list[str]]) -> None:
    """`find . -exec rm -rf {} +`: the words between -exec (-execdir, -ok, -okdir) and `;` or `+` run."""
    i, size = 1, len(argv)
    while i < size:
        if argv[i] in ("-exec", "-execdir", "-ok", "-okdir"):
            end = i + 1
            while end < size and argv[end] not in (";", "+"):
                end += 1
            if end > i + 1:
                _unwrap(argv[i + 1:end], [], depth + 1, found)
            i = end
        i += 1

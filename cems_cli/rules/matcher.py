"""Decide which rule, if any, applies to a tool call.

This module runs inside the PreToolUse hook before every tool call, so it imports nothing at module level:
`re` and `fnmatch` cost ~15 ms each on a small machine (a third of the hook budget), and most patterns are
plain `*` globs that str methods match exactly. `re` is imported only when a rule actually needs it.

Rules are duck-typed: anything with the attributes of `cems_cli.rules.model.Rule` (`id`, `tool`, `pattern`,
`action`, `reason`, `field`, `regex`, `project`). The hook passes the slotted records of
`cems_cli.rules.snapshot`, the CLI passes `Rule` dataclasses.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # `typing` costs ~25 ms to import; annotations are strings anyway
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping
    from typing import Any

ACTIONS = ("block", "ask", "warn")
# Strictness: the highest rank wins when several rules match one call.
ACTION_RANK = {"warn": 1, "ask": 2, "block": 3}

# The argument a rule's pattern is matched against when the rule names no --field.
_MAIN_FIELDS = {
    "Bash": "command",
    "Edit": "file_path",
    "MultiEdit": "file_path",
    "Write": "file_path",
    "Read": "file_path",
    "NotebookEdit": "notebook_path",
    "NotebookRead": "notebook_path",
    "WebFetch": "url",
}
_PATH_FIELDS = frozenset({"file_path", "notebook_path", "path"})
# A rule on Edit guards every tool that changes a file's contents, as Claude Code's own `Edit(…)` permission
# rules do: otherwise `Edit: migrations/*` is dodged by rewriting the file with Write or MultiEdit.
_TOOL_FAMILIES = {"Edit": frozenset({"Edit", "MultiEdit", "Write", "NotebookEdit"})}
# Rules on these tools also see the files a Bash command writes (`echo x > f`, `sed -i`, `tee f`).
_EDIT_FAMILY = _TOOL_FAMILIES["Edit"]

# Regex rules run `re.search` in C, which cannot be stopped from Python except by a signal: all the regex
# searches of one tool call share this much wall time. A rule still unchecked when it is spent counts as
# matched (its action applies, saying it was not checked), unless the caller passes on_timeout="allow"
# (CEMS_RULES_ON_TIMEOUT): otherwise a long enough command would walk past any regex rule. Patterns known
# to backtrack catastrophically are refused at `cems rule add` (`cems_cli.rules.model`).
REGEX_BUDGET_SECONDS = 0.1
ON_TIMEOUT = ("deny", "allow")  # CEMS_RULES_ON_TIMEOUT; "deny" is the default (cems_cli.defaults)
TIMED_OUT = (f"not checked within the {REGEX_BUDGET_SECONDS:g} s regex budget, so it counts as matched; "
             "CEMS_RULES_ON_TIMEOUT=allow lets such calls through")

# Words that only wrap the real command: `sudo git push` is still a `git push`.
_WRAPPERS = frozenset({"sudo", "env", "command", "exec", "nohup", "time", "builtin", "then", "do", "else",
                       "elif", "if", "while", "until", "!"})
_COMPOUND_SEPARATORS = ("&&", "||", "|&", ";", "|", "\n")


class Decision:
    """The winning rule for one tool call: what to do, which rule said so, and the value it matched.
    `unchecked`: the rule could not be checked within the time budget, and counts as matched."""

    __slots__ = ("action", "rule", "value", "unchecked")

    def __init__(self, action: str, rule: Any, value: str, unchecked: str = "") -> None:
        self.action = action
        self.rule = rule
        self.value = value
        # Set when no rule matched for sure, but the command cannot be checked and `rule` may be concerned.
        self.unchecked = unchecked

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Decision):
            return NotImplemented
        return (self.action, self.rule, self.value) == (other.action, other.rule, other.value)

    def __hash__(self) -> int:
        return hash((self.action, self.value))

    def __repr__(self) -> str:
        rule_id = getattr(self.rule, "id", self.rule)
        unchecked = ", unchecked=True" if self.unchecked else ""
        return f"Decision(action={self.action!r}, rule={rule_id!r}, value={self.value!r}{unchecked})"


def main_field(tool_name: str, rule_field: str | None) -> str:
    """The tool_input key a rule matches: its own --field, else the tool's main argument, else ""
    (meaning: no main argument is known, match any top-level string argument)."""
    if rule_field:
        return rule_field
    return _MAIN_FIELDS.get(tool_name, "")


# --- pattern compilation (once per process) ------------------------------------------------------------

_cache: dict[tuple[str, bool], Callable[[str], bool]] = {}


def compile_pattern(pattern: str, regex: bool = False) -> Callable[[str], bool]:
    """A predicate for one pattern: `re.search` for regexes, whole-value `fnmatchcase` semantics for globs."""
    key = (pattern, regex)
    predicate = _cache.get(key)
    if predicate is None:
        predicate = _compile_regex(pattern) if regex else _compile_glob(pattern)
        _cache[key] = predicate
    return predicate


def _compile_regex(pattern: str) -> Callable[[str], bool]:
    import re

    search = re.compile(pattern).search
    return lambda value: search(value) is not None


def _compile_glob(pattern: str) -> Callable[[str], bool]:
    if "?" in pattern or "[" in pattern:
        # Character classes and `?` are rare in rules; fnmatch's own translation keeps its exact semantics.
        import fnmatch
        import re

        full = re.compile(fnmatch.translate(pattern)).match
        return lambda value: full(value) is not None
    if "*" not in pattern:
        return pattern.__eq__
    parts = pattern.split("*")
    head, tail, middle = parts[0], parts[-1], [p for p in parts[1:-1] if p]
    min_len = len(head) + len(tail) + sum(map(len, middle))

    def match(value: str) -> bool:
        # `*`-only globs: fixed head and tail, then each middle piece leftmost in order. Leftmost is always
        # a valid choice for `*`, so this equals fnmatchcase without building a regex.
        if len(value) < min_len or not value.startswith(head) or not value.endswith(tail):
            return False
        pos, end = len(head), len(value) - len(tail)
        for piece in middle:
            found = value.find(piece, pos, end)
            if found < 0:
                return False
            pos = found + len(piece)
        return True

    return match


# --- candidate values -----------------------------------------------------------------------------------


def split_compound(command: str) -> list[str]:
    """Sub-commands of a shell line split on `&&`, `||`, `;`, `|` and newlines (quotes are not parsed: a
    separator inside quotes splits too, which can only add matches, never hide one)."""
    for separator in _COMPOUND_SEPARATORS[:-1]:
        command = command.replace(separator, "\n")
    return [part.strip() for part in command.split("\n") if part.strip()]


def _is_assignment(word: str) -> bool:
    name, eq, _ = word.partition("=")
    return bool(eq) and name.isascii() and name.isidentifier()


def strip_prefixes(command: str) -> str:
    """Drop leading `FOO=1 BAR="a b"` assignments, grouping characters and wrapper words (`sudo`, `env`…)."""
    text = command.lstrip(" \t({")
    while text:
        word_end = _word_end(text)
        word = text[:word_end]
        if not (_is_assignment(word) or word in _WRAPPERS):
            break
        text = text[word_end:].lstrip(" \t({")
    return text


def _word_end(text: str) -> int:
    """Index just past the first shell word of `text`, honouring simple quotes (`A="x y"` is one word)."""
    i, n = 0, len(text)
    while i < n and text[i] not in " \t":
        if text[i] in "\"'":
            close = text.find(text[i], i + 1)
            i = n if close < 0 else close + 1
        else:
            i += 1
    return i


def _command_candidates(command: str) -> list[str]:
    candidates = [command.strip()]
    for part in split_compound(command):
        candidates.append(part)
        bare = strip_prefixes(part)
        candidates.append(bare)
        candidates.append(" ".join(bare.split()))  # `git  push` must not dodge `git push*`
    return candidates


def _path_candidates(path: str, cwd: str | None) -> list[str]:
    """The path as given, absolute and normalised, and relative to the session's directory when inside it:
    `migrations/*` must match `/repo/migrations/x`, `./migrations/x` and `/repo/tmp/../migrations/x`, and
    `/repo/migrations/*` a relative `migrations/x`."""
    candidates = [path]
    base = cwd if cwd and os.path.isabs(cwd) else None
    if os.path.isabs(path):
        absolute = os.path.normpath(path)
    elif base is not None:
        absolute = os.path.normpath(os.path.join(base, path))
    else:
        candidates.append(os.path.normpath(path))
        return list(dict.fromkeys(candidates))
    candidates.append(absolute)
    if base is not None:
        relative = os.path.relpath(absolute, os.path.normpath(base))
        if relative != ".." and not relative.startswith("../"):
            candidates.append(relative)
    # Through symlinks: `link/x` where `link -> migrations` writes `migrations/x`, which the rule names.
    resolved = os.path.realpath(absolute)
    if resolved != absolute:
        candidates.append(resolved)
        if base is not None:
            relative = os.path.relpath(resolved, os.path.realpath(base))
            if relative != ".." and not relative.startswith("../"):
                candidates.append(relative)
    return list(dict.fromkeys(candidates))


class _Values:
    """What the rules on one field are tried against, computed once per tool call. For a shell command,
    `commands` holds each simple command as the shell sees it (`cems_cli.command.model`) and `texts` their
    words joined by spaces after the raw forms; `firsts` is every text's first word, a cheap early "no"."""

    __slots__ = ("texts", "firsts", "commands", "unchecked", "writes", "_shapes", "_pairs")

    def __init__(self, texts: list[str], commands: list[list[str]] | None = None) -> None:
        if commands is not None:  # a shell command: raw forms, then the parsed ones, no blanks or repeats
            texts.extend(" ".join(argv) for argv in commands)
            texts = list(dict.fromkeys(text for text in texts if text))
        self.texts = texts
        self.firsts = {text.partition(" ")[0] for text in self.texts}
        self.commands = commands
        self.unchecked: list[str] = []  # why part of a shell command cannot be checked before it runs
        self.writes: list[str] | None = None  # files a shell command writes; None: not worked out yet
        self._shapes: list[tuple[str, Any]] | None = None
        self._pairs: set[str] | None = None

    def structural(self, pattern: str, first: str, rest: str) -> str | None:
        """The first command that has the shape of glob rule `pattern` (name, operands, a superset of its
        options: `rm -rf*` matches `rm -r -f /`), as its words joined by spaces, or None.
        `first` and `rest` are the pattern's literal head split at its first space."""
        if self._pairs is None:
            self._pairs = set()
            for argv in self.commands or ():
                operand = next((word for word in argv[1:] if not _is_option(word)), None)
                if operand is not None:
                    self._pairs.add(argv[0] + " " + operand)
        second, space, _ = rest.partition(" ")
        # `git danger --force*` cannot match a command whose first operand is not `danger`: most rules stop
        # here, before the shell module is even imported.
        if space and second and not _is_option(second) and "\"" not in second and "'" not in second:
            if first.rpartition("/")[2] + " " + second not in self._pairs:
                return None
        shape = _shape_cache.get(pattern, _MISSING)
        if shape is _MISSING:
            shape = _shape_cache[pattern] = pattern_shape(pattern)
        if shape is None:
            return None
        if self._shapes is None:
            self._shapes = [(" ".join(argv), command_shape(argv)) for argv in self.commands or ()]
        return next((text for text, command in self._shapes if shape_matches(shape, command)), None)


_MISSING = object()
_shape_cache: dict[str, Any] = {}


# --- command shapes ---------------------------------------------------------------------------------------
# Functions and tuples rather than classes: this module is imported before every tool call.

# Spellings of one option, per command (`rm`) or subcommand (`git push`): a rule's `-r` also means `-R` and
# `--recursive`. Other commands compare options as written, short clusters split (`-rf` is `-r -f`).
_OPTION_ALIASES = {
    "rm": {"-R": "-r", "--recursive": "-r", "--force": "-f"},
    "git push": {"--force": "-f", "--mirror": "-f"},  # a mirror push force-updates every ref
}


def _is_option(word: str) -> bool:
    """`-r`, `-rf`, `--force`, `--x=1`; not `-` (stdin) nor `--` (end of options, compared as a word)."""
    return len(word) > 1 and word[0] == "-" and word != "--"


def _option_set(words: list[str], name: str, operands: list[str]) -> set[str]:
    names: set[str] = set()
    for word in words:
        if word[1] == "-":
            names.add(word)
            option, eq, _ = word.partition("=")
            if eq:
                names.add(option)  # --force=yes is also --force
        else:
            names.update("-" + letter for letter in word[1:])
    aliases = _OPTION_ALIASES.get(name + " " + operands[0]) if operands else None
    aliases = aliases or _OPTION_ALIASES.get(name)
    if not aliases:
        return names
    unified = set()
    for option in names:
        if option not in aliases and option.startswith("--") and len(option) > 2 and "=" not in option:
            # GNU getopt and git accept any unambiguous prefix: `rm --rec --for` is `rm -r -f`. Erring
            # towards a match, a prefix of a listed spelling is taken as that spelling.
            option = next((full for full in aliases if full.startswith(option)), option)
        unified.add(aliases.get(option, option))
    return unified


def command_shape(argv: list[str]) -> tuple[str, list[str], set[str]]:
    """A command as (name, operands in order, set of options with their spellings unified)."""
    name = argv[0]
    operands = [word for word in argv[1:] if not _is_option(word)]
    options = _option_set([word for word in argv[1:] if _is_option(word)], name, operands)
    if name == "git" and operands[:1] == ["push"] and any(ref.startswith("+") for ref in operands[1:]):
        options.add("-f")  # `git push origin +main` force-pushes main
    return name, operands, options


PatternShape = tuple  # (name, operand predicates, options the command must all have, more operands allowed)


def pattern_shape(pattern: str) -> PatternShape | None:
    """A glob rule read as a command: `rm -rf*` is `rm` with -r and -f and any operands after; `rm -rf /`
    exactly the operand `/`. None when the pattern does not read as one command with a literal name and
    literal options (`*--no-verify*`, `curl * | sh`): those rules match the text only."""
    if any(char in pattern for char in ";&|<>()`$\\\n#"):
        return None
    if "'" in pattern or '"' in pattern:
        from cems_cli.command.words import simples

        commands = simples(pattern)[0]
        if len(commands) != 1 or commands[0].assignments or commands[0].redirects:
            return None
        words = commands[0].words
    else:
        words = pattern.split()
    if not words or _has_glob_syntax(words[0]) or _is_option(words[0]):
        return None
    open_ = words[-1].endswith("*")
    if open_:
        last = words[-1]
        if last == "*" or (_is_option(last) and last[:-1] in ("-", "--")):
            words = words[:-1]
        elif _is_option(last):
            words = [*words[:-1], last[:-1]]  # `-rf*`: these options, then anything
    name = words[0].rpartition("/")[2] or words[0]
    option_words = [word for word in words[1:] if _is_option(word)]
    if any(_has_glob_syntax(word) for word in option_words):
        return None
    operands = [word for word in words[1:] if not _is_option(word)]
    literal = [word for word in operands[:1] if not _has_glob_syntax(word)]
    return name, [compile_pattern(word) for word in operands], _option_set(option_words, name, literal), open_


def shape_matches(shape: PatternShape, command: tuple[str, list[str], set[str]]) -> bool:
    name, predicates, options, open_ = shape
    command_name, operands, command_options = command
    if command_name != name or len(predicates) > len(operands):
        return False
    if not open_ and len(predicates) != len(operands):
        return False
    return all(predicate(word) for predicate, word in zip(predicates, operands, strict=False)) and (
        options <= command_options or all(_has_option(option, command_options) for option in options)
    )


def _has_option(option: str, command_options: set[str]) -> bool:
    """`--force` is given as `--force` or as an abbreviation of it (`--forc`): GNU getopt takes any
    unambiguous prefix, and which prefixes are unambiguous depends on the command's other options."""
    if option in command_options:
        return True
    return option.startswith("--") and any(
        given.startswith("--") and len(given) > 2 and "=" not in given and option.startswith(given)
        for given in command_options)


def _values(field: str, tool_input: Mapping[str, Any], cwd: str | None) -> _Values:
    if not field:
        strings = [v for v in tool_input.values() if isinstance(v, str)]
        return _Values(strings or [""])
    value = tool_input.get(field)
    if not isinstance(value, str):
        return _Values([])
    if field == "command":
        return _command_values(value, cwd)
    if field in _PATH_FIELDS:
        return _Values(_path_candidates(value, cwd))
    return _Values([value])


def _command_values(command: str, cwd: str | None) -> _Values:
    """A shell command as `cems_cli.command.model` reads it: the raw line, then every command it runs
    (`commands`), what cannot be checked before it runs (`unchecked`) and the files it writes (`writes`)."""
    try:
        from cems_cli.command.plain import fast_commands

        # Most lines (`git status`, `cd x && pytest -q | tail`) need neither the model nor the parser:
        # importing them would cost ~1 ms and ~12 ms of a hook whose whole budget is ~5 ms.
        commands = fast_commands(command)
        if commands is not None:
            return _Values([command.strip()], commands)
        from cems_cli.command.model import analyse

        analysis = analyse(command)
    except Exception:  # a parser failure must not switch the rules off: the raw text is still matched
        values = _Values(_command_candidates(command), [])
        values.unchecked = ["the command line could not be parsed"]
        values.writes = []
        return values
    if analysis.parsed:
        # Parsed: the line and its commands. Splitting the raw text on `;` or `|` would read a quoted
        # `echo "a; rm -rf /"` as a second command, which the shell never runs.
        texts = [command.strip()]
    else:
        texts = _command_candidates(command)  # read in part: the plain-text splits add what it missed
    values = _Values(texts, analysis.commands)
    values.unchecked = analysis.unchecked
    values.writes = analysis.writes
    return values


def _write_values(command_values: _Values, cwd: str | None) -> _Values:
    """The files a shell command writes, as path candidates: what rules on Edit are matched against."""
    writes = command_values.writes
    if writes is None:  # a plain line, split without the model: ask it now, for the files it writes
        from cems_cli.command.plain import WRITERS

        # Unless no command in it writes files (`git status`): then importing the model (~1 ms) is saved.
        if not command_values.texts or not any(
                argv[0] in WRITERS for argv in command_values.commands or () if argv):
            writes = []
        else:
            from cems_cli.command.model import analyse

            writes = analyse(command_values.texts[0]).writes
    starts = [cwd]
    if writes and cwd and os.path.isabs(cwd):
        from cems_cli.command.folders import DIRECTORY_CHANGERS, folders

        commands = command_values.commands or []
        if any(argv[:1] and argv[0] in DIRECTORY_CHANGERS for argv in commands):
            # `cd migrations && echo x > 001.sql` writes migrations/001.sql: relative to each folder it goes
            # to (a `cd` chain past PATH_MAX gives None: then the paths as given)
            starts = list(folders(commands, cwd) or [cwd])
    paths: list[str] = []
    for target in writes:
        for folder in starts:
            path = target if folder in (None, cwd) or os.path.isabs(target) else os.path.join(folder, target)
            paths.extend(_path_candidates(path, cwd))
    return _Values(list(dict.fromkeys(paths)))


# --- decision -------------------------------------------------------------------------------------------


def _has_glob_syntax(text: str) -> bool:
    return "*" in text or "?" in text or "[" in text


def _tool_matches(rule_tool: str, tool_name: str) -> bool:
    if rule_tool == tool_name:
        return True
    family = _TOOL_FAMILIES.get(rule_tool)
    if family is not None:
        return tool_name in family
    # `mcp__github__*` cannot match `Bash`: checking the literal head first spares compiling the glob.
    return (_has_glob_syntax(rule_tool) and tool_name.startswith(_glob_literal_head(rule_tool))
            and compile_pattern(rule_tool)(tool_name))


# Cheap early "no" before compiling: a process lives for one tool call, so compiling hundreds of patterns
# (and importing `re` for regex rules) would cost more than the matching itself.


def _glob_literal_head(pattern: str) -> str:
    """The text before a glob's first wildcard: every match starts with it."""
    cut = pattern.find("*")
    if cut >= 0:
        pattern = pattern[:cut]
    if "?" in pattern or "[" in pattern:  # rare in rules: one scan above covers the usual `*`-only glob
        for meta in "?[":
            cut = pattern.find(meta)
            if cut >= 0:
                pattern = pattern[:cut]
    return pattern


def _class_end(pattern: str, start: int) -> int:
    """Index just past the character class opening at `start`, or -1 if it never closes."""
    i = start + 1
    if pattern.startswith("^", i):
        i += 1
    if pattern.startswith("]", i):  # a leading ] is a literal member
        i += 1
    while i < len(pattern):
        if pattern[i] == "\\":
            i += 2
        elif pattern[i] == "]":
            return i + 1
        else:
            i += 1
    return -1


def _group_end(pattern: str, start: int) -> int:
    """Index just past the group opening at `start` (nested groups, classes and escapes skipped), or -1."""
    depth, i = 0, start
    while i < len(pattern):
        char = pattern[i]
        if char == "\\":
            i += 2
            continue
        if char == "[":
            i = _class_end(pattern, i)
            if i < 0:
                return -1
            continue
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return -1


_ESCAPE_DIGITS = {"x": 2, "u": 4, "U": 8}


def _escape_end(pattern: str, start: int) -> int:
    # Includes the code of x41, u0041, N{name}, octal 101 and group numbers: those characters are not literal.
    kind = pattern[start + 1:start + 2]
    if kind in _ESCAPE_DIGITS:
        return start + 2 + _ESCAPE_DIGITS[kind]
    if kind == "N":
        close = pattern.find("}", start)
        return len(pattern) if close < 0 else close + 1
    end = start + 2
    if kind.isdigit():  # octal code or group reference: swallow every digit that may belong to it
        while end < len(pattern) and pattern[end].isdigit():
            end += 1
    return end


def _has_global_flags(pattern: str) -> bool:
    at = pattern.find("(?")
    while at >= 0:
        end = at + 2
        while end < len(pattern) and pattern[end] in "aiLmsux-":
            end += 1
        if end > at + 2 and pattern.startswith(")", end):
            return True
        at = pattern.find("(?", at + 2)
    return False


def regex_literals(pattern: str) -> list[str]:
    """Runs of plain characters that every `re.search` match of `pattern` contains, read from the top-level
    sequence; [] when unsure (top-level alternation, global flags such as `(?i)`). Errs towards fewer,
    shorter runs: anything unusual (lettered escapes, classes, groups, quantified characters) ends a run."""
    if _has_global_flags(pattern):
        return []
    runs: list[str] = []
    current: list[str] = []
    i, size = 0, len(pattern)
    while i < size:
        char = pattern[i]
        token: str | None = None
        if char == "|":
            return []
        if char == "\\":
            escaped = pattern[i + 1:i + 2]
            # `\.` is a literal dot; `\s`, `\b`, `\x41` are classes, anchors or codes: not plain characters
            token = escaped if escaped and not escaped.isalnum() else None
            i = _escape_end(pattern, i)
        elif char == "[":
            i = _class_end(pattern, i)
        elif char == "(":
            i = _group_end(pattern, i)
        else:
            token = None if char in ".^$*+?{}" else char
            i += 1
        if i < 0:
            return []
        if i < size and pattern[i] in "*+?{":
            token = None  # quantified: optional or repeated, not a fixed run
            if pattern[i] == "{":
                close = pattern.find("}", i)
                i = size if close < 0 else close + 1
            else:
                i += 1
            while i < size and pattern[i] in "?+":  # lazy / possessive suffix
                i += 1
        if token is None:
            if current:
                runs.append("".join(current))
                current.clear()
        else:
            current.append(token)
    if current:
        runs.append("".join(current))
    return runs


def _project_of(project: str | None | Callable[[], str | None], memo: list[str | None]) -> str | None:
    if not memo:
        try:
            memo.append(project() if callable(project) else project)
        except Exception:
            memo.append(None)  # an unreadable repository leaves project rules out; global rules still apply
    return memo[0]


def decide(
    rules: Iterable[Any],
    tool_name: str,
    tool_input: Mapping[str, Any],
    project: str | None | Callable[[], str | None] = None,
    cwd: str | None = None,
    on_timeout: str | Callable[[], str] = "deny",
) -> Decision | None:
    """The strictest matching rule (block > ask > warn; ties go to the earliest rule), or None.

    A regex rule not checked within the call's budget (REGEX_BUDGET_SECONDS) counts as matched, as an
    `unchecked` Decision, unless `on_timeout` is "allow" (it may be a zero-argument callable, called only
    when a rule ran out of time: reading the setting costs more than the matching).

    A glob rule matches when its pattern matches one of the candidate values whole, or, for a shell
    command, when one of the commands it runs has the rule's shape (`_Values.structural`). A rule on Edit
    (Write, MultiEdit…) also matches a shell command that writes one of its paths (`> f`, `sed -i`, `tee`).

    A shell command that cannot be checked before it runs (`eval "$x"`, `curl … | sh`, a command name from
    `$(…)`: `cems_cli.command.model`) is answered "ask", naming the first Bash block rule that applies, when
    no rule blocks it for sure: the user sees the command and decides. Without a Bash block rule such a
    command is not held up: no rule could be concerned by it.
    `project` may be a zero-argument callable: it is called at most once, and only when a project rule
    otherwise matches, because finding the project reads `.git/config` and imports pathlib.
    """
    if not isinstance(tool_name, str) or not hasattr(tool_input, "get"):
        return None
    best: Decision | None = None
    best_rank = 0
    project_memo: list[str | None] = []
    values_by_field: dict[str, _Values] = {}
    main = _MAIN_FIELDS.get(tool_name, "")
    regex_deadline: list[float] = []
    unchecked_by: Any = None  # the first Bash block rule, when the command cannot be checked
    timed_out: Any = None  # the strictest rule that ran out of time, first of its rank
    for rule in rules:
        rank = ACTION_RANK.get(rule.action, 0)
        if rank <= best_rank:
            continue
        try:
            rule_tool = rule.tool
            if tool_name == "Bash" and rule_tool in _EDIT_FAMILY and not rule.field:
                field = "\0writes"  # the files the command writes, matched like an Edit's file_path
                values = values_by_field.get(field)
                if values is None:
                    command = values_by_field.get("command") or _values("command", tool_input, cwd)
                    values_by_field["command"] = command
                    values = values_by_field[field] = _write_values(command, cwd)
            elif rule_tool != tool_name and not _tool_matches(rule_tool, tool_name):
                continue
            else:
                field = rule.field or main
                values = values_by_field.get(field)
                if values is None:
                    values = values_by_field[field] = _values(field, tool_input, cwd)
            if unchecked_by is None and values.unchecked and rank == ACTION_RANK["block"] and (
                field == "command" and (not rule.project or (_project_of(project, project_memo) or "").lower()
                                        == rule.project.lower())):
                unchecked_by = rule
            candidates = values.texts
            pattern = rule.pattern
            if rule.regex:
                literals = regex_literals(pattern)
                if literals and not any(all(text in value for text in literals) for value in candidates):
                    continue
                matched = _search_within(compile_pattern(pattern, True), candidates, regex_deadline)
            else:
                head = _glob_literal_head(pattern)
                first, space, rest = head.partition(" ")
                # No value starts with this word and no command is named by it (`/bin/rm` names `rm`):
                # most rules stop here, at one set lookup.
                if space and first not in values.firsts and (
                    "/" not in first or values.commands is None
                    or first.rpartition("/")[2] not in values.firsts
                ):
                    continue
                matched = None
                if not head or any(value.startswith(head) for value in candidates):
                    predicate = compile_pattern(pattern)
                    matched = next((value for value in candidates if predicate(value)), None)
                if matched is None and values.commands and (
                    space or (head == pattern and (first in values.firsts or "/" in first))
                ):
                    matched = values.structural(pattern, first, rest)
            if matched is None:
                continue
            if rule.project:
                current = _project_of(project, project_memo)
                if not current or current.lower() != rule.project.lower():
                    continue
        except TimeoutError:
            if timed_out is None or rank > ACTION_RANK.get(timed_out.action, 0):
                timed_out = rule
            continue
        except Exception:
            # One broken rule (say, a hand-edited snapshot with a bad regex) must not disable the others.
            continue
        best, best_rank = Decision(rule.action, rule, matched), rank
        if rank == ACTION_RANK["block"]:
            break
    if timed_out is not None and ACTION_RANK.get(timed_out.action, 0) > best_rank:
        policy = on_timeout() if callable(on_timeout) else on_timeout
        if policy != "allow":
            return Decision(timed_out.action, timed_out, "", unchecked=TIMED_OUT)
    if unchecked_by is not None and best_rank < ACTION_RANK["ask"]:
        command_values = values_by_field["command"]
        return Decision("ask", unchecked_by, command_values.texts[0] if command_values.texts else "",
                        unchecked="cannot be checked: " + "; ".join(command_values.unchecked))
    return best


def _on_alarm(signum: int, frame: Any) -> None:
    # The builtin TimeoutError: a class of our own would cost its creation on every hook start.
    raise TimeoutError("the regex budget of this tool call is spent")


def _search_within(predicate: Callable[[str], bool], values: list[str], deadline: list[float]) -> str | None:
    """The first value `predicate` (a regex search) accepts, within what is left of the tool call's regex
    budget; raises TimeoutError once it is spent. `deadline` holds the call's deadline once a search ran.

    `re` checks for signals while it backtracks, so an interval timer whose handler raises stops even a
    catastrophic search. Where there are no interval timers (Windows) or no signal handlers (a thread other
    than the main one), the search runs unbounded: `cems rule add` still refuses the known-bad patterns.
    """
    import time

    if not deadline:
        deadline.append(time.monotonic() + REGEX_BUDGET_SECONDS)
    remaining = deadline[0] - time.monotonic()
    if remaining <= 0:
        raise TimeoutError("the regex budget of this tool call is spent")
    try:
        # The C module: `signal` itself builds enums on import, a cost every regex tool call would pay.
        import _signal

        previous = _signal.signal(_signal.SIGALRM, _on_alarm)
    except (ImportError, AttributeError, ValueError):
        return next((value for value in values if predicate(value)), None)
    try:
        _signal.setitimer(_signal.ITIMER_REAL, remaining)
        try:
            return next((value for value in values if predicate(value)), None)
        finally:
            _signal.setitimer(_signal.ITIMER_REAL, 0)
    finally:
        _signal.signal(_signal.SIGALRM, _signal.SIG_DFL if previous is None else previous)

"""The values of a tool call a rule's pattern is matched against: a Bash line's sub-commands with their
wrappers stripped (and, once a rule needs them, the commands the shell model finds), a path as written,
resolved and relative, the files a command writes.

On the PreToolUse hook's path: stdlib only, the command model imported when a rule needs it."""

from __future__ import annotations

import os

from cems_cli.rules._shapes import _is_option, command_shape, pattern_shape, shape_matches

TYPE_CHECKING = False  # `typing` costs ~25 ms to import; annotations are strings anyway
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any


_PATH_FIELDS = frozenset({"file_path", "notebook_path", "path"})


# Words that only wrap the real command: `sudo git push` is still a `git push`.
_WRAPPERS = frozenset({"sudo", "env", "command", "exec", "nohup", "time", "builtin", "then", "do", "else",
                       "elif", "if", "while", "until", "!"})
_COMPOUND_SEPARATORS = ("&&", "||", "|&", ";", "|", "\n")


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

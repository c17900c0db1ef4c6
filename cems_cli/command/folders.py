"""Where a command line's relative paths land: `cd .claude && echo '{}' > settings.json` writes
`.claude/settings.json`, which no word of the line names. Used by the built-in guard and by rules on files.
Imports nothing: it runs in the PreToolUse hook."""

from __future__ import annotations

import os

DIRECTORY_CHANGERS = frozenset({"cd", "pushd"})
# Longer than any path the system opens (Linux PATH_MAX): a `cd` chain past it is an attack on the guard
# (normalising an ever longer path is quadratic: minutes for a long line, past the hook's timeout).
PATH_MAX = 4096


def resolve(word: str, cwd: str) -> str:
    """`word` as an absolute, normalised path, with `~` and `$HOME` expanded, relative to `cwd`."""
    home = os.path.expanduser("~")
    for spelling in ("${HOME}", "$HOME"):
        if word == spelling or word.startswith(spelling + "/"):
            word = home + word[len(spelling):]
    word = os.path.expanduser(word)
    return os.path.normpath(word if os.path.isabs(word) else os.path.join(cwd, word))


def folders(commands: list[list[str]], base: str) -> list[str] | None:
    """The folders a relative path of the line may be relative to: `base`, where it starts, and every
    folder a `cd` or `pushd` of it changes to. In any order, as a condition or a loop may take them: each
    is to be tried. None for a chain of `cd`s past PATH_MAX."""
    found = [base]
    current = base
    for argv in commands:
        if not argv or argv[0] not in DIRECTORY_CHANGERS:
            continue
        operands = [word for word in argv[1:] if not word.startswith(("-", "+"))]
        current = resolve(operands[0], current) if operands else os.path.expanduser("~")
        if len(current) > PATH_MAX:
            return None
        found.append(current)
    return list(dict.fromkeys(found))

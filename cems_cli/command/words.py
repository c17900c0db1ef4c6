"""A command line as words: its simple commands (the fast path, else tree-sitter), a command's name without
its directory, assignments, options and their values, and the names a line gives to programs."""

from __future__ import annotations

from cems_cli.command.plain import Simple, plain_simples

TYPE_CHECKING = False
if TYPE_CHECKING:
    from cems_cli.command.model import Analysis


def simples(text: str, depth: int = 0) -> tuple[list[Simple], bool]:
    """The simple commands of `text`: the fast path when it is enough, else tree-sitter."""
    found = plain_simples(text)
    if found is not None:
        for simple in found:
            simple.depth = depth
        return found, True
    from cems_cli.command.tree import tree_simples

    return tree_simples(text, depth)


def basename(word: str) -> str:
    """`/bin/rm` and `./rm` run `rm`; a word with a substitution is left whole."""
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

"""Command shapes: a rule such as `rm -r /` matches `rm -rf /`, `rm --recursive -f /` and `rm -R /`, as
the command's name, its operands and the set of its options (with each option's spellings)."""

from __future__ import annotations

from cems_cli.rules._compile import _has_glob_syntax, compile_pattern

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

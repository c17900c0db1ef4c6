"""The built-in guard's look at a shell command (`cems_cli.rules.guard`).

Two questions, answered on the command's text, conservatively (a false "yes" costs the agent a retry with
the Read tool; a false "no" costs the rules):

- Does it take rules or their hooks away through CEMS's own CLI (`cems rule rm`, `cems hooks uninstall`,
  `cems plugin uninstall`, `claude plugin uninstall cems`)? Those are the user's to run, in a terminal.
- Does it name a protected path (as written, with `~`, `$HOME` or relative to the session's folder, quotes
  and backslashes aside) and do anything but read it? Only commands that read (`cat`, `ls`, `grep`, …) with
  no redirection into a file and no command substitution are let through.
- Does it remove, move or re-own a folder that holds a protected path (`rm -rf ~/.local`,
  `cd ~/.local/share && rm -rf cems`, `mv ~/.claude /tmp`, `rm -rf ~/.local/share/c*`), unpack an archive
  into one (`tar -xf x.tar -C ~/.local/share`, `cd ~ && tar xf x.tar`, `unzip -d ~/.claude`), or copy or move
  something into a `.claude` folder (`cp -r /tmp/x .claude`: a settings file may come with it)?
- Does it start another Claude Code without CEMS's hooks: `claude --settings …` or `--setting-sources …`
  (settings that can turn hooks off or leave the user's out), or with its home, config folder or CEMS's
  variables changed (`HOME=/tmp claude -p …`, `env -i claude`, `CEMS_DISABLE=1 claude`)? And does it
  mention `disableAllHooks` at all? Those are the user's to run too.

Commands are split with the matcher's plain splitter (`split_compound`, `strip_prefixes`): a separator
inside quotes splits too, which can only find more. A path built at run time (`d=.local;
rm -r ~/$d/share/cems`, globs such as `~/.local/share/c?ms`) is not seen here; the snapshot's digest
still catches a rewritten snapshot.

A line with shell syntax beyond plain words (`R=cems; $R rule rm …`, `{rm,-rf,~/.local}`, `bash -c '…'`)
that mentions anything CEMS-related is also read with the shell command model (`cems_cli.command.model`):
every command it runs is checked for the CLI removals, and every file it writes or removes for the paths.
Plain lines skip the model (the text checks see all of them), as the matcher's fast path does.
"""

from __future__ import annotations

import os

from cems_cli.command.folders import DIRECTORY_CHANGERS, PATH_MAX, folders
from cems_cli.command.folders import resolve as _resolve
from cems_cli.rules._candidates import split_compound, strip_prefixes
from cems_cli.rules.guard import protected_paths

# Commands that only read what they are given (as long as nothing is redirected into a file).
_READERS = frozenset({
    "cat", "less", "more", "head", "tail", "ls", "stat", "file", "wc", "grep", "egrep", "fgrep", "rg", "ag",
    "diff", "cmp", "sha256sum", "sha1sum", "md5sum", "b2sum", "cksum", "du", "tree", "realpath", "readlink",
    "jq", "find", "test", "[", "echo", "printf", "pwd", "cd", "true", "which", "type", "nl", "od", "xxd",
    "hexdump", "strings", "column", "sort", "uniq", "cut", "tr", "basename", "dirname", "bat",
})
_FIND_WRITES = frozenset({"-delete", "-exec", "-execdir", "-ok", "-okdir", "-fprint", "-fprint0", "-fprintf",
                          "-fls"})
_SORT_WRITES = ("-o", "--output")
_HARMLESS_REDIRECTS = ("&>/dev/null", "2>/dev/null", "1>/dev/null", ">/dev/null", "2>&1", "1>&2", ">&2")
_SUBSTITUTIONS = ("$(", "`", "<(", ">(")
_QUOTES = "'\""
# Commands that remove, move or re-own what their operands name; a folder above a protected path counts.
_DESTROYERS = frozenset({"rm", "rmdir", "mv", "unlink", "shred", "chmod", "chown", "chgrp", "chattr", "trash",
                         "trash-put", "gio", "srm", "wipe", "rsync", "find"})
_GLOB = "*?["
# What a command that takes rules or hooks away must contain; most commands skip the closer look.
_REMOVAL_WORDS = ("rm", "remove", "uninstall", "disable")
# The library's ways to remove a rule (`python -c "import cems; cems.Memory().rules.remove(…)"`).
_LIBRARY_REMOVALS = ("rules.remove(", "remove_rule(", "rules=True")
# Names of files that matter wherever they are (`.claude/settings.json` of any project).
_NAME_MARKERS = (".claude/settings.json", ".claude/settings.local.json", "rules.snapshot.json")


def _cli_removal(words: list[str]) -> bool:
    """`cems rule rm …`, `cems uninstall`, `cems hooks uninstall`, `cems plugin uninstall`,
    `claude plugin uninstall cems`
    (also behind `sudo`, `xargs`, `python -m cems_cli.cli.app`, …).

    Linear in the words: what follows each word is worked out in one backward pass. Looking at the rest of
    the line again for every `$…` word was quadratic: 8,000 `$(a)` took 9 s, past the hook's timeout."""
    size = len(words)
    programs = ("cems", "cems_cli.cli.app", "cems_cli", "claude")
    candidates = [index for index, word in enumerate(words)
                  if word.startswith("$") or os.path.basename(word) in programs]
    if not candidates:
        return False
    # next_operand[k]: the first word at k or after that is not an option
    next_operand: list[str | None] = [None] * (size + 1)
    for index in range(size - 1, -1, -1):
        word = words[index]
        next_operand[index] = next_operand[index + 1] if word.startswith("-") else word
    rule_rm = _in_order_after(words, next_operand, "rule", ("rm", "remove"))
    hooks_out = _in_order_after(words, next_operand, "hooks", ("uninstall",))
    plugin_out = _in_order_after(words, next_operand, "plugin", ("uninstall", "disable"))
    claude_plugin_out = _in_order_after(words, next_operand, "plugin", ("uninstall", "disable", "remove"))
    names_cems = [False] * (size + 1)  # names_cems[k]: a word at k or after mentions cems
    for index in range(size - 1, -1, -1):
        names_cems[index] = names_cems[index + 1] or "cems" in words[index]
    for index in candidates:
        word = words[index]
        name = os.path.basename(word)
        # A variable may name the program (`c=cems; $c rule rm …`): it is taken for `cems`.
        if name in ("cems", "cems_cli.cli.app", "cems_cli") or word.startswith("$"):
            if next_operand[index + 1] == "uninstall":  # `cems uninstall`: hooks, MCP server, plugin out
                return True
            if rule_rm[index] or hooks_out[index] or plugin_out[index]:
                return True
        if name == "claude" and claude_plugin_out[index] and names_cems[index + 1]:
            return True
    return False


def _in_order_after(words: list[str], next_operand: list[str | None], first: str,
                    then: tuple[str, ...]) -> list[bool]:
    """For each index i: after i, `first`, then (options aside) one of `then` as the next word (`rule rm`,
    `rule --json rm`), judged at the first `first` after i."""
    found = [False] * len(words)
    current = False
    for index in range(len(words) - 1, -1, -1):
        found[index] = current
        if words[index] == first:
            current = next_operand[index + 1] in then
    return found


def _markers(protected: list[str], cwd: str | None) -> tuple[list[str], list[str]]:
    """Spellings of the protected paths in a command: absolute ones (found anywhere in the text) and
    relative ones (found only as a whole word, so that `cems` in `cems search` is not CEMS's home)."""
    home = os.path.expanduser("~")
    absolute: list[str] = list(_NAME_MARKERS)
    relative: list[str] = []
    for path in protected:
        absolute.append(path)
        if path.startswith(home + os.sep):
            rest = path[len(home):]
            absolute.extend(("~" + rest, "$HOME" + rest, "${HOME}" + rest))
            relative.append(rest.lstrip(os.sep))
        if cwd and os.path.isabs(cwd) and path.startswith(cwd.rstrip(os.sep) + os.sep):
            relative.append(os.path.relpath(path, cwd))
    return absolute, relative


_BEFORE_WORD = " \t\n;&|(<>='\""
_AFTER_WORD = " \t\n;&|)<>/'\"*?["  # a glob right after the name may still reach it (`cems*`)


def _names_word(text: str, word: str, whole: bool = True) -> bool:
    """`word` in `text`, ending where a path component ends (`cems` is not `cems-backup`), and with
    `whole`, starting where a word starts (a relative path)."""
    start = text.find(word)
    while start >= 0:
        before = text[start - 1] if start else " "
        end = start + len(word)
        after = text[end] if end < len(text) else " "
        if (not whole or before in _BEFORE_WORD) and after in _AFTER_WORD:
            return True
        start = text.find(word, start + 1)
    return False


def _unquoted(text: str) -> str:
    # `c""ems`, `c\ems` and `'cems'` are all `cems` to the shell.
    return text.replace('"', "").replace("'", "").replace("\\", "")


def _mentions(command: str, cwd: str | None, protected: list[str]) -> bool:
    if cwd and any(cwd == root or cwd.startswith(root.rstrip(os.sep) + os.sep) for root in protected):
        return True  # the session itself runs inside a protected folder: every relative path is in it
    absolute, relative = _markers(protected, cwd)
    for text in {command, _unquoted(command)}:
        if any(_names_word(text, marker, whole=False) for marker in absolute) or any(
            _names_word(text, marker) for marker in relative if marker and marker != "."
        ):
            return True
    return False


def _holds_protected(operand: str, protected: list[str]) -> bool:
    """Whether removing or moving `operand` (absolute) would take a protected path with it; a glob counts
    as everything its literal head may start (`~/.local/share/c*` holds `~/.local/share/cems`)."""
    cut = min((operand.find(char) for char in _GLOB if char in operand), default=-1)
    for root in protected:
        if cut >= 0:
            if root.startswith(operand[:cut]) or operand[:cut].startswith(root):
                return True
        elif root == operand or root.startswith(operand.rstrip(os.sep) + os.sep):
            return True
    return False


def _inside_protected(path: str, protected: list[str]) -> bool:
    """`path` (absolute, normalised) is a file or folder within a protected folder."""
    return any(path.startswith(root.rstrip(os.sep) + os.sep) for root in protected)


def _destroys(command: str, cwd: str | None, protected: list[str]) -> bool:
    """A command that removes, moves or re-owns a protected path or a folder above one, following `cd`."""
    current = cwd if cwd and os.path.isabs(cwd) else os.getcwd()
    for part in split_compound(command):
        words = [_unquoted(word) for word in strip_prefixes(part).split()]
        words = [word for word in words if word]
        if not words:
            continue
        name = os.path.basename(words[0])
        if name == "cd":
            operands = [word for word in words[1:] if not word.startswith("-")]
            current = _resolve(operands[0], current) if operands else os.path.expanduser("~")
            if len(current) > PATH_MAX:
                # `cd a; cd a; …` thousands of times: normalising an ever longer path is quadratic (minutes
                # for a long line, past the hook's timeout, which lets the call run). No real folder is
                # that deep; what such a line removes afterwards is taken as CEMS's.
                changers = _DESTROYERS | _UNPACKERS.keys()
                return any(os.path.basename(rest.split()[0]) in changers
                           for rest in split_compound(command) if rest.split())
            continue
        if name in _UNPACKERS:
            folder = _unpacks_into(name, words, current)
            if folder is not None and (_holds_protected(folder, protected) or _is_claude_folder(folder)):
                return True
            continue
        if name in _COPIERS and _copies_into_claude_folder(words, current):
            return True
        if name not in _DESTROYERS:
            continue
        if name == "find" and not any(word in _FIND_WRITES for word in words):
            continue
        operands = [word for word in words[1:] if not word.startswith("-")]
        if name == "mv":
            operands = operands[:-1]  # the destination is written into, not removed (`_mentions` sees it)
        for word in operands:
            resolved = _resolve(word, current)
            # Inside a protected folder too: after `cd ~/.local; cd share; cd cems`, `rm config.toml`
            # names no protected path in its text.
            if _holds_protected(resolved, protected) or _inside_protected(resolved, protected):
                return True
    return False


# Archive tools, and the option naming the folder they unpack into (else the current one).
_UNPACKERS = {"tar": ("-C", "--directory"), "bsdtar": ("-C", "--directory"), "unzip": ("-d", ""),
              "7z": ("-o", ""), "cpio": ("-D", "--directory")}
# Commands whose last operand (or -t folder) receives what they copy or move.
_COPIERS = frozenset({"cp", "mv", "install", "rsync", "ln", "scp"})


def _unpacks_into(name: str, words: list[str], current: str) -> str | None:
    """The folder an unpacking command writes into, or None when it does not unpack (`tar -tf`, `tar -cf`)."""
    if name in ("tar", "bsdtar"):
        mode = next((word for word in words[1:] if not word.startswith("--")), "")
        long_extract = any(word in ("--extract", "--get") for word in words[1:])
        if not long_extract and "x" not in mode.lstrip("-"):
            return None
    short, long = _UNPACKERS[name]
    folder = None
    for index, word in enumerate(words[1:], start=1):
        if word == short or (long and word == long):
            folder = words[index + 1] if index + 1 < len(words) else None
        elif long and word.startswith(long + "="):
            folder = word[len(long) + 1:]
        elif name == "7z" and word.startswith("-o") and len(word) > 2:
            folder = word[2:]
    return _resolve(folder, current) if folder else current


def _is_claude_folder(path: str) -> bool:
    return os.path.basename(path.rstrip(os.sep)) == ".claude"


def _copies_into_claude_folder(words: list[str], current: str) -> bool:
    """`cp -r /tmp/x .claude`, `mv /tmp/s .claude/`, `cp -t .claude f`: a settings file may be among what
    lands there."""
    operands = [word for word in words[1:] if not word.startswith("-")]
    targets = [words[index + 1] for index, word in enumerate(words[:-1])
               if word in ("-t", "--target-directory")]
    targets += [word.partition("=")[2] for word in words if word.startswith("--target-directory=")]
    if not targets and len(operands) >= 2:
        targets = operands[-1:]
    return any(_is_claude_folder(_resolve(target, current)) for target in targets)


def _only_reads(command: str) -> bool:
    text = command
    for harmless in _HARMLESS_REDIRECTS:
        text = text.replace(harmless, "")
    if ">" in text or any(substitution in text for substitution in _SUBSTITUTIONS):
        return False
    for part in split_compound(command):
        words = [word.strip(_QUOTES) for word in strip_prefixes(part).split()]
        if not words:
            continue
        name = os.path.basename(words[0])
        if name not in _READERS:
            return False
        if name == "find" and any(word in _FIND_WRITES for word in words):
            return False
        if name == "sort" and any(word.startswith(_SORT_WRITES) for word in words[1:]):
            return False
    return True


def check_command(command: str, cwd: str | None) -> tuple[str, str] | None:
    """("cli", the command) when it takes rules or hooks away through a CLI; ("files", the command) when it
    may change a protected path; None otherwise."""
    plain = _unquoted(command)
    if any(call in plain for call in _LIBRARY_REMOVALS) or _HOOKS_OFF in plain:
        return "cli", command
    if "claude" in plain:
        found = _hookless_claude(command)
        if found is not None:
            return "cli", found
    if any(word in plain for word in _REMOVAL_WORDS):
        for part in split_compound(command):
            words = [_unquoted(word) for word in part.split()]
            if _cli_removal(words):
                return "cli", part
    protected = protected_paths()
    if _mentions(command, cwd, protected) and not _only_reads(command):
        return "files", command
    if _destroys(command, cwd, protected):
        return "files", command
    return _model_check(command, plain, cwd, protected)


# The settings key that turns every hook off, CEMS's included: no command of the agent's needs to name it.
_HOOKS_OFF = "disableAllHooks"
# `claude` options that load other settings (which may turn hooks off) or leave the user's settings out.
_CLAUDE_SETTINGS_OPTIONS = ("--settings", "--setting-sources")
# Variables that, changed for a `claude` process, make it read other settings or another CEMS home.
_CLAUDE_ENV = ("HOME", "CLAUDE_CONFIG_DIR", "XDG_DATA_HOME", "XDG_CONFIG_HOME")


def _changes_claude_env(word: str) -> bool:
    """`HOME=/tmp`, `CEMS_DISABLE=1`, `export CLAUDE_CONFIG_DIR=…`'s word, and `unset HOME`'s operand."""
    name = word.partition("=")[0]
    return name in _CLAUDE_ENV or name.startswith("CEMS_")


def _hookless_claude(command: str) -> str | None:
    """A `claude` run that may start without CEMS's hooks: with `--settings`/`--setting-sources`, under
    `env -i`/`env -u`, or on a line that changes HOME, CLAUDE_CONFIG_DIR, XDG_*_HOME or a CEMS_ variable
    (as `A=1 claude`, `export A=1; claude`, `unset HOME; claude`). Read on the text: a quoted separator
    splits too, which can only find more."""
    parts = [[_unquoted(word) for word in part.split()] for part in split_compound(command)]
    runs = [words for words in parts if any(os.path.basename(word) == "claude" for word in words)]
    if not runs:
        return None
    for words in runs:
        at = next(index for index, word in enumerate(words) if os.path.basename(word) == "claude")
        before, after = words[:at], words[at + 1:]
        if any(word.startswith(_CLAUDE_SETTINGS_OPTIONS) for word in after):
            return " ".join(words)
        if "env" in (os.path.basename(word) for word in before) and any(
                word.startswith(("-i", "-u", "--ignore-environment", "--unset")) or word == "-"
                for word in before):
            return " ".join(words)
    for words in parts:
        exporting = words[:1] in (["export"], ["declare"], ["typeset"], ["unset"], ["env"], ["local"])
        for word in words:
            if ("=" in word or exporting) and _changes_claude_env(word):
                return " ".join(runs[0])
    return None


# A line is read with the model only when it may concern CEMS: one of these, quotes aside, is in it.
_RELEVANT = ("cems", "claude", "rule", "HOME", "~", ".local", "share", "settings", "plugins")


def _model_check(command: str, plain: str, cwd: str | None, protected: list[str]) -> tuple[str, str] | None:
    try:
        from cems_cli.command.plain import WRITERS, fast_commands

        commands = fast_commands(command)
        if commands is not None:
            names = {argv[0] for argv in commands if argv}
            if names.isdisjoint(DIRECTORY_CHANGERS) or names.isdisjoint(WRITERS):
                return None  # plain words that stay in one folder or write nothing: the text checks saw all
            if folders(commands, "/") is None:
                return "files", command  # a `cd` chain past PATH_MAX, then a write (see `_destroys`)
        if not any(word in plain for word in _RELEVANT) and not any(
            os.path.basename(root) in plain for root in protected
        ):
            return None
        from cems_cli.command.model import analyse

        analysis = analyse(command)
    except Exception:  # a parser failure leaves the text checks' answer
        return None
    for argv in analysis.commands:
        if _cli_removal([_unquoted(word) for word in argv]):
            return "cli", " ".join(argv)
    # Relative to where the line starts and to every folder it `cd`s to (`cd .claude && echo > settings.json`)
    starts = folders(analysis.commands, cwd if cwd and os.path.isabs(cwd) else os.getcwd())
    if starts is None:
        return "files", command
    for target in analysis.writes:
        for folder in starts:
            resolved = _resolve(target, folder)
            if _holds_protected(resolved, protected) or _inside_protected(resolved, protected) or (
                    _is_settings_file(resolved)):
                return "files", target
    return None


def _is_settings_file(path: str) -> bool:
    head, name = os.path.split(path)
    return name in ("settings.json", "settings.local.json") and os.path.basename(head) == ".claude"

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

# Words that only wrap the real command: `sudo git push` is still a `git push`.
_WRAPPERS = frozenset({"sudo", "env", "command", "exec", "nohup", "time", "builtin", "then", "do", "else",
                       "elif", "if", "while", "until", "!"})
_COMPOUND_SEPARATORS = ("&&", "||", "|&", ";", "|", "\n")


class Decision:
    """The winning rule for one tool call: what to do, which rule said so, and the value it matched."""

    __slots__ = ("action", "rule", "value")

    def __init__(self, action: str, rule: Any, value: str) -> None:
        self.action = action
        self.rule = rule
        self.value = value

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Decision):
            return NotImplemented
        return (self.action, self.rule, self.value) == (other.action, other.rule, other.value)

    def __hash__(self) -> int:
        return hash((self.action, self.value))

    def __repr__(self) -> str:
        rule_id = getattr(self.rule, "id", self.rule)
        return f"Decision(action={self.action!r}, rule={rule_id!r}, value={self.value!r})"


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
    return list(dict.fromkeys(c for c in candidates if c))


def _path_candidates(path: str, cwd: str | None) -> list[str]:
    candidates = [path]
    # Let `migrations/*` match an absolute path inside the session's directory.
    if cwd and os.path.isabs(path) and os.path.isabs(cwd):
        relative = os.path.relpath(path, cwd)
        if not relative.startswith(".."):
            candidates.append(relative)
    return candidates


def candidate_values(field: str, tool_input: Mapping[str, Any], cwd: str | None = None) -> list[str]:
    """The strings a pattern is tried against. Non-string values yield nothing, so they never match."""
    if not field:
        strings = [v for v in tool_input.values() if isinstance(v, str)]
        return strings or [""]
    value = tool_input.get(field)
    if not isinstance(value, str):
        return []
    if field == "command":
        return _command_candidates(value)
    if field in _PATH_FIELDS:
        return _path_candidates(value, cwd)
    return [value]


# --- decision -------------------------------------------------------------------------------------------


def _has_glob_syntax(text: str) -> bool:
    return "*" in text or "?" in text or "[" in text


def _tool_matches(rule_tool: str, tool_name: str) -> bool:
    if rule_tool == tool_name:
        return True
    return _has_glob_syntax(rule_tool) and compile_pattern(rule_tool)(tool_name)


# Cheap early "no" before compiling: a process lives for one tool call, so compiling hundreds of patterns
# (and importing `re` for regex rules) would cost more than the matching itself.


def _glob_literal_head(pattern: str) -> str:
    """The text before a glob's first wildcard: every match starts with it."""
    for meta in "*?[":
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
) -> Decision | None:
    """The strictest matching rule (block > ask > warn; ties go to the earliest rule), or None.

    `project` may be a zero-argument callable: it is called at most once, and only when a project rule
    otherwise matches, because finding the project reads `.git/config` and imports pathlib.
    """
    if not isinstance(tool_name, str) or not hasattr(tool_input, "get"):
        return None
    best: Decision | None = None
    best_rank = 0
    project_memo: list[str | None] = []
    candidates_by_field: dict[str, list[str]] = {}
    for rule in rules:
        rank = ACTION_RANK.get(rule.action, 0)
        if rank <= best_rank:
            continue
        try:
            if not _tool_matches(rule.tool, tool_name):
                continue
            field = main_field(tool_name, rule.field)
            candidates = candidates_by_field.get(field)
            if candidates is None:
                candidates = candidates_by_field[field] = candidate_values(field, tool_input, cwd)
            regex = bool(rule.regex)
            if regex:
                literals = regex_literals(rule.pattern)
                if literals and not any(all(text in value for text in literals) for value in candidates):
                    continue
            else:
                head = _glob_literal_head(rule.pattern)
                if head and not any(value.startswith(head) for value in candidates):
                    continue
            predicate = compile_pattern(rule.pattern, regex)
            matched = next((value for value in candidates if predicate(value)), None)
            if matched is None:
                continue
            if rule.project:
                current = _project_of(project, project_memo)
                if not current or current.lower() != rule.project.lower():
                    continue
        except Exception:
            # One broken rule (say, a hand-edited snapshot with a bad regex) must not disable the others.
            continue
        best, best_rank = Decision(rule.action, rule, matched), rank
        if rank == ACTION_RANK["block"]:
            break
    return best

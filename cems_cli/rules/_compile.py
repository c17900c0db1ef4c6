"""A rule's pattern as a predicate, compiled once per process, and the cheap early "no" that spares most
rules the compiling: the literal text every match must hold.

On the PreToolUse hook's path: imports nothing at module level (`re` and `fnmatch` only when a pattern
needs them)."""

from __future__ import annotations

TYPE_CHECKING = False  # `typing` costs ~25 ms to import; annotations are strings anyway
if TYPE_CHECKING:
    from collections.abc import Callable


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


def _has_glob_syntax(text: str) -> bool:
    return "*" in text or "?" in text or "[" in text


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

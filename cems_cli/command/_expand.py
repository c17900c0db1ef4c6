"""Static expansion of a word's text, as Bash computes it before the command runs and without running
anything: escapes in and out of double quotes, `$'…'`, brace expansion, field splitting on IFS.

Pure string functions: the tree walk (`cems_cli.command.tree`) gives them the pieces of each word."""

from __future__ import annotations

import re

MAX_BRACE_WORDS = 256  # `{a,b}{c,d}…`: past this many words a brace word is left as written


# A piece of a word: (text, quoted, static, split); `split`: an unquoted expansion, field-split later.
Piece = tuple


# A backslash and the character it escapes (outside quotes: any; inside double quotes: only these five);
# a backslash-newline is a line continuation: both vanish.
_ESCAPED_UNQUOTED = re.compile(r"\\(.)", re.DOTALL)
_ESCAPED_DOUBLE = re.compile(r'\\([$`"\\\n])')


def _escaped(match: re.Match[str]) -> str:
    return "" if match[1] == "\n" else match[1]


def _unescape_unquoted(text: str) -> str:
    return _ESCAPED_UNQUOTED.sub(_escaped, text) if "\\" in text else text


def _unescape_double(text: str) -> str:
    return _ESCAPED_DOUBLE.sub(_escaped, text) if "\\" in text else text


_C_ESCAPES = {"a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b", "f": "\f", "n": "\n", "r": "\r", "t": "\t",
              "v": "\v", "\\": "\\", "'": "'", '"': '"', "?": "?"}
_HEX_DIGITS = {"x": 2, "u": 4, "U": 8}


def ansi_c(body: str) -> str:
    """The value of `$'body'`: `$'\\x72m'` is `rm` to the shell, so it must be to the rules too."""
    out: list[str] = []
    i, n = 0, len(body)
    while i < n:
        char = body[i]
        if char != "\\" or i + 1 >= n:
            out.append(char)
            i += 1
            continue
        kind = body[i + 1]
        i += 2
        if kind in _C_ESCAPES:
            out.append(_C_ESCAPES[kind])
        elif kind in "01234567":
            end = i
            while end < n and end - i < 2 and body[end] in "01234567":
                end += 1
            out.append(chr(int(body[i - 1:end], 8) & 0xFF))
            i = end
        elif kind in _HEX_DIGITS:
            end = i
            while end < n and end - i < _HEX_DIGITS[kind] and body[end] in "0123456789abcdefABCDEF":
                end += 1
            code = int(body[i:end], 16) if end > i else -1
            out.append(chr(code) if 0 <= code < 0x110000 else "\\" + kind + body[i:end])
            i = end
        elif kind == "c" and i < n:
            out.append(chr(ord(body[i]) & 0x1F))
            i += 1
        else:
            out.append("\\" + kind)
    return "".join(out)


def brace_expand(text: str, limit: int = MAX_BRACE_WORDS) -> list[str]:
    """Bash brace expansion of an unquoted word: `{rm,-rf,/}` → rm -rf /, `a{1..3}` → a1 a2 a3.
    Hand-written: no library does it; tree-sitter-bash parses only `{1..3}` and leaves `{a,b}` as text."""
    results = [text]
    done: list[str] = []
    while results:
        word = results.pop()
        expanded = _expand_first_brace(word)
        if expanded is None:
            done.append(word)
        else:
            results.extend(reversed(expanded))
        if len(done) + len(results) > limit:
            return [text]
    return done


def _expand_first_brace(word: str) -> list[str] | None:
    start = 0
    while True:
        open_ = word.find("{", start)
        if open_ < 0:
            return None
        depth, i, commas = 0, open_, []
        close = -1
        while i < len(word):
            char = word[i]
            if char == "{":
                depth += 1
            elif char == "}":
                depth -= 1
                if depth == 0:
                    close = i
                    break
            elif char == "," and depth == 1:
                commas.append(i)
            i += 1
        if close < 0:
            return None
        head, body, tail = word[:open_], word[open_ + 1:close], word[close + 1:]
        if commas:
            parts, last = [], open_ + 1
            for comma in commas:
                parts.append(word[last:comma])
                last = comma + 1
            parts.append(word[last:close])
            return [head + part + tail for part in parts]
        ends = body.split("..")
        if len(ends) in (2, 3) and all(ends):
            sequence = _sequence(ends)
            if sequence is not None:
                return [head + item + tail for item in sequence]
        start = open_ + 1


def _sequence(ends: list[str]) -> list[str] | None:
    first, last = ends[0], ends[1]
    step_text = ends[2] if len(ends) == 3 else "1"
    try:
        step = abs(int(step_text)) or 1
        if first.lstrip("-").isdigit() and last.lstrip("-").isdigit():
            a, b = int(first), int(last)
            if abs(b - a) // step > MAX_BRACE_WORDS:
                return None
            values = range(a, b + 1, step) if a <= b else range(a, b - 1, -step)
            return [str(v) for v in values]
        if len(first) == 1 and len(last) == 1:
            a, b = ord(first), ord(last)
            values = range(a, b + 1, step) if a <= b else range(a, b - 1, -step)
            return [chr(v) for v in values]
    except ValueError:
        return None
    return None


def _split_by_ifs(value: str, ifs: str | None, source: str) -> Piece:
    """An unquoted expansion after the line set IFS (`IFS=,; x=rm,-rf,/; $x` runs `rm -rf /`): its value
    with every IFS character made a blank, for `fields` to split on. Blanks not in IFS split too, which can
    only find more commands; an IFS only known at run time leaves the word not static."""
    if ifs is None:
        return (source, False, False, False)
    if ifs == "":
        return (value, False, True, False)  # no field splitting at all
    return (value.translate({ord(char): " " for char in ifs}), False, True, True)


def fields(pieces: list[Piece]) -> list[tuple[str, bool]]:
    """The words a word's pieces make: brace expansion of unquoted literal text, field splitting of
    unquoted expansions. Each word comes with whether it is fully static."""
    if not pieces:
        return []
    static = all(piece[2] for piece in pieces)
    literal_braces = any(not piece[1] and piece[2] and not piece[3] and "{" in piece[0] for piece in pieces)
    if literal_braces and static and not any(piece[3] for piece in pieces):
        # Quoted text must not take part in brace expansion: mark its braces and commas, expand, restore.
        marked = "".join(piece[0] if not piece[1] else piece[0].translate(_HIDE) for piece in pieces)
        return [(word.translate(_SHOW), True) for word in brace_expand(marked)]
    words: list[tuple[str, bool]] = []
    current: list[str] = []
    has_word = False
    for text, quoted, _, split in pieces:
        if not split:
            current.append(text)
            has_word = has_word or quoted or bool(text)
            continue
        parts = text.split()
        if text[:1].isspace() and has_word:
            words.append(("".join(current), static))
            current, has_word = [], False
        for index, part in enumerate(parts):
            if index:
                words.append(("".join(current), static))
                current = []
            current.append(part)
            has_word = True
        if text[-1:].isspace() and has_word:
            words.append(("".join(current), static))
            current, has_word = [], False
    if has_word:
        words.append(("".join(current), static))
    return words


_HIDE = str.maketrans({"{": "\ue000", "}": "\ue001", ",": "\ue002"})
_SHOW = str.maketrans({"\ue000": "{", "\ue001": "}", "\ue002": ","})

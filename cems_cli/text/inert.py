"""Stored text made inert where it leaves CEMS: memory text is data, never markup or commands.

A memory may come from a hostile repository (a captured session, an imported file, a teammate's shared
memory, the agent itself), so what it says must not act on what reads it:

- `for_model`: text injected into the agent's context (the prompt hook's `<memory-recall>`, the session's
  `<memory-profile>`, MCP results, rule reasons). Every `<` becomes `‹` (U+2039), so no memory can close the
  block it sits in or open a `<system-reminder>` (or any tag, comment, CDATA section or processing
  instruction) of its own; the fullwidth and small less-than signs and ≮, which decompose into `<`, go the
  same way. Every `<`, not only those of a tag-like sequence: a pattern of "what looks like a tag" is what an
  attacker bypasses (zero-width characters, odd spacing, names nobody listed); `‹` keeps `Vec<String>` and
  `a < b` readable. Control characters are made visible as for a terminal: hook output is also shown to the
  person.
- `for_terminal`: text the CLI prints. C0 controls but newline and tab, DEL and C1 controls become visible
  symbols (ESC is `␛`), so no escape sequence reaches the terminal (OSC 52 writes the clipboard, OSC 8 makes
  links, CSI moves the cursor and rewrites what was printed); bidi overrides and isolates, which reorder what
  is shown ("Trojan Source"), become U+FFFD; line and paragraph separators become newlines. Rich markup is
  a separate matter: print memory text as `rich.text.Text` or with `markup=False`.
- `json_for_terminal`: JSON text whose C1 controls, DEL, bidi controls and line/paragraph separators are
  written as \\uXXXX escapes (`json.dumps(ensure_ascii=False)` escapes only C0): the same JSON value, inert.

Hand-written (stdlib): a table of replacements each. A short text goes through `str.translate`; a long one
through one regex character class, which scans in C and calls back only where a character must change: on
a 1.4 kB recall block with a few `<` ~30 µs, where `str.translate` took ~250 µs (its fast path is for ASCII
results only), on a loaded 2-core machine. Short texts never import `re`: the PreToolUse hook, which shows
a rule's reason, must not (tests/integration/test_pre_tool_use_hook.py).
"""

from __future__ import annotations

TYPE_CHECKING = False  # `typing` costs the PreToolUse hook milliseconds
if TYPE_CHECKING:
    from collections.abc import Callable

_CONTROL_PICTURES = 0x2400  # U+2400..U+241F: the visible symbols of C0 controls (␀ … ␟), U+2421 ␡ for DEL
_REPLACEMENT = "\ufffd"
_BIDI = (*range(0x202A, 0x202F), *range(0x2066, 0x206A))  # LRE RLE PDF LRO RLO, LRI RLI FSI PDI
# Every character whose compatibility decomposition (NFKD) holds `<`: a reader that normalises would turn
# it back into a tag. Fullwidth and small less-than signs, and NOT LESS-THAN (`<` + U+0338).
LESS_THAN_SIGNS = ("<", "\uff1c", "\ufe64", "\u226e")
MODEL_LESS_THAN = "\u2039"  # ‹ (NFKC keeps it)


def _terminal_table() -> dict[int, str]:
    kept = (0x09, 0x0A)  # tab, newline
    table = {code: chr(_CONTROL_PICTURES + code) for code in range(0x20) if code not in kept}
    table[0x7F] = "\u2421"
    table.update({code: _REPLACEMENT for code in range(0x80, 0xA0)})
    table.update({code: _REPLACEMENT for code in _BIDI})
    # Line and paragraph separators: line breaks to some readers and not to others, so a newline to all.
    table.update({0x2028: "\n", 0x2029: "\n"})
    return table


def _replacer(table: dict[int, str]) -> Callable[[str], str]:
    """A function replacing each character of `table` by its value: the Latin-1 ones through one regex
    character class, the dozen others by `str.replace` where present. A class holding characters past
    U+00FF compiles to a 64k-entry map (a millisecond or more at every start, for a hook)."""
    import re

    by_char = {chr(code): value for code, value in table.items()}
    pattern = re.compile("[" + "".join(re.escape(c) for c in sorted(by_char) if ord(c) < 0x100) + "]")
    others = [(c, value) for c, value in sorted(by_char.items()) if ord(c) >= 0x100]

    def replace(text: str) -> str:
        text = pattern.sub(lambda found: by_char[found.group()], text)
        for char, value in others:
            if char in text:
                text = text.replace(char, value)
        return text

    return replace


_TERMINAL = _terminal_table()
_MODEL = {**_TERMINAL, **{ord(sign): MODEL_LESS_THAN for sign in LESS_THAN_SIGNS}}
_JSON = {code: f"\\u{code:04x}" for code in (*range(0x7F, 0xA0), *_BIDI, 0x2028, 0x2029)}
SHORT = 512  # characters: below this, str.translate (no regex to compile, no `re` to import)
_REPLACERS: dict[int, Callable[[str], str]] = {}  # compiled on first use, by id of the table


def _apply(table: dict[int, str], text: str) -> str:
    if len(text) <= SHORT:
        return text.translate(table)
    replace = _REPLACERS.get(id(table))
    if replace is None:
        replace = _REPLACERS[id(table)] = _replacer(table)
    return replace(text)


def for_model(text: str) -> str:
    """`text` as it may appear inside a block the agent reads: no `<`, no control characters."""
    return _apply(_MODEL, text)


def for_terminal(text: str) -> str:
    """`text` as it may be printed: newlines and tabs kept, every other control character made visible."""
    return _apply(_TERMINAL, text)


def json_for_terminal(json_text: str) -> str:
    """JSON text (from json.dumps) with the controls it leaves raw escaped; parses to the same value.
    Safe outside strings too: JSON's own syntax is ASCII, none of it in the table."""
    return _apply(_JSON, json_text)


def model_payload(value: object) -> object:
    """Every string in a JSON-shaped value (dicts, lists, strings, scalars) through `for_model`, keys too."""
    if isinstance(value, str):
        return for_model(value)
    if isinstance(value, dict):
        return {for_model(k) if isinstance(k, str) else k: model_payload(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [model_payload(item) for item in value]
    return value

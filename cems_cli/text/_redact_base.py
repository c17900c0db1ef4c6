"""What the secret recognisers share: the marker, the tests a value must pass to be a secret, and `_Shape`,
one kind of secret with its gates, pattern and replacer."""

from __future__ import annotations

import re

TYPE_CHECKING = False  # `typing` costs ~25 ms to import; annotations are strings anyway
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable


_FLAGS = re.ASCII
_FOLDED = re.ASCII | re.IGNORECASE
# A blank between a name and its value: a space, a tab, or the no-break and other Unicode spaces that text
# pasted from a chat, a wiki or a PDF carries (`API_KEY\u00a0=\u00a0…`). Written out: the patterns are ASCII.
_BLANK = "[ \t\u00a0\u2000-\u200a\u202f\u205f\u3000]"


def _marker(kind: str) -> str:
    return f"[REDACTED:{kind}]"


# --- helpers shared by the recognisers ------------------------------------------------------------------

_LITERALS = frozenset(
    "none null nil true false yes no on off undefined enabled disabled required optional auto default "
    "str string int bool boolean bytes number any object secretstr".split()
)
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*\Z")
_TYPE_NAME = re.compile(r"[A-Z][a-z]+(?:[A-Z][a-z0-9]*)*(?:\[.*\])?\Z")
_MARKER = re.compile(r"\[REDACTED:[a-z0-9_]+\]")


def _is_placeholder(value: str) -> bool:
    """References and stand-ins, not secrets: $VAR, ${VAR}, {{ secrets.X }}, <token>, %(x)s, ****, xxxx."""
    value = value.strip("\"'")
    if not value or value.startswith(("$", "{", "<", "%", "[REDACTED")):
        return True
    return not value.strip("*xX.")


def _is_plain_word(value: str) -> bool:
    """A lowercase dictionary-like word: prose ("header", "required"), never a generated credential."""
    return value.isalpha() and value.islower()


def _splice(match: re.Match[str], group: str, replacement: str, end: int | None = None) -> str:
    """The whole match with one group's text (up to `end`, an absolute index) replaced and the rest kept."""
    base = match.start()
    start, stop = match.span(group)
    whole = match.group(0)
    return whole[: start - base] + replacement + whole[(stop if end is None else end) - base :]


def _quoted_value(value: str, kind: str) -> str:
    """A command-line value with its quotes kept and its text redacted (placeholders stay)."""
    quote = value[0] if len(value) >= 2 and value[0] in "\"'" and value[-1] == value[0] else ""
    bare = value[1:-1] if quote else value
    if _is_placeholder(bare):
        return value
    return f"{quote}{_marker(kind)}{quote}"


# --- secrets recognised by shape ------------------------------------------------------------------------

if TYPE_CHECKING:
    Replacer = Callable[[re.Match[str]], str]


class _Shape:
    """One kind of secret: its gates (one of them is in every text it redacts), pattern and replacer.

    A pattern given as its source and flags is compiled the first time a text opens one of its gates: the
    rarer kinds (provider prefixes, .netrc, sudo -S…) would otherwise add ~10 ms of compiling to every hook
    that imports this module, for patterns most outputs never need."""

    __slots__ = ("kind", "gates", "gate", "folded", "_pattern", "_source", "replace")

    def __init__(
        self,
        kind: str,
        gates: Iterable[str],
        pattern: re.Pattern[str] | tuple[str, int],
        replace: Replacer | None = None,
    ) -> None:
        self.kind = kind
        self.gates = tuple(gates)
        # Gates sharing a prefix (glpat-, gldt-, … all start with gl) are looked for with one search: the
        # parser moves the common prefix out of the alternation, and the engine skips to it as to a literal.
        # Gates with nothing in common are cheaper as separate substring searches.
        shared = self.gates[0][:1] if all(gate[:1] == self.gates[0][:1] for gate in self.gates) else ""
        self.gate = None
        if len(self.gates) > 1 and shared:
            self.gate = re.compile("|".join(map(re.escape, self.gates)))
        if isinstance(pattern, tuple):
            self._pattern: re.Pattern[str] | None = None
            self._source = pattern
        else:
            self._pattern, self._source = pattern, (pattern.pattern, pattern.flags)
        # Case-insensitive patterns are gated on the lowercased text (their gates are written lowercase).
        self.folded = bool(self._source[1] & re.IGNORECASE)
        self.replace = replace or _replace_secret_group(kind)

    @property
    def pattern(self) -> re.Pattern[str]:
        if self._pattern is None:
            self._pattern = re.compile(*self._source)
        return self._pattern


def _replace_secret_group(kind: str) -> Replacer:
    """Replace the group `secret` (or the whole match when there is none), unless it is a placeholder."""
    marker = _marker(kind)

    def replace(match: re.Match[str]) -> str:
        if "secret" not in match.re.groupindex:
            return marker
        if _is_placeholder(match.group("secret")):
            return match.group(0)
        return _splice(match, "secret", marker)

    return replace

"""The command model as capture sees it: the top-level commands of a line, wrappers that do not change what
runs (`timeout 600`, `nice -n 10`, `sudo`, `env A=1`) removed, each with its pipeline position."""

from __future__ import annotations

from cems_cli.command._programs import _WRAPPERS
from cems_cli.command.plain import _is_assignment
from cems_cli.command.words import basename, simples, skip_options


class Invocation:
    """A top-level command as capture sees it: its words without environment assignments, redirections or
    transparent wrappers (`timeout 600 pytest -q` is `pytest -q`), and its position in its pipeline."""

    __slots__ = ("words", "pipe")

    def __init__(self, words: list[str], pipe: int) -> None:
        self.words = words
        self.pipe = pipe

    def __repr__(self) -> str:
        return f"Invocation({self.words!r}, pipe={self.pipe})"


def unwrap_transparent(words: list[str]) -> list[str]:
    """`timeout 600 pytest -q` → `pytest -q`; `sudo -E env A=1 nice -n 10 make test` → `make test`."""
    start = 0
    while start < len(words):
        word = words[start]
        if _is_assignment(word):
            start += 1
            continue
        wrapper = _WRAPPERS.get(basename(word))
        if wrapper is None or not wrapper[3]:
            break
        short_values, long_values, operands, _ = wrapper
        start = skip_options(words, start + 1, short_values, long_values) + operands
        if basename(word) == "env" and start < len(words) and words[start] == "-":
            start += 1
    return words[start:]


def capture_commands(text: str) -> list[Invocation]:
    """The top-level simple commands of `text`, in order, for capture (see `Invocation`)."""
    try:
        found, _ = simples(text)
    except Exception:  # capture must go on: a line it cannot read yields no command, as an empty one
        found = []
    out: list[Invocation] = []
    for simple in found:
        if simple.depth != 0 or not simple.words:
            continue
        words = [word for word in simple.words]
        words = unwrap_transparent(words)
        if words:
            out.append(Invocation(words, simple.pipe))
    return out

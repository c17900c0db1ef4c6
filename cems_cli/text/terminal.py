"""Terminal control sequences out of text: colours and cursor moves ("\x1b[2m", "\x1b[1A\x1b[2K") that test
runners write even into a pipe, and window-title sequences. They carry no meaning in a memory, and left in,
"\x1b[2mexpect(\x1b[22m\x1b[31mreceived" is what a later search would have to match.

Stdlib only: the capture hooks' error lines use it."""

from __future__ import annotations

import re

# CSI (ESC [ … final byte), OSC (ESC ] … BEL or ESC \), and the two-byte escapes (ESC and one of @-Z \ ] ^ _).
_CONTROL = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[@-Z\\-_])")


def without_terminal_control(text: str) -> str:
    return _CONTROL.sub("", text) if "\x1b" in text else text

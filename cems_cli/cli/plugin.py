"""`cems plugin path|install|uninstall`: CEMS as one Claude Code plugin (hooks, MCP server, slash commands).

The plugin folder ships with the package (`claude-plugin/` in a clone, `cems_cli/_data/claude-plugin` in a
wheel). It runs `cems-hook <handler>` and `cems mcp` by name, like a project install: Claude Code must find
them on its PATH, and they use the store of Claude Code's environment (`CEMS_HOME`, else the default).

The folder is also a one-plugin marketplace (`.claude-plugin/marketplace.json`), because that is how the
pinned CLI installs a local plugin for good: `claude plugin install cems --marketplace <folder>` records the
folder (user settings) and reads the plugin from it in place. Install and uninstall run exactly that
`claude`; nothing here writes Claude Code's files itself. For one session: `claude --plugin-dir <folder>`.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import typer

from cems_cli.cli.common import JsonOption, emit_json, fail, say
from cems_cli.plumbing import procs

PLUGIN = "cems"
MARKETPLACE = "cems"  # the `name` of .claude-plugin/marketplace.json
PLUGIN_ID = f"{PLUGIN}@{MARKETPLACE}"
SERVER = "cems"  # the key in the plugin's .mcp.json
# How Claude Code names a plugin's MCP tools: mcp__plugin_<plugin>_<server>__<tool>.
TOOL_PREFIX = f"mcp__plugin_{PLUGIN}_{SERVER}__"
SCOPES = ("user", "project", "local")
_CLAUDE_TIMEOUT = 120  # seconds: `claude plugin …` starts the whole CLI (~1 s), never more than this

plugin_app = typer.Typer(
    help="The Claude Code plugin: CEMS's hooks, MCP server and /cems: slash commands in one.",
    no_args_is_help=True,
)

ScopeOption = typer.Option(
    "user",
    "--scope",
    help="Where Claude Code enables the plugin: user (all your projects), project (./.claude/settings.json; "
    "it records this machine's plugin folder) or local (./.claude/settings.local.json).",
)
ClaudeOption = typer.Option(None, "--claude", help="The claude executable (default: `claude` on PATH).")


def plugin_dir() -> Path:
    from cems_cli.resources import data_dir

    return data_dir("claude-plugin")


def commands(folder: Path) -> list[str]:
    """The slash commands as Claude Code names them: a plugin's commands are namespaced `/<plugin>:<file>`."""
    return sorted(f"/{PLUGIN}:{path.stem}" for path in (folder / "commands").glob("*.md"))


def _missing_programs() -> list[str]:
    return [name for name in ("cems", "cems-hook") if shutil.which(name) is None]


def _description(folder: Path) -> dict[str, Any]:
    return {
        "path": str(folder),
        "plugin": PLUGIN,
        "marketplace": MARKETPLACE,
        "mcp_tool_prefix": TOOL_PREFIX,
        "commands": commands(folder),
        "load_once": ["claude", "--plugin-dir", str(folder)],
        "install": ["claude", "plugin", "install", PLUGIN, "--marketplace", str(folder)],
        "not_on_path": _missing_programs(),
    }


@plugin_app.command("path")
def path(as_json: bool = JsonOption) -> None:
    """Print the plugin folder: `claude --plugin-dir "$(cems plugin path)"` loads it for one session."""
    folder = plugin_dir()
    if as_json:
        emit_json(_description(folder))
        return
    # The bare path alone on stdout, so that `$(cems plugin path)` works; advice goes to stderr.
    sys.stdout.write(f"{folder}\n")
    for name in _missing_programs():
        say(f"warning: {name} is not on PATH here; the plugin runs it by name from Claude Code's PATH",
            err=True)


def _claude(explicit: Path | None) -> str:
    if explicit is not None:
        return str(explicit)
    found = shutil.which("claude")
    if found is None:
        fail(
            "claude is not on PATH: pass --claude PATH, or load the plugin for one session with "
            f"`claude --plugin-dir {plugin_dir()}`"
        )
    return found


def _run_claude(claude: str, args: list[str]) -> dict[str, Any]:
    """`claude plugin … --json`, its JSON result read (the human message goes to stderr)."""
    argv = [claude, "plugin", *args, "--json"]
    try:
        proc = procs.run(argv, timeout=_CLAUDE_TIMEOUT)
    except (OSError, subprocess.TimeoutExpired) as error:
        fail(f"{' '.join(argv)}: {error}", code=1)
    # `list --json` prints one (indented) document; the others print it as their last line.
    result: Any = None
    lines = [line for line in proc.stdout.splitlines() if line.strip()]
    for text in (proc.stdout, lines[-1] if lines else ""):
        try:
            result = json.loads(text)
            break
        except ValueError:
            continue
    if not isinstance(result, (dict, list)):
        result = {"outcome": "ok" if proc.returncode == 0 else "failed", "message": proc.stderr.strip()}
    return {"argv": argv, "returncode": proc.returncode, "result": result}


def _message(step: dict[str, Any]) -> str:
    result = step["result"]
    text = result.get("message") if isinstance(result, dict) else None
    return " ".join(str(text or f"exit {step['returncode']}").split())


def _duplicates(cwd: Path) -> list[str]:
    """CEMS's own hook or MCP installs that Claude Code reads besides the plugin: with both, every hook
    would run twice (Claude Code runs a plugin's hook beside an identical settings command) and every
    tool would be offered twice."""
    from cems_cli.cli.hooks import _standard_files
    from cems_cli.mcp import register
    from cems_cli.plumbing.hooks_scan import scan_settings

    found: list[str] = []
    for scope, settings in _standard_files(cwd):
        if scan_settings(settings, scope).hooks:
            found.append(f"CEMS hooks in {settings} (`cems hooks uninstall --scope {scope}`)")
    for scope in SCOPES:
        target = register.target_for(scope, cwd)
        if target.path.resolve() == (plugin_dir() / ".mcp.json").resolve():
            continue  # run from inside the plugin folder: its own server is not a second install
        entry = register.installed(target)
        if entry is not None and register.is_cems_entry(entry):
            found.append(f"the MCP server {target.where} (`cems hooks uninstall --scope {scope} --mcp`)")
    return found


@plugin_app.command("install")
def install(
    scope: str = ScopeOption,
    claude: Path | None = ClaudeOption,
    force: bool = typer.Option(
        False, "--force", help="Install even though CEMS's hooks or MCP server are installed the other way."
    ),
    as_json: bool = JsonOption,
) -> None:
    """Install the plugin for good: `claude plugin install cems --marketplace <plugin folder>`.

    Claude Code then reads the plugin in place from this installation's folder. Refused while `cems hooks
    install` hooks or its MCP server are in place (each would run twice), unless --force.
    """
    if scope not in SCOPES:
        fail(f"unknown scope {scope!r} (expected one of: {', '.join(SCOPES)})")
    folder = plugin_dir()
    duplicates = _duplicates(Path.cwd())
    if duplicates and not force:
        fail(
            "CEMS is already wired into Claude Code without the plugin: "
            + "; ".join(duplicates)
            + ". Remove that first, or pass --force to have both"
        )
    step = _run_claude(_claude(claude), ["install", PLUGIN, "--marketplace", str(folder), "--scope", scope])
    warnings = [f"also installed: {item}" for item in duplicates]
    warnings += [
        f"{name} is not on PATH here; the plugin runs it by name from Claude Code's PATH"
        for name in _missing_programs()
    ]
    doc = {**_description(folder), "scope": scope, "installed": step["returncode"] == 0, "claude": step}
    doc["warnings"] = warnings
    if as_json:
        emit_json(doc)
    else:
        say(_message(step))
        if step["returncode"] == 0:
            say(f"Slash commands: {', '.join(doc['commands'])}; MCP tools: {TOOL_PREFIX}<tool>")
        for warning in warnings:
            say(f"warning: {warning}")
    if step["returncode"] != 0:
        raise typer.Exit(1)


@plugin_app.command("uninstall")
def uninstall(
    scope: str = ScopeOption, claude: Path | None = ClaudeOption, as_json: bool = JsonOption
) -> None:
    """Uninstall the plugin from a scope; the marketplace entry goes too once no scope has the plugin."""
    if scope not in SCOPES:
        fail(f"unknown scope {scope!r} (expected one of: {', '.join(SCOPES)})")
    program = _claude(claude)
    steps = [_run_claude(program, ["uninstall", PLUGIN_ID, "--scope", scope])]
    listed = _run_claude(program, ["list"])
    installed = listed["result"] if isinstance(listed["result"], list) else None
    # The marketplace was declared once, in user settings, for every scope: it stays while one still uses it
    # (and when the list cannot be read, rather than guess).
    if installed is not None and not any(
        isinstance(item, dict) and item.get("id") == PLUGIN_ID for item in installed
    ):
        steps.append(_run_claude(program, ["marketplace", "remove", MARKETPLACE]))
    ok = steps[0]["returncode"] == 0
    if as_json:
        emit_json({"scope": scope, "uninstalled": ok, "claude": steps})
    else:
        for step in steps:
            say(_message(step))
    if not ok:
        raise typer.Exit(1)


def uninstall_everywhere(program: str) -> dict[str, Any]:
    """`cems uninstall`: the plugin from every scope `claude plugin list` shows it in, then its marketplace
    entry. Never fails the caller: what `claude` said is in the result."""
    steps: list[dict[str, Any]] = []
    listed = _run_claude(program, ["list"])
    installed = listed["result"] if isinstance(listed["result"], list) else None
    if installed is None:
        error = f"`claude plugin list` failed: {_message(listed)}"
        return {"uninstalled": False, "scopes": [], "error": error, "claude": [listed]}
    scopes = sorted(
        {
            str(item.get("scope")) if item.get("scope") in SCOPES else "user"
            for item in installed
            if isinstance(item, dict) and item.get("id") == PLUGIN_ID
        }
    )
    steps += [_run_claude(program, ["uninstall", PLUGIN_ID, "--scope", scope]) for scope in scopes]
    markets = _run_claude(program, ["marketplace", "list"])["result"]
    names = [m.get("name") for m in markets if isinstance(m, dict)] if isinstance(markets, list) else []
    if MARKETPLACE in names:
        steps.append(_run_claude(program, ["marketplace", "remove", MARKETPLACE]))
    failed = [step for step in steps if step["returncode"] != 0]
    return {
        "uninstalled": bool(scopes) and not failed,
        "scopes": scopes,
        "error": "; ".join(_message(step) for step in failed) or None,
        "claude": steps,
    }


def register(app: typer.Typer) -> None:
    app.add_typer(plugin_app, name="plugin")

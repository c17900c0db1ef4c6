"""The built-in guard: the agent's tools keep away from what makes the rules hold.

Rules in the store are the user's, and the PreToolUse hook is what enforces them; an agent that could write
CEMS's home (the database, the rules snapshot and its digest, config.toml) or Claude Code's hook settings
could switch both off. So, before any rule of the snapshot is read, this guard blocks:

- Write, Edit, MultiEdit and NotebookEdit (and MCP tools whose name says they write, move or delete) on a
  protected path: CEMS's home, `.claude/settings.json` and `.claude/settings.local.json` (the user's and any
  project's), `~/.claude.json` (MCP servers), Claude Code's plugin folder, and an installed CEMS (the
  site-packages folder it runs from, where a `.pth` file would run in every hook, and `cems-hook`).
  Reading them is fine.
- Bash commands that name a protected path and do more than read it (`cems_cli.rules.guard_bash`), and the
  CLI commands that take rules or hooks away (`cems rule rm`, `cems hooks uninstall`, …): those are the
  user's to run, in a terminal.

The guard is code, not a stored rule: there is nothing for an agent to forget, edit or leave out of a
snapshot. Stdlib only and cheap: it runs on every tool call that can change a file.
"""

from __future__ import annotations

import os
import sys

from cems_cli.plumbing.hookio import cems_home
from cems_cli.rules.matcher import Decision

TYPE_CHECKING = False  # `typing` costs ~25 ms to import; annotations are strings anyway
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

# The path argument of each tool that writes a file.
FILE_TOOLS = {
    "Write": "file_path", "Edit": "file_path", "MultiEdit": "file_path", "NotebookEdit": "notebook_path",
}
# Words in an MCP tool's name that say it changes files (`mcp__filesystem__write_file`, `…__move_file`).
_MCP_WRITE_WORDS = (
    "write", "edit", "move", "rename", "delete", "remove", "create", "copy", "append", "patch",
)
# Any `.claude/settings*.json` is a settings file Claude Code reads hooks from (a project's, the user's).
_SETTINGS_NAMES = ("settings.json", "settings.local.json")


class GuardRule:
    """Looks like a snapshot rule to the hook's answer (`cems_cli.plumbing.hookio.pre_tool_use_answer`)."""

    __slots__ = ("id", "tool", "pattern", "action", "reason", "field", "regex", "project")

    def __init__(self, rule_id: str, pattern: str, reason: str) -> None:
        self.id = rule_id
        self.tool = "*"
        self.pattern = pattern
        self.action = "block"
        self.reason = reason
        self.field = None
        self.regex = False
        self.project = None


PROTECT_FILES = GuardRule(
    "builtin:cems-files",
    "CEMS's home, Claude Code's hook settings, the CEMS plugin",
    "CEMS's own files (its store, the rules snapshot, its settings) and Claude Code's hook settings keep the "
    "user's rules in force: the agent may read them, not write, move or delete them",
)
RULES_ARE_THE_USERS = GuardRule(
    "builtin:rules-are-the-users",
    "cems rule rm, cems uninstall, cems hooks uninstall, cems plugin uninstall",
    "removing a rule, or the hooks that enforce rules, is the user's decision: ask them to run it in a "
    "terminal",
)


def _claude_dirs() -> list[str]:
    home = os.path.expanduser("~")
    dirs = [os.path.join(home, ".claude")]
    configured = os.environ.get("CLAUDE_CONFIG_DIR", "").strip()
    if configured:
        dirs.append(os.path.expanduser(configured))
    return dirs


def protected_paths() -> list[str]:
    """Absolute, normalised paths (folders and files) the agent must not change."""
    home = os.path.expanduser("~")
    paths = [cems_home(), os.path.join(home, ".claude.json")]
    for folder in _claude_dirs():
        paths.extend(os.path.join(folder, name) for name in _SETTINGS_NAMES)
        paths.append(os.path.join(folder, ".claude.json"))
        paths.append(os.path.join(folder, "plugins"))
    paths.extend(installed_paths(os.path.abspath(__file__)))
    script = sys.argv[0] if sys.argv else ""
    if os.path.basename(script) == "cems-hook":
        paths.append(os.path.abspath(script))
    return [os.path.normpath(path) for path in paths]


def installed_paths(module_file: str) -> list[str]:
    """What an installed CEMS runs from, given this module's file: the whole site-packages folder holding
    `cems_cli`, not the package alone. A `.pth` file or `sitecustomize.py` there runs at the start of every
    hook process (`import os; …` in `x.pth`), and so could rewrite the guard before it checks anything;
    so could a replaced dependency of the hook (tree-sitter's binding). Nothing for a source checkout,
    which someone works on."""
    package = os.path.dirname(os.path.dirname(module_file))
    site = os.path.dirname(package)
    if os.path.basename(site) in ("site-packages", "dist-packages"):
        return [site]
    return []


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def is_protected(path: str, cwd: str | None, protected: list[str] | None = None) -> bool:
    """Whether writing `path` (as a tool gets it, relative to `cwd`) would change a protected file. Both
    the path as written and with symlinks resolved are checked: a link into CEMS's home is CEMS's home."""
    if not path:
        return False
    path = os.path.expanduser(path)
    if not os.path.isabs(path):
        if not cwd or not os.path.isabs(cwd):
            cwd = os.getcwd()
        path = os.path.join(cwd, path)
    roots = protected if protected is not None else protected_paths()
    spellings = {os.path.normpath(path), os.path.realpath(path)}
    for spelling in spellings:
        head, name = os.path.split(spelling)
        if name in _SETTINGS_NAMES and os.path.basename(head) == ".claude":
            return True
        for root in roots:
            if _within(spelling, root) or _within(spelling, os.path.realpath(root)):
                return True
    return False


def _mcp_writes(tool_name: str) -> bool:
    action = tool_name.rpartition("__")[2].lower()
    return any(word in action for word in _MCP_WRITE_WORDS)


def check(tool_name: str, tool_input: Mapping[str, Any], cwd: str | None) -> Decision | None:
    """A block Decision when this tool call would change what keeps the rules in force, else None."""
    field = FILE_TOOLS.get(tool_name)
    if field is not None:
        path = tool_input.get(field)
        if isinstance(path, str) and is_protected(path, cwd):
            return Decision("block", PROTECT_FILES, path)
        return None
    if tool_name == "Bash":
        command = tool_input.get("command")
        if not isinstance(command, str):
            return None
        from cems_cli.rules.guard_bash import check_command

        found = check_command(command, cwd)
        if found is None:
            return None
        kind, text = found
        return Decision("block", RULES_ARE_THE_USERS if kind == "cli" else PROTECT_FILES, text)
    if tool_name.startswith("mcp__") and _mcp_writes(tool_name):
        protected = protected_paths()
        for value in tool_input.values():
            if isinstance(value, str) and (os.sep in value or value[:1] == "~") and is_protected(
                value, cwd, protected
            ):
                return Decision("block", PROTECT_FILES, value)
    return None

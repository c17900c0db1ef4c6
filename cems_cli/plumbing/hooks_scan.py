"""Finding what is installed in a settings file (for `cems hooks doctor` and `cems plugin`): every CEMS hook,
with its event, command and the problems of its entry."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path

from cems_cli.plumbing.hooks_commands import CemsCommand, parse_command
from cems_cli.plumbing.hooks_install import InstallError, _read_settings


@dataclass(frozen=True)
class InstalledHook:
    scope: str
    settings: Path
    event: str
    matcher: str | None
    timeout: float | None
    parsed: CemsCommand

    @property
    def command(self) -> str:
        return self.parsed.command


@dataclass
class SettingsScan:
    scope: str
    path: Path
    exists: bool = False
    error: str | None = None
    disable_all_hooks: bool = False
    hooks: list[InstalledHook] = field(default_factory=list)


def scan_settings(path: Path, scope: str, known: Collection[str] = ()) -> SettingsScan:
    """CEMS's command hooks in one settings file, read the way Claude Code reads it; never raises."""
    scan = SettingsScan(scope, path)
    try:
        _, data = _read_settings(path)
        scan.exists = path.exists()
    except InstallError as error:
        scan.exists, scan.error = True, str(error).replace("; fix it first, nothing was changed", "")
        return scan
    except OSError as error:
        scan.exists, scan.error = True, f"cannot read {path}: {error}"
        return scan
    scan.disable_all_hooks = data.get("disableAllHooks") is True
    hooks = data.get("hooks", {})
    if not isinstance(hooks, dict):
        scan.error = f"{path}: 'hooks' is not an object, so Claude Code ignores it"
        return scan
    for event, groups in hooks.items():
        if not isinstance(groups, list):
            continue
        for group in groups:
            if not isinstance(group, dict) or not isinstance(group.get("hooks"), list):
                continue
            matcher = group.get("matcher")
            for handler in group["hooks"]:
                if not isinstance(handler, dict) or handler.get("type", "command") != "command":
                    continue
                command = handler.get("command")
                parsed = parse_command(command, known) if isinstance(command, str) else None
                if parsed is None:
                    continue
                timeout = handler.get("timeout")
                scan.hooks.append(
                    InstalledHook(
                        scope,
                        path,
                        str(event),
                        matcher if isinstance(matcher, str) else None,
                        float(timeout) if isinstance(timeout, (int, float)) and timeout > 0 else None,
                        parsed,
                    )
                )
    return scan

"""What `cems hooks doctor` checks and prints: each settings file's CEMS hooks, their commands, the problems
found without running them, and (with --run) each one run on a sample payload."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cems_cli.cli.common import console
from cems_cli.plumbing import procs

if TYPE_CHECKING:
    from cems_cli.plumbing.hooks_commands import Invocation
    from cems_cli.plumbing.hooks_scan import InstalledHook, SettingsScan


def _samples(cwd: str) -> dict[str, dict[str, Any]]:
    """One realistic stdin per event, of the kind Claude Code sends. The session id marks it as the
    doctor's: the PostToolUse and Stop handlers store nothing for it (DOCTOR_SESSION_PREFIX)."""
    from cems_cli.hookhandlers.post_tool_use import DOCTOR_SESSION_PREFIX

    common = {
        "session_id": f"{DOCTOR_SESSION_PREFIX}{uuid.uuid4().hex[:8]}",
        "transcript_path": "",
        "cwd": cwd,
        "permission_mode": "default",
    }
    return {
        "SessionStart": {**common, "hook_event_name": "SessionStart", "source": "startup"},
        "UserPromptSubmit": {
            **common,
            "hook_event_name": "UserPromptSubmit",
            "prompt": "How do we run the tests in this project?",
        },
        "PreToolUse": {
            **common,
            "hook_event_name": "PreToolUse",
            "tool_name": "Bash",
            "tool_input": {"command": "ls"},
            "tool_use_id": f"toolu_doctor_{uuid.uuid4().hex}",
        },
        "PostToolUse": {
            **common,
            "hook_event_name": "PostToolUse",
            "tool_name": "Read",
            "tool_input": {"file_path": f"{cwd}/README.md"},
            "tool_response": {
                "type": "text",
                "file": {"filePath": f"{cwd}/README.md", "content": "", "numLines": 0},
            },
            "tool_use_id": f"toolu_doctor_{uuid.uuid4().hex}",
        },
        "PostToolUseFailure": {
            **common,
            "hook_event_name": "PostToolUseFailure",
            "tool_name": "Bash",
            "tool_input": {"command": "false"},
            "error": "Exit code 1",
            "tool_use_id": f"toolu_doctor_{uuid.uuid4().hex}",
        },
        "Stop": {
            **common,
            "hook_event_name": "Stop",
            "stop_hook_active": True,
            "last_assistant_message": "",
        },
    }


# How long doctor waits for a hook that sets no timeout (Claude Code itself would wait up to 600 s).
DEFAULT_RUN_TIMEOUT = 60.0


def _run(invocation: Invocation, payload: dict[str, Any], timeout: float, cwd: Path) -> dict[str, Any]:
    """Run one checked hook as Claude Code would, in the project folder with the payload on stdin, but as an
    argv rather than through `sh -c`: the settings file's text is never given to a shell."""
    env = procs.child_env({"CLAUDE_PROJECT_DIR": str(cwd), **invocation.env})
    started = time.perf_counter()
    # cwd: the project folder on purpose, as Claude Code runs a hook. Own process group: on a timeout the
    # interpreter and anything it started are killed together.
    try:
        proc = procs.run(
            invocation.argv, input=json.dumps(payload).encode(), timeout=timeout, env=env, cwd=str(cwd),
            text=False, new_session=True,
        )
    except OSError as error:  # removed or made unexecutable since it was checked
        return {"ok": False, "ms": None, "exit_code": None, "error": f"cannot start: {error}", "output": None}
    except subprocess.TimeoutExpired:
        return {
            "ok": False,
            "ms": round((time.perf_counter() - started) * 1000, 1),
            "exit_code": None,
            "error": f"timed out after {timeout:g} s: Claude Code kills it and goes ahead without it",
            "output": None,
        }
    out_bytes, err_bytes = proc.stdout, proc.stderr
    ms = round((time.perf_counter() - started) * 1000, 1)
    out = out_bytes.decode("utf-8", errors="replace").strip()
    err = err_bytes.decode("utf-8", errors="replace").strip()
    result: dict[str, Any] = {
        "ok": False,
        "ms": ms,
        "exit_code": proc.returncode,
        "error": None,
        "output": None,
    }
    if proc.returncode == 2:
        # Claude Code reads exit 2 as "block" and shows stderr.
        result["error"] = f"exit code 2, which Claude Code treats as a block: {err[:200]}"
    elif proc.returncode != 0:
        result["error"] = f"exit code {proc.returncode}: {err[:200]}"
    elif out and not _is_json_object(out):
        result["error"] = f"stdout is not one JSON object, so Claude Code ignores the answer: {out[:120]!r}"
    else:
        result["ok"] = True
        result["output"] = json.loads(out) if out else None
    return result


def _is_json_object(text: str) -> bool:
    try:
        return isinstance(json.loads(text), dict)
    except ValueError:
        return False


def _executable(program: str) -> bool:
    if os.sep in program:
        return os.path.isfile(program) and os.access(program, os.X_OK)
    return shutil.which(program) is not None


def _runnable(hook: InstalledHook) -> tuple[Invocation | None, str | None]:
    """(how to run the hook, None) when it is exactly a command CEMS writes, else (None, the problem)."""
    from cems_cli.plumbing.hooks_commands import NotRunnable, invocation

    try:
        return invocation(hook.command), None
    except NotRunnable as why:
        return None, (
            f"not run: not a command CEMS writes ({why}); doctor runs only CEMS's own command forms, since "
            "a settings file may come from a cloned repository: fix it or reinstall with `cems hooks install`"
        )


def _static_problems(hook: InstalledHook, home: Path) -> tuple[list[str], list[str]]:
    """(problems, warnings) visible without running the command."""
    from cems_cli.plumbing.hookentry import HANDLERS
    from cems_cli.plumbing.hooks_install import SPECS

    parsed = hook.parsed
    problems: list[str] = []
    warnings: list[str] = []
    if parsed.handler not in HANDLERS:
        problems.append(f"unknown handler {parsed.handler!r} (known: {', '.join(HANDLERS)})")
    spec = SPECS.get(hook.event)
    if spec is None:
        warnings.append(f"{hook.event} is not an event CEMS installs a hook for")
    elif parsed.handler in HANDLERS and parsed.handler != spec.handler:
        problems.append(f"runs the {parsed.handler} handler on {hook.event} (expected {spec.handler})")
    if not _executable(parsed.program):
        where = "does not exist" if os.sep in parsed.program else "is not on PATH here"
        problems.append(f"{parsed.program} {where}")
    if parsed.script is not None and not os.path.isfile(parsed.script):
        problems.append(f"hook script {parsed.script} does not exist")
    if parsed.pinned_home is not None:
        pinned = Path(parsed.pinned_home).expanduser()
        if pinned.resolve() != home.resolve():
            problems.append(
                f"pinned to the store CEMS_HOME={pinned}, but CEMS_HOME here is {home}: the hooks remember "
                f"into and recall from {pinned}; reinstall with the store you use, or use that one"
            )
    elif not parsed.portable:
        warnings.append(
            "does not pin CEMS_HOME, so it uses whatever store Claude Code's environment names; "
            "reinstall (`cems hooks install`) to pin this one"
        )
    return problems, warnings


def diagnose(files: list[tuple[str, Path]], home: Path, cwd: Path, run: bool) -> dict[str, Any]:
    from cems_cli.plumbing.hooks_install import HOOKS, known_commands
    from cems_cli.plumbing.hooks_scan import scan_settings

    scans: list[SettingsScan] = [
        scan_settings(path, scope, known_commands(home, path)) for scope, path in files
    ]
    problems: list[str] = []
    warnings: list[str] = []
    for scan in scans:
        if scan.error:
            problems.append(scan.error)
        if scan.disable_all_hooks:
            problems.append(f"{scan.path} sets disableAllHooks: Claude Code runs no hooks at all")
    installed = [hook for scan in scans for hook in scan.hooks]
    samples = _samples(str(cwd))
    ran: dict[tuple[str, str], dict[str, Any]] = {}
    reports: list[dict[str, Any]] = []
    grouped_problems: dict[tuple[str, str], list[str]] = {}
    grouped_warnings: dict[tuple[str, str], list[str]] = {}
    for hook in installed:
        hook_problems, hook_warnings = _static_problems(hook, home)
        runnable, not_runnable = _runnable(hook)
        if not_runnable is not None:
            hook_problems.append(not_runnable)
        report: dict[str, Any] = {
            "event": hook.event,
            "scope": hook.scope,
            "settings": str(hook.settings),
            "command": hook.command,
            "handler": hook.parsed.handler,
            "hook": f"{hook.parsed.handler}.py",
            "matcher": hook.matcher,
            "timeout": hook.timeout,
            "style": "portable"
            if hook.parsed.portable
            else "pinned"
            if hook.parsed.pinned_home
            else "unpinned",
            "pinned_home": hook.parsed.pinned_home,
            "problems": hook_problems,
            "warnings": hook_warnings,
            "ran": False,
            "ok": not hook_problems,
            "ms": None,
            "exit_code": None,
            "error": None,
            "output": None,
        }
        # A hook with any problem is not run: what it would do is not known to be CEMS's (a wrong pin
        # would even write into another store), and the problem is already what fails doctor.
        if run and hook.event in samples and runnable is not None and not hook_problems:
            key = (hook.event, hook.command)
            if key not in ran:  # the same command for the same event in two files: Claude Code runs it once
                timeout = min(hook.timeout or DEFAULT_RUN_TIMEOUT, DEFAULT_RUN_TIMEOUT)
                ran[key] = _run(runnable, samples[hook.event], timeout, cwd)
            outcome = ran[key]
            report.update(ran=True, ms=outcome["ms"], exit_code=outcome["exit_code"],
                          output=outcome["output"], error=outcome["error"], ok=report["ok"] and outcome["ok"])
        # The same finding for several events of one file (a wrong pin, a moved venv) is said once.
        for message in [*hook_problems, *([report["error"]] if report["error"] else [])]:
            grouped_problems.setdefault((str(hook.settings), message), []).append(hook.event)
        for message in hook_warnings:
            grouped_warnings.setdefault((str(hook.settings), message), []).append(hook.event)
        reports.append(report)
    problems.extend(f"{', '.join(ev)} in {file}: {msg}" for (file, msg), ev in grouped_problems.items())
    warnings.extend(f"{', '.join(ev)} in {file}: {msg}" for (file, msg), ev in grouped_warnings.items())
    events = []
    for spec in HOOKS:
        mine = [r for r in reports if r["event"] == spec.event]
        commands = sorted({r["command"] for r in mine})
        status = "ok" if len(commands) == 1 else "missing" if not commands else "duplicate"
        events.append(
            {
                "event": spec.event,
                "status": status,
                "installed": len(mine),
                "settings": sorted({r["settings"] for r in mine}),
                "commands": commands,
            }
        )
        if not installed:
            continue
        if status == "missing":
            problems.append(f"{spec.event}: not installed in any file read")
        elif status == "duplicate":
            problems.append(
                f"{spec.event}: installed {len(commands)} times with different commands "
                f"({', '.join(sorted({r['settings'] for r in mine}))}): Claude Code runs every one of them, "
                "so the hook runs more than once per event"
            )
        elif len(mine) > 1:
            warnings.append(
                f"{spec.event}: the same command is in {len(mine)} places; Claude Code runs identical "
                "commands once"
            )
    if not installed:
        problems.insert(
            0,
            "no CEMS hooks installed in "
            + ", ".join(str(scan.path) for scan in scans)
            + ": run `cems hooks install` (or `cems hooks install --scope project`)",
        )
    return {
        "ok": not problems,
        "home": str(home),
        "cwd": str(cwd),
        "files": [
            {
                "scope": scan.scope,
                "path": str(scan.path),
                "exists": scan.exists,
                "error": scan.error,
                "disable_all_hooks": scan.disable_all_hooks,
                "cems_hooks": len(scan.hooks),
            }
            for scan in scans
        ],
        "events": events,
        "hooks": reports,
        "problems": problems,
        "warnings": warnings,
    }


def render(doc: dict[str, Any]) -> None:
    from rich.markup import escape
    from rich.table import Table

    console.print(f"Settings files read (CEMS_HOME here: {escape(doc['home'])}):", soft_wrap=True)
    for f in doc["files"]:
        state = (
            "[red]unreadable[/red]"
            if f["error"]
            else f"{f['cems_hooks']} CEMS hooks"
            if f["exists"]
            else "[dim]no such file[/dim]"
        )
        console.print(f"  {f['scope']:<8} {escape(f['path'])}  {state}", soft_wrap=True)
    if doc["hooks"]:
        table = Table(title="CEMS hooks")
        for column in ("event", "scope", "status", "ms", "detail"):
            table.add_column(column, overflow="fold")
        for h in doc["hooks"]:
            if h["problems"] or h["error"]:
                detail = "; ".join([*h["problems"], *([h["error"]] if h["error"] else [])])
            elif not h["ran"]:
                detail = "not run"  # --no-run, or an event doctor has no sample payload for
            else:
                detail = "answered" if h["output"] else "no output (allow / nothing to add)"
            table.add_row(
                h["event"],
                h["scope"],
                "[green]ok[/green]" if h["ok"] else "[red]error[/red]",
                "" if h["ms"] is None else f"{h['ms']:.0f}",
                escape(detail),
            )
        console.print(table)
        console.print("Commands:")
        for h in doc["hooks"]:
            console.print(f"  {h['event']} ({h['scope']}): {escape(h['command'])}", soft_wrap=True)
    for warning in doc["warnings"]:
        console.print(f"[yellow]warning[/yellow]: {escape(warning)}", soft_wrap=True)
    for problem in doc["problems"]:
        console.print(f"[red]problem[/red]: {escape(problem)}", soft_wrap=True)
    if doc["ok"]:
        console.print("[green]CEMS hooks: every event installed once, every command answered.[/green]")

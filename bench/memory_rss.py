"""Benchmark: peak resident memory (max RSS) of `cems search`, `cems remember` and every hook script.

Each command runs as its own child process in a throwaway CEMS_HOME (server already running, a few hundred
memories stored); its peak RSS comes from the kernel's accounting for that child (os.wait4 → ru_maxrss, the
per-child form of getrusage(RUSAGE_CHILDREN)), started from a bare launcher so the bench's own memory does
not leak into the number (see _LAUNCHER). Hooks are the scripts under hooks/, each run on its fixture
payloads from tests/fixtures/claude-code/payloads/ (`pre_tool_use.py` → PreToolUse*.json). Background
processes that hooks start (the search server, the capture worker) are not counted; the search server's own
peak (VmHWM) is reported when one was started, and both are stopped or waited for at the end.
Results: bench/results/memory_rss.json.

    python bench/memory_rss.py
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from _common import REPO, cems, memory_texts, print_table, throwaway_home, write_results

from tests.support.paths import PAYLOADS  # importable: _common put the repository on sys.path

HOOK_TIMEOUT = 60


# A child's peak RSS includes the memory of the process it was forked from (Linux keeps the hiwater mark of
# the forked address space across exec), so children are started from this small launcher (a bare
# interpreter, ~10 MB) and not from the bench process itself (numpy, psycopg: far bigger than a hook).
_LAUNCHER = """
import os, sys, time
started = time.perf_counter()
pid = os.fork()
if pid == 0:
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    os.dup2(null, 2)
    os.execv(sys.argv[1], sys.argv[1:])
_, status, usage = os.wait4(pid, 0)
print(os.waitstatus_to_exitcode(status), (time.perf_counter() - started) * 1000, usage.ru_maxrss)
"""


def run_measured(argv: list[str], env: dict[str, str], stdin: bytes = b"") -> dict:
    """Run a child to completion; its exit code, wall time and peak RSS in MB (ru_maxrss is in KiB)."""
    launcher = subprocess.Popen([sys.executable, "-S", "-c", _LAUNCHER, *argv], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, cwd=str(REPO),
                                start_new_session=True)
    try:
        out, _ = launcher.communicate(stdin, timeout=HOOK_TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(launcher.pid, signal.SIGKILL)  # the launcher and the child it forked (same session)
        launcher.communicate()
        return {"exit": "timeout", "wall_ms": HOOK_TIMEOUT * 1000.0, "max_rss_mb": float("nan")}
    code, wall_ms, max_rss_kib = out.split()
    return {"exit": int(code), "wall_ms": round(float(wall_ms), 1),
            "max_rss_mb": round(int(max_rss_kib) / 1024, 1)}


def _cells(runs: list[dict]) -> tuple:
    return (" ".join(str(r["exit"]) for r in runs), runs[0]["wall_ms"], runs[1]["wall_ms"],
            runs[0]["max_rss_mb"], runs[1]["max_rss_mb"])


def hook_payloads(hook: Path) -> list[Path]:
    """`user_prompt_submit.py` → UserPromptSubmit.json and UserPromptSubmit-*.json."""
    event = "".join(part.capitalize() for part in hook.stem.split("_"))
    return sorted(p for p in PAYLOADS.glob(f"{event}*.json")
                  if p.stem == event or p.stem.startswith(event + "-"))


def search_server_peak_mb(home: Path) -> float | None:
    try:
        from cems_cli.server.daemon import server_pid
    except ImportError:
        return None
    pid = server_pid(home)
    if pid is None:
        return None
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return round(int(line.split()[1]) / 1024, 1)
    return None


def settle_background(home: Path) -> None:
    """Stop the search server a hook started, and wait for a capture worker to finish (it holds a lock)."""
    with contextlib.suppress(ImportError):
        from cems_cli.server.daemon import stop_server

        stop_server(home)
    lock = home / "capture.lock"
    if not lock.exists():
        return
    deadline = time.monotonic() + 60
    with open(lock, "a+") as handle:
        while time.monotonic() < deadline:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                fcntl.flock(handle, fcntl.LOCK_UN)
                return
            except BlockingIOError:
                time.sleep(0.1)


def main() -> int:
    results: dict = {"commands": {}, "hooks": {}}
    rows = []
    with throwaway_home() as home:
        cems_env = {"CEMS_HOME": str(home), "CEMS_USER": "bench", "CEMS_PROJECT": "project:acme/api",
                    "CEMS_EMBEDDING_BACKEND": "local"}
        env = {k: v for k, v in os.environ.items() if not k.startswith("CEMS_")} | cems_env
        lines = "".join(json.dumps({"content": t}) + "\n" for t in memory_texts(300, seed=9))
        seeded = cems(["import", "-", "--json"], cems_env, stdin=lines.encode())
        if seeded.returncode != 0:
            raise SystemExit(f"seeding failed: {seeded.stderr.decode(errors='replace').strip()}")
        entry = sys.executable, "-m", "cems_cli.cli.app"
        commands = {
            "cems search": [*entry, "search", "why did we pick Redis for the session cache?"],
            "cems remember": [*entry, "remember", "The session cache keys include the tenant id."],
        }
        # Each runs twice: the first call in a fresh home may do one-off work (a hook building its rules
        # snapshot, starting the search server); the second is the steady state.
        for name, argv in commands.items():
            runs = [run_measured(argv, env) for _ in range(2)]
            results["commands"][name] = runs
            rows.append((name, "", *_cells(runs)))
        for hook in sorted((REPO / "hooks").glob("*.py")):
            for payload in hook_payloads(hook):
                argv = [sys.executable, str(hook)]
                runs = [run_measured(argv, env, payload.read_bytes()) for _ in range(2)]
                results["hooks"][f"{hook.name} {payload.name}"] = runs
                rows.append((f"hooks/{hook.name}", payload.name, *_cells(runs)))
        results["floor_mb"] = run_measured([sys.executable, "-S", "-c", "pass"], env)["max_rss_mb"]
        rows.append(("python -S -c pass (floor)", "", "0 0", "", "", results["floor_mb"], ""))
        results["search_server_peak_mb"] = search_server_peak_mb(home)
        settle_background(home)
    print_table("Peak RSS per process, first call / second call",
                ["command", "payload", "exit", "wall ms 1st", "wall ms 2nd", "RSS MB 1st", "RSS MB 2nd"],
                rows)
    if results["search_server_peak_mb"] is not None:
        print(f"search server (started by a hook): peak RSS {results['search_server_peak_mb']:.1f} MB")
    path = write_results("memory_rss", results)
    print(f"results: {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

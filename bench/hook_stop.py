"""Benchmark: the Stop hook as a whole process, against a bare interpreter start.

The Stop hook records the turn in the spool and starts the capture worker detached; the agent waits only for
the hook. Two scenarios, each run N times with a distinct turn (so every run really commits a spool row):
- a capture worker is already running (this script holds `capture.lock`): the hook records and returns;
- no worker runs: the hook also spawns one. The spawned workers point at an unreachable database
  (CEMS_DATABASE_URL on a closed port) so they exit at once and leave the turns pending, which is what the
  worker does when the store is down; no embedded PostgreSQL is started.
Prints median / p95 / min and writes bench/results/stop.json. Target (issue "One capture engine"): the hook
returns in at most 50 ms (median and p95, warm bytecode cache).

    python bench/hook_stop.py [--runs 30]
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import platform
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
HOOK = REPO / "hooks" / "stop.py"
RESULTS = REPO / "bench" / "results" / "stop.json"
TARGET_MS = 50.0
UNREACHABLE_DB = "postgresql://cems@127.0.0.1:9/cems?connect_timeout=1"


def transcript(folder: Path) -> Path:
    """A short transcript in Claude Code's format: one prompt, one Bash call and its result, an answer."""
    path = folder / "session.jsonl"
    lines = [
        {"type": "user", "message": {"role": "user", "content": "run the tests"}, "uuid": "u1"},
        {
            "type": "assistant",
            "uuid": "a1",
            "message": {
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "make test"}}
                ],
            },
        },
        {
            "type": "user",
            "uuid": "u2",
            "message": {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "12 passed"}],
            },
        },
        {
            "type": "assistant",
            "uuid": "a2",
            "message": {"role": "assistant", "content": "All 12 tests pass."},
        },
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def payloads(transcript_path: Path, runs: int, label: str) -> list[bytes]:
    return [
        json.dumps(
            {
                "session_id": f"bench-{label}-{index}-{time.time_ns()}",
                "transcript_path": str(transcript_path),
                "cwd": str(transcript_path.parent),
                "hook_event_name": "Stop",
                "stop_hook_active": False,
                "last_assistant_message": "All 12 tests pass.",
            }
        ).encode()
        for index in range(runs)
    ]


def timed_runs(
    command: list[str],
    stdins: list[bytes],
    env: dict[str, str],
    warmup: int = 3,
    before_each: Callable[[], None] | None = None,
) -> list[float]:
    samples = []
    for index, stdin in enumerate([stdins[0]] * warmup + stdins):
        if before_each is not None:
            before_each()
        started = time.perf_counter()
        proc = subprocess.run(command, input=stdin, capture_output=True, env=env)
        elapsed = (time.perf_counter() - started) * 1000
        if proc.returncode != 0 or proc.stdout:
            raise SystemExit(
                f"{command} exited {proc.returncode}: {proc.stdout[-300:]!r} {proc.stderr[-500:]!r}"
            )
        if index >= warmup:
            samples.append(elapsed)
    return samples


def _workers_alive() -> bool:
    """Is any capture worker process running (read from /proc; False where there is none)?"""
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            if b"cems_cli.capture.worker" in (entry / "cmdline").read_bytes():
                return True
        except OSError:
            continue
    return False


def p95(samples: list[float]) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def recorded_turns(home: Path) -> int:
    with sqlite3.connect(home / "spool.db") as conn:
        return conn.execute("SELECT count(*) FROM turns").fetchone()[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="cems-bench-stop-", ignore_cleanup_errors=True) as scratch:
        scratch_path = Path(scratch)
        session = transcript(scratch_path)
        base_env = {k: v for k, v in os.environ.items() if not k.startswith(("CEMS_", "PYTHON"))}
        env = {
            **base_env,
            "PYTHONPYCACHEPREFIX": str(scratch_path / "pycache"),
            "CEMS_DATABASE_URL": UNREACHABLE_DB,
        }
        hook = [sys.executable, str(HOOK)]
        rows = []
        bare = timed_runs([sys.executable, "-c", "pass"], [b""] * args.runs, env)
        rows.append(("python -c pass", bare, None))
        for label, hold_lock in (("hook, worker already running", True), ("hook, spawns the worker", False)):
            home = scratch_path / label.replace(" ", "-").replace(",", "")
            home.mkdir()
            lock = open(home / "capture.lock", "a+")  # noqa: SIM115 - held for the whole scenario
            try:
                if hold_lock:
                    fcntl.flock(lock, fcntl.LOCK_EX)

                def no_worker_left(hold_lock=hold_lock) -> None:
                    # "Spawns the worker" means no worker runs when the hook starts: wait until the
                    # previous run's worker has exited, so the hook is not timed while earlier workers
                    # load their models on the same two cores (a turn's Stop comes seconds apart).
                    deadline = time.monotonic() + 60
                    while not hold_lock and _workers_alive() and time.monotonic() < deadline:
                        time.sleep(0.05)

                samples = timed_runs(
                    hook,
                    payloads(session, args.runs, label),
                    {**env, "CEMS_HOME": str(home)},
                    before_each=no_worker_left,
                )
                fcntl.flock(
                    lock, fcntl.LOCK_EX
                )  # the spawned workers have exited (they hold it while running)
            finally:
                lock.close()
            rows.append((label, samples, recorded_turns(home)))

    baseline = statistics.median(bare)
    table = [
        {
            "scenario": label,
            "runs": len(samples),
            "median_ms": round(statistics.median(samples), 2),
            "p95_ms": round(p95(samples), 2),
            "min_ms": round(min(samples), 2),
            "ratio_to_bare_python": round(statistics.median(samples) / baseline, 2),
            **({"turns_recorded": turns} if turns is not None else {}),
        }
        for label, samples, turns in rows
    ]
    width = max(len(r["scenario"]) for r in table)
    print(f"{'scenario':<{width}}  {'median':>8}  {'p95':>8}  {'min':>8}  {'ratio':>6}")
    for r in table:
        times = f"{r['median_ms']:>6.1f}ms  {r['p95_ms']:>6.1f}ms  {r['min_ms']:>6.1f}ms"
        print(f"{r['scenario']:<{width}}  {times}  {r['ratio_to_bare_python']:>5.2f}x")

    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(
        json.dumps(
            {
                "benchmark": "stop hook, whole process: stdin → turn in the spool (+ worker spawned)",
                "measured_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                "python": sys.version.split()[0],
                "machine": f"{platform.system()} {platform.machine()}, {os.cpu_count()} CPUs",
                "targets": {"median_ms_max": TARGET_MS, "p95_ms_max": TARGET_MS},
                "results": table,
            },
            indent=2,
        )
        + "\n",
        encoding="utf-8",
    )
    print(f"\nwrote {RESULTS.relative_to(REPO)}")


if __name__ == "__main__":
    main()

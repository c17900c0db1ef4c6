"""Benchmark: the PostToolUse hook as a whole process, against a bare interpreter start.

Runs hooks/post_tool_use.py N times per scenario (each run with a distinct tool_use_id, so every run really
inserts and commits a row in a temporary CEMS_HOME's spool), and `python -c pass` N times with the same
interpreter; prints median / p95 / min and writes bench/results/post_tool_use.json. Target: median and p95
at most 80 ms for the fixture payload.

Bytecode: installed packages ship compiled .pyc files, so the main scenarios run with a warm bytecode cache
(PYTHONPYCACHEPREFIX in a temp dir, after warm-up runs; the repository is not touched). One extra scenario
shows the cost without any cache (PYTHONDONTWRITEBYTECODE=1, as in some CI shells).

    python bench/hook_post_tool_use.py [--runs 30]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # run as a script: the repository's `tests` package holds the fixture payloads

from tests.support.paths import PAYLOADS  # noqa: E402

HOOK = REPO / "hooks" / "post_tool_use.py"
RESULTS = REPO / "bench" / "results" / "post_tool_use.json"
TARGET_MS = 80.0


def payloads(name: str, runs: int, stdout_bytes: int = 0) -> list[bytes]:
    """`runs` copies of a fixture payload, each with its own tool_use_id (optionally with a big stdout)."""
    base = json.loads((PAYLOADS / name).read_text(encoding="utf-8"))
    out = []
    for index in range(runs):
        payload = dict(base, tool_use_id=f"toolu_bench_{name}_{stdout_bytes}_{index}_{time.time_ns()}")
        if stdout_bytes:
            line = "tests/test_api.py::test_case PASSED\n"
            payload["tool_response"] = dict(
                payload["tool_response"], stdout=line * (stdout_bytes // len(line))
            )
        out.append(json.dumps(payload).encode())
    return out


def timed_runs(command: list[str], stdins: list[bytes], env: dict[str, str], warmup: int = 3) -> list[float]:
    samples = []
    for index, stdin in enumerate([stdins[0]] * warmup + stdins):
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


def p95(samples: list[float]) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def spooled(home: Path) -> int:
    with sqlite3.connect(home / "spool.db") as conn:
        return conn.execute("SELECT count(*) FROM tool_events").fetchone()[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="cems-bench-") as scratch:
        scratch_path = Path(scratch)
        base_env = {k: v for k, v in os.environ.items() if not k.startswith(("CEMS_", "PYTHON"))}
        cached = {**base_env, "PYTHONPYCACHEPREFIX": str(scratch_path / "pycache")}
        # An empty cache prefix that is never written: every module is compiled from source on each run.
        uncached = {
            **base_env,
            "PYTHONDONTWRITEBYTECODE": "1",
            "PYTHONPYCACHEPREFIX": str(scratch_path / "empty-pycache"),
        }
        hook = [sys.executable, str(HOOK)]
        bare = [sys.executable, "-c", "pass"]
        scenarios = [
            ("python -c pass", bare, [b""] * args.runs, cached, False),
            (
                "hook, Bash payload (PostToolUse.json)",
                hook,
                payloads("PostToolUse.json", args.runs),
                cached,
                True,
            ),
            (
                "hook, Edit payload (PostToolUse-Edit.json)",
                hook,
                payloads("PostToolUse-Edit.json", args.runs),
                cached,
                True,
            ),
            (
                "hook, Bash payload with 1 MB stdout",
                hook,
                payloads("PostToolUse.json", args.runs, 1 << 20),
                cached,
                True,
            ),
            ("python -c pass, no bytecode cache", bare, [b""] * args.runs, uncached, False),
            (
                "hook, Bash payload, no bytecode cache",
                hook,
                payloads("PostToolUse.json", args.runs),
                uncached,
                True,
            ),
        ]
        rows = []
        baselines: dict[bool, float] = {}
        for index, (label, command, stdins, env, is_hook) in enumerate(scenarios):
            run_env = dict(env)
            home = scratch_path / f"home-{index}"
            if is_hook:
                run_env["CEMS_HOME"] = str(home)
            samples = timed_runs(command, stdins, run_env)
            median = statistics.median(samples)
            is_cached = env is cached
            if not is_hook:
                baselines[is_cached] = median
            row = {
                "scenario": label,
                "runs": len(samples),
                "median_ms": round(median, 2),
                "p95_ms": round(p95(samples), 2),
                "min_ms": round(min(samples), 2),
                "ratio_to_bare_python": round(median / baselines[is_cached], 2),
            }
            if is_hook:
                row["rows_spooled"] = spooled(home)  # one per distinct id: warm-ups replay the first payload
            rows.append(row)

    width = max(len(r["scenario"]) for r in rows)
    print(f"{'scenario':<{width}}  {'median':>8}  {'p95':>8}  {'min':>8}  {'ratio':>6}")
    for r in rows:
        times = f"{r['median_ms']:>6.1f}ms  {r['p95_ms']:>6.1f}ms  {r['min_ms']:>6.1f}ms"
        print(f"{r['scenario']:<{width}}  {times}  {r['ratio_to_bare_python']:>5.2f}x")

    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(
        json.dumps(
            {
                "benchmark": "post_tool_use hook, whole process: stdin → redacted row committed in the spool",
                "measured_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                "python": sys.version.split()[0],
                "executable": sys.executable,
                "machine": f"{platform.system()} {platform.machine()}, {os.cpu_count()} CPUs",
                "targets": {"median_ms_max": TARGET_MS, "p95_ms_max": TARGET_MS},
                "results": rows,
            },
            indent=2,
        )
        + "\n",
        encoding="utf-8",
    )
    print(f"\nwrote {RESULTS.relative_to(REPO)}")


if __name__ == "__main__":
    main()

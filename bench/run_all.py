"""Run every benchmark in bench/ (`make bench`): each `bench/*.py` except this file and `_`-prefixed helpers,
one after the other, each as its own process with a time limit, its output shown as it runs; then a summary.

Each bench prints its own tables and writes bench/results/<name>.json; this writes bench/results/run_all.json
(per bench: exit code, seconds, results file). Exit code: 0 when every bench succeeded, else 1.

    python bench/run_all.py [--timeout 300] [--only search_latency,ingest]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
RESULTS = BENCH / "results"
DEFAULT_TIMEOUT = 300.0
BUDGET = 600.0  # the whole run should stay under 10 minutes on 2 cores


def discover() -> list[Path]:
    this = Path(__file__).name
    return sorted(p for p in BENCH.glob("*.py") if p.name != this and not p.name.startswith("_"))


def results_of(name: str, since: float) -> list[str]:
    """The results files a bench wrote: changed during its run and named after it (`hook_pre_tool_use` →
    pre_tool_use.json); the name check keeps out files that other processes wrote meanwhile."""
    changed = [p for p in RESULTS.glob("*.json") if p.stat().st_mtime >= since and p.name != "run_all.json"]
    return sorted(p.name for p in changed if p.stem in name or name in p.stem)


def run_one(script: Path, timeout: float) -> dict:
    """Run a bench in its own session so that a timeout stops it and everything it started."""
    started = time.perf_counter()
    process = subprocess.Popen([sys.executable, str(script)], cwd=str(BENCH.parent), start_new_session=True)
    try:
        code: int | str = process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGTERM)  # benches clean up on SIGTERM (stop their embedded server)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        code = "timeout"
    return {"exit": code, "seconds": round(time.perf_counter() - started, 1)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, help="seconds allowed per bench")
    parser.add_argument("--only", default="", help="comma-separated bench names to run")
    args = parser.parse_args()
    scripts = discover()
    if args.only:
        wanted = {name.strip().removesuffix(".py") for name in args.only.split(",") if name.strip()}
        scripts = [s for s in scripts if s.stem in wanted]
    summary: dict[str, dict] = {}
    started = time.perf_counter()
    for script in scripts:
        print(f"\n=== {script.name} ===", flush=True)
        began = time.time()
        summary[script.stem] = run_one(script, args.timeout)
        summary[script.stem]["results"] = results_of(script.stem, began)
    total = round(time.perf_counter() - started, 1)

    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"Benchmarks: {total:.0f} s in all (budget {BUDGET:.0f} s)")
    for column in ("bench", "exit", "seconds", "results"):
        table.add_column(column, justify="right" if column == "seconds" else "left")
    for name, entry in summary.items():
        ok = entry["exit"] == 0
        table.add_row(name, f"[green]{entry['exit']}[/green]" if ok else f"[red]{entry['exit']}[/red]",
                      f"{entry['seconds']:.1f}", ", ".join(entry["results"]))
    Console(width=None if sys.stdout.isatty() else 140).print(table)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "run_all.json").write_text(json.dumps({"total_seconds": total, "budget_seconds": BUDGET,
                                                      "benches": summary}, indent=2) + "\n", encoding="utf-8")
    failed = [name for name, entry in summary.items() if entry["exit"] != 0]
    if total > BUDGET:
        print(f"over budget: {total:.0f} s > {BUDGET:.0f} s")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Benchmark: the transcript observer — how fast it ingests Claude Code transcripts, and what it costs idle.

Transcripts are synthetic but shaped like real ones (tests/integration/test_observer_synth.py): several large
Read outputs per request, stored twice per line, whole original files in Edit results.
- parse: reading + parsing + chunking + digests (the engine without database or embedding), in-process.
- end-to-end: the real `cems observe --once --json` in a new process on a throwaway CEMS_HOME (server already
  running): wall time including interpreter start and model load, observations stored (each embedded with
  the local model: this is what dominates), peak RSS of the process.
- idle: the real foreground `cems observe` once it has caught up, CPU time (utime+stime from /proc) over
  --idle-seconds with nothing changing.
Results: bench/results/observer.json.

    python bench/observer_throughput.py [--sizes 1,10] [--parse-sizes 10,50] [--idle-seconds 60]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

from _common import REPO, cems, print_table, throwaway_home, write_results

from tests.integration.test_observer_synth import write_sized

MiB = 1024 * 1024
SHAPE = {"output_chars": (2000, 40000), "reads": (3, 12)}
MEASURED_RUN = textwrap.dedent("""
    import json, resource, subprocess, sys, time
    started = time.perf_counter()
    run = subprocess.run([sys.executable, "-m", "cems_cli.cli.app", "observe", "--once", "--json"],
                         capture_output=True)
    print(json.dumps({"code": run.returncode, "stdout": run.stdout.decode(),
                      "stderr": run.stderr.decode()[-2000:],
                      "seconds": time.perf_counter() - started,
                      "peak_rss_kib": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}))
""")


def make_transcript(folder: Path, megabytes: float, seed: int) -> tuple[Path, int]:
    path = folder / "-home-dev-shop-api" / f"bench-session-{seed}.jsonl"
    size, _turns = write_sized(
        path, int(megabytes * MiB), seed=seed, session_id=f"bench-session-{seed:04d}", **SHAPE
    )
    old = time.time() - 3600  # idle: the last request is finalized too
    os.utime(path, (old, old))
    return path, size


def parse_only(path: Path) -> dict:
    from cems_cli.capture.chunks import ChunkBuilder
    from cems_cli.capture.transcript import LineReader, Malformed, parse_line

    started = time.perf_counter()
    builder = ChunkBuilder()
    chunks = lines = 0
    with open(path, "rb") as handle:
        for raw in LineReader(handle, 0, 32 * MiB):
            lines += 1
            try:
                line = parse_line(raw.data or b"")
            except Malformed:
                continue
            if line is not None:
                chunks += len(builder.feed(line))
    chunks += len(builder.flush())
    seconds = time.perf_counter() - started
    size = path.stat().st_size
    return {
        "mb": round(size / MiB, 1),
        "lines": lines,
        "chunks": chunks,
        "seconds": round(seconds, 2),
        "mb_per_s": round(size / MiB / seconds, 1),
    }


def end_to_end(root: Path, env: dict[str, str], size: int) -> dict:
    full = (
        {k: v for k, v in os.environ.items() if not k.startswith("CEMS_")}
        | env
        | {"CEMS_OBSERVER_PATHS": str(root)}
    )
    done = subprocess.run(
        [sys.executable, "-c", MEASURED_RUN],
        env=full,
        cwd=str(REPO),
        capture_output=True,
        timeout=1800,
        check=True,
    )
    run = json.loads(done.stdout)
    if run["code"] != 0:
        raise SystemExit(f"cems observe --once failed: {run['stderr']}")
    report = json.loads(run["stdout"])
    seconds = run["seconds"]
    return {
        "mb": round(size / MiB, 1),
        "seconds": round(seconds, 1),
        "mb_per_s": round(size / MiB / seconds, 2),
        "observations": report["observations"],
        "observations_per_s": round(report["observations"] / seconds, 1),
        "peak_rss_mib": round(run["peak_rss_kib"] / 1024),
        "malformed": report["malformed"],
        "errors": len(report["errors"]),
    }


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def idle_cpu(root: Path, env: dict[str, str], seconds: float) -> dict:
    full = (
        {k: v for k, v in os.environ.items() if not k.startswith("CEMS_")}
        | env
        | {"CEMS_OBSERVER_PATHS": str(root)}
    )
    process = subprocess.Popen(
        [sys.executable, "-m", "cems_cli.cli.app", "observe"],
        env=full,
        cwd=str(REPO),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        time.sleep(20)  # start-up, the first pass and the first tick's full pass are not idle time
        before = cpu_seconds(process.pid)
        time.sleep(seconds)
        used = cpu_seconds(process.pid) - before
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=60)
    return {
        "seconds": seconds,
        "cpu_seconds": round(used, 3),
        "percent_of_one_core": round(100 * used / seconds, 3),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1,10", help="MB per transcript for the end-to-end runs")
    parser.add_argument("--parse-sizes", default="10,50", help="MB per transcript for the parse-only runs")
    parser.add_argument("--idle-seconds", type=float, default=60.0)
    args = parser.parse_args()
    sizes = [float(s) for s in args.sizes.split(",") if s.strip()]
    parse_sizes = [float(s) for s in args.parse_sizes.split(",") if s.strip()]

    results: dict = {
        "shape": {"output_chars": list(SHAPE["output_chars"]), "reads_per_request": list(SHAPE["reads"])}
    }
    with tempfile.TemporaryDirectory(prefix="cems-observer-bench-") as scratch:
        base = Path(scratch)
        results["parse"] = [
            parse_only(make_transcript(base / f"parse-{mb:g}", mb, seed=int(mb * 10))[0])
            for mb in parse_sizes
        ]
        with throwaway_home() as home:
            env = {"CEMS_HOME": str(home), "CEMS_USER": "bench", "CEMS_EMBEDDING_BACKEND": "local"}
            started = cems(["db", "start"], env)
            if started.returncode != 0:
                raise SystemExit(started.stderr.decode())
            runs = []
            for mb in sizes:
                root = base / f"e2e-{mb:g}"
                _path, size = make_transcript(root, mb, seed=100 + int(mb * 10))
                runs.append(end_to_end(root, {**env, "CEMS_USER": f"bench-{mb:g}"}, size))
            results["end_to_end"] = runs
            results["idle"] = idle_cpu(
                base / f"e2e-{sizes[0]:g}" if sizes else base,
                {**env, "CEMS_USER": "bench-1"},
                args.idle_seconds,
            )

    print_table(
        "Observer: parse + chunk + digest (no database, no embedding)",
        ["transcript MB", "lines", "chunks", "seconds", "MB/s"],
        [[r["mb"], r["lines"], r["chunks"], r["seconds"], r["mb_per_s"]] for r in results["parse"]],
    )
    print_table(
        "Observer end to end: `cems observe --once` (new process, local embeddings)",
        ["transcript MB", "seconds", "MB/s", "observations", "obs/s", "peak RSS MiB"],
        [
            [
                r["mb"],
                r["seconds"],
                r["mb_per_s"],
                r["observations"],
                r["observations_per_s"],
                r["peak_rss_mib"],
            ]
            for r in results["end_to_end"]
        ],
    )
    idle = results["idle"]
    print_table(
        "Observer idle (foreground daemon, nothing changing)",
        ["seconds", "CPU seconds", "% of one core"],
        [[idle["seconds"], idle["cpu_seconds"], idle["percent_of_one_core"]]],
    )
    path = write_results("observer", results)
    print(f"results: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

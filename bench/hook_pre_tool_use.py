"""Benchmark: the PreToolUse hook as a whole process, against a bare interpreter start.

Writes a 500-rule snapshot into a temporary CEMS_HOME, runs hooks/pre_tool_use.py N times per scenario on a
Bash payload, runs `python -c pass` N times with the same interpreter, and prints median / p95 / ratio.
Scenarios take turns run by run, so load from other processes spreads evenly over them.
Results go to bench/results/pre_tool_use.json.

Bytecode: the hook runs from a copy of hooks/ and cems_cli/ in a temp dir (the repository is not touched).
The main scenarios precompile that copy, as `pip install` does; one extra scenario runs a second copy with
PYTHONDONTWRITEBYTECODE=1, so every cems module is compiled from source on each call (a source checkout in a
shell that sets that variable). The interpreter's own stdlib bytecode is used in every scenario.

    python bench/hook_pre_tool_use.py [--runs 30]
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
HOOK = REPO / "hooks" / "pre_tool_use.py"
RESULTS = REPO / "bench" / "results" / "pre_tool_use.json"
sys.path.insert(0, str(REPO))

from cems_cli.rules.model import make_rule  # noqa: E402
from cems_cli.rules.snapshot import write_snapshot  # noqa: E402


def build_rules(count: int = 500, regex_rules: int = 0) -> list:
    """A plausible mix: mostly Bash command globs, then file paths, MCP tools, web fetches, project rules."""
    rules = []
    tools = ["git", "npm", "docker", "kubectl", "terraform", "aws", "gcloud", "psql", "rm", "curl"]
    for i in range(count):
        kind = i % 10
        tool = tools[i % len(tools)]
        if i < regex_rules:
            rules.append(make_rule(rf"^{tool}\s+danger{i}\b", "Bash", action="block", regex=True))
        elif kind < 6:
            action = ("block", "ask", "warn")[i % 3]
            rules.append(make_rule(f"{tool} danger-{i} --force*", "Bash", action=action, reason=f"rule {i}"))
        elif kind < 8:
            rules.append(make_rule(f"*/protected-{i}/*", ("Edit", "Write")[i % 2], action="ask"))
        elif kind == 8:
            rules.append(make_rule("*", f"mcp__server{i}__*", action="ask"))
        else:
            rules.append(make_rule(f"{tool} deploy-{i}*", "Bash", project=f"org/repo{i}"))
    rules.append(make_rule("git push --force*", "Bash", reason="force pushes rewrite history"))
    return rules[-count:] if len(rules) > count else rules


def install_copy(target: Path) -> Path:
    """hooks/ and cems_cli/ side by side, without any __pycache__ from the working tree."""
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(REPO / "cems_cli", target / "cems_cli", ignore=ignore)
    shutil.copytree(REPO / "hooks", target / "hooks", ignore=ignore)
    return target


def payload(command: str) -> bytes:
    return json.dumps({
        "session_id": "bench", "transcript_path": "/tmp/x.jsonl", "cwd": "/tmp", "permission_mode": "default",
        "hook_event_name": "PreToolUse", "tool_name": "Bash",
        "tool_input": {"command": command, "description": "bench"}, "tool_use_id": "toolu_bench",
    }).encode()


def run_once(command: list[str], stdin: bytes, env: dict[str, str]) -> float:
    started = time.perf_counter()
    proc = subprocess.run(command, input=stdin, capture_output=True, env=env)
    elapsed = (time.perf_counter() - started) * 1000
    if proc.returncode != 0:
        raise SystemExit(f"{command} exited {proc.returncode}: {proc.stderr.decode()[-500:]}")
    return elapsed


def interleaved(scenarios: list[tuple], runs: int, warmup: int = 3) -> list[list[float]]:
    """Round-robin over the scenarios, so background load on a shared machine hits them all alike."""
    samples: list[list[float]] = [[] for _ in scenarios]
    for index in range(warmup + runs):
        for slot, (command, stdin, env) in enumerate(scenarios):
            elapsed = run_once(command, stdin, env)
            if index >= warmup:
                samples[slot].append(elapsed)
    return samples


def p95(samples: list[float]) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="cems-bench-") as scratch:
        scratch_path = Path(scratch)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("CEMS_", "PYTHON"))}
        uncached_env = {**env, "PYTHONDONTWRITEBYTECODE": "1"}
        compiled = install_copy(scratch_path / "installed")
        source_only = install_copy(scratch_path / "source")
        compileall.compile_dir(str(compiled / "cems_cli"), quiet=1)

        homes = {}
        for name, regex_rules in (("glob", 0), ("regex", 25)):
            home = scratch_path / name
            rules = build_rules(500, regex_rules)
            write_snapshot(rules, home / "rules.snapshot.json")
            homes[name] = (home, len(rules))

        hook = [sys.executable, str(compiled / "hooks" / HOOK.name)]
        hook_from_source = [sys.executable, str(source_only / "hooks" / HOOK.name)]
        bare = [sys.executable, "-c", "pass"]
        no_match, block = payload("git status --short"), payload("cd repo && git push --force origin main")
        parsed = payload("pytest -q 2>&1 | tail -5")  # a redirection: tree-sitter parses this line
        scenarios = [
            ("python -c pass", bare, b"", env, None),
            ("hook, 500 glob rules, no match", hook, no_match, env, "glob"),
            ("hook, 500 glob rules, block", hook, block, env, "glob"),
            ("hook, 500 glob rules, no match, line parsed by tree-sitter", hook, parsed, env, "glob"),
            ("hook, 500 rules incl. 25 Bash regex, no match", hook, no_match, env, "regex"),
            ("hook, 500 glob rules, no match, cems not precompiled", hook_from_source, no_match, uncached_env,
             "glob"),
        ]
        prepared = [
            (command, stdin, {**run_env, "CEMS_HOME": str(homes[home_key][0])} if home_key else run_env)
            for _, command, stdin, run_env, home_key in scenarios
        ]
        all_samples = interleaved(prepared, args.runs)
        baseline = statistics.median(all_samples[0])
        rows = []
        for (label, _, _, _, home_key), samples in zip(scenarios, all_samples, strict=True):
            median = statistics.median(samples)
            rows.append({
                "scenario": label,
                "rules": homes[home_key][1] if home_key else 0,
                "runs": len(samples),
                "median_ms": round(median, 2),
                "p95_ms": round(p95(samples), 2),
                "min_ms": round(min(samples), 2),
                "ratio_to_bare_python": round(median / baseline, 2),
            })

    width = max(len(r["scenario"]) for r in rows)
    print(f"{'scenario':<{width}}  {'median':>8}  {'p95':>8}  {'min':>8}  {'ratio':>6}")
    for r in rows:
        times = f"{r['median_ms']:>6.1f}ms  {r['p95_ms']:>6.1f}ms  {r['min_ms']:>6.1f}ms"
        print(f"{r['scenario']:<{width}}  {times}  {r['ratio_to_bare_python']:>5.2f}x")

    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps({
        "benchmark": "pre_tool_use hook, whole process",
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "python": sys.version.split()[0],
        "executable": sys.executable,
        "machine": f"{platform.system()} {platform.machine()}, {os.cpu_count()} CPUs",
        "targets": {"median_ms_max": 50, "ratio_to_bare_python_max": 2.5},
        "results": rows,
    }, indent=2) + "\n", encoding="utf-8")
    print(f"\nwrote {RESULTS.relative_to(REPO)}")


if __name__ == "__main__":
    main()

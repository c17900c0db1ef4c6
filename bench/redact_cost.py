"""Benchmark: what redaction costs the PostToolUse hook per call, on typical 10 KB tool outputs.

Three outputs of 10 KB each, as the hook sees them: a source file read with line numbers (this repository's
`cems_cli/config.py`, full of `token`/`key`/`secret` names, so every name-based gate opens), a test run's
log, and a shell session that prints a few secrets (an `.env`, a `curl`, an `.netrc`). For each it prints
the median and p95 of `sanitize_for_storage` over many calls in one process (patterns already compiled),
and separately what importing the module (compiling its patterns) costs in a fresh interpreter, which the
hook pays only when `safe_text.may_need_redaction` says a text may hold a secret.
Writes bench/results/redact_cost.json.

With --baseline (another checkout's cems_cli/text/redact.py, e.g. from `git archive main`), both versions
run interleaved, call for call, so a loaded machine slows both alike; min and median are printed for each.

    python bench/redact_cost.py [--calls 300] [--baseline PATH]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
RESULTS = REPO / "bench" / "results" / "redact_cost.json"
SIZE = 10_000


def _fit(text: str) -> str:
    return (text * (SIZE // len(text) + 1))[:SIZE]


def source_read() -> str:
    lines = (REPO / "cems_cli" / "config.py").read_text(encoding="utf-8").splitlines()
    return _fit("".join(f"{number:>6}\t{line}\n" for number, line in enumerate(lines, 1)))


def test_log() -> str:
    lines = [f"tests/unit/test_api_{n % 40}.py::test_case_{n} PASSED" for n in range(120)]
    lines += ["", "---------- coverage: platform linux, python 3.11 ----------", "127 passed in 4.21s"]
    return _fit("\n".join(lines) + "\n")


def shell_with_secrets() -> str:
    # Built from pieces so the file does not itself look like it leaks credentials.
    session = (
        "$ cat .env\nDATABASE_URL=postgres://app:" + "s3cr3tPw9" + "@db:5432/app\n"
        "STRIPE_WEBHOOK_SECRET=whsec_" + "Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z" + "\nDEBUG=false\n"
        "$ curl -s -H 'Authorization: Bearer " + "abc.DEF-123_xyz9" + "' https://api.example.com/v1/items\n"
        '{"items": [{"id": 1, "name": "widget", "price": 9.99}, {"id": 2, "name": "gadget", "price": 4.5}]}\n'
        "$ cat ~/.netrc\nmachine api.example.com login ci password " + "Tr0ub4dorPw9" + "\n"
        "$ ls -la\ntotal 48\ndrwxr-xr-x  5 me me 4096 Nov 27 10:00 .\n"
        "-rw-r--r--  1 me me  812 Nov 27 README.md\n"
    )
    return _fit(session)


OUTPUTS = {"source_read": source_read, "test_log": test_log, "shell_with_secrets": shell_with_secrets}


def per_call_ms(text: str, calls: int) -> list[float]:
    from cems_cli.text.redact import sanitize_for_storage

    for _ in range(5):
        sanitize_for_storage(text)
    samples = []
    for _ in range(calls):
        started = time.perf_counter()
        sanitize_for_storage(text)
        samples.append((time.perf_counter() - started) * 1000)
    return samples


def _load(path: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None, path
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def compare(baseline: Path, calls: int) -> dict[str, object]:
    """This checkout's redaction against `baseline`'s, call for call on each output: min and median ms."""
    versions = {
        "baseline": _load(baseline, "baseline_redact"),
        "this": _load(REPO / "cems_cli" / "text" / "redact.py", "this_redact"),
    }
    report: dict[str, object] = {}
    for name, build in OUTPUTS.items():
        text = build()
        samples: dict[str, list[float]] = {label: [] for label in versions}
        for _ in range(calls):
            for label, module in versions.items():
                started = time.perf_counter()
                module.sanitize_for_storage(text)
                samples[label].append((time.perf_counter() - started) * 1000)
        stats = {
            label: {"min_ms": round(min(values), 3), "median_ms": round(statistics.median(values), 3)}
            for label, values in samples.items()
        }
        report[name] = stats
        shown = "   ".join(
            f"{label} min {v['min_ms']:.3f} median {v['median_ms']:.3f} ms" for label, v in stats.items()
        )
        print(f"{name:<20} {shown}")
    return report


def import_ms(runs: int = 15) -> float:
    """Median extra cost of `import cems_cli.text.redact` (patterns compiled) over a bare interpreter."""
    def median_of(code: str) -> float:
        samples = []
        for _ in range(runs):
            started = time.perf_counter()
            subprocess.run([sys.executable, "-c", code], check=True, cwd=REPO)
            samples.append((time.perf_counter() - started) * 1000)
        return statistics.median(samples)

    return median_of("import cems_cli.text.redact") - median_of("import cems_cli.text")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--baseline", type=Path, help="another checkout's cems_cli/text/redact.py to compare")
    args = parser.parse_args()
    report: dict[str, object] = {"benchmark": "redaction per call on 10 KB tool outputs", "calls": args.calls}
    if args.baseline:
        report["against_baseline"] = compare(args.baseline, args.calls)
    for name, build in OUTPUTS.items():
        samples = sorted(per_call_ms(build(), args.calls))
        report[name] = {
            "median_ms": round(statistics.median(samples), 3),
            "p95_ms": round(samples[int(0.95 * (len(samples) - 1))], 3),
        }
        print(f"{name:<20} median {report[name]['median_ms']:.3f} ms   p95 {report[name]['p95_ms']:.3f} ms")
    report["import_ms"] = round(import_ms(), 1)
    print(f"{'import (compile)':<20} {report['import_ms']:.1f} ms")
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()

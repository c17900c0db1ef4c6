"""Benchmark: rules on Bash commands against a corpus of harmful variants and safe siblings.

bench/command_corpus.jsonl holds one command per line with the rule set it is checked against and what
must happen: `block` (a deny, or an ask for a command that cannot be checked) or `allow` (no decision).
Rule sets: `rm` = `Bash: rm -rf*`, `root` = `Bash: rm -rf /`, `push` = `Bash: git push --force*`,
`edit` = `Edit: migrations/*` in a project where `db` is a symlink to `migrations`. Every rule set also
holds 500 unrelated rules, as a real snapshot would.

Also measured: the cost of loading tree-sitter the way the hook does (its C bindings only) and the full
packages, each in a fresh interpreter (fastest of N runs), and the time to decide on one command line.
Results go to bench/results/command_rules.json. Targets: ≥ 98% of harmful commands blocked, ≥ 98% of
safe ones allowed.

    python bench/command_rules.py [--runs 15]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CORPUS = REPO / "bench" / "command_corpus.jsonl"
RESULTS = REPO / "bench" / "results" / "command_rules.json"
sys.path.insert(0, str(REPO))

from cems_cli.rules.matcher import decide  # noqa: E402
from cems_cli.rules.model import make_rule  # noqa: E402

RULE_SETS = {
    "rm": [("rm -rf*", "Bash")],
    "root": [("rm -rf /", "Bash")],
    "push": [("git push --force*", "Bash")],
    "edit": [("migrations/*", "Edit")],
}


def filler(count: int = 500) -> list:
    """Unrelated rules (never matching the corpus), so each check walks a realistic snapshot."""
    tools = ["npm", "docker", "kubectl", "terraform", "aws", "gcloud", "psql", "curl"]
    return [
        make_rule(
            f"{tools[i % len(tools)]} danger-{i} --force*", "Bash", action=("block", "ask", "warn")[i % 3]
        )
        for i in range(count)
    ]


def measure_import(code: str, runs: int) -> float:
    """Milliseconds `code` takes in a fresh interpreter (timed inside it, so interpreter start-up is not
    counted), fastest of `runs`: on a shared machine the median mostly measures the neighbours' load."""
    timed = ("import time, cems_cli.command.model; _t = time.perf_counter(); " + code
             + "; print((time.perf_counter() - _t) * 1000)")
    samples = []
    for _ in range(runs):
        out = subprocess.run([sys.executable, "-c", timed], check=True, cwd=str(REPO), capture_output=True)
        samples.append(float(out.stdout.decode().split()[-1]))
    return min(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    rows = [json.loads(line) for line in CORPUS.read_text(encoding="utf-8").splitlines() if line.strip()]
    unrelated = filler()
    rule_sets = {
        name: [make_rule(p, t, reason=name) for p, t in specs] + unrelated
        for name, specs in RULE_SETS.items()
    }
    outcomes: dict[str, list[int]] = {"block": [0, 0], "allow": [0, 0]}
    misses = []
    asks = 0
    with tempfile.TemporaryDirectory(prefix="cems-corpus-") as project:
        os.makedirs(os.path.join(project, "migrations"))
        os.symlink("migrations", os.path.join(project, "db"))
        started = time.perf_counter()
        for row in rows:
            decision = decide(rule_sets[row["rules"]], "Bash", {"command": row["command"]}, cwd=project)
            blocked = decision is not None and decision.action in ("block", "ask")
            asks += decision is not None and bool(decision.unchecked)
            good = blocked if row["expect"] == "block" else decision is None
            outcomes[row["expect"]][0 if good else 1] += 1
            if not good:
                misses.append({**row, "decision": repr(decision)})
        per_command_ms = (time.perf_counter() - started) * 1000 / len(rows)

    bindings = measure_import("from cems_cli.command.tree import parser; parser()", args.runs)
    documented = "import tree_sitter as t, tree_sitter_bash as b; t.Parser(t.Language(b.language()))"
    packages = measure_import(documented, args.runs)
    one_line = "from cems_cli.command.model import analyse; analyse('rm${IFS}-rf / 2>&1 | tee x')"
    parse = measure_import(one_line, args.runs)

    blocked_rate = outcomes["block"][0] / max(1, sum(outcomes["block"]))
    allowed_rate = outcomes["allow"][0] / max(1, sum(outcomes["allow"]))
    print(f"corpus: {len(rows)} commands ({sum(outcomes['block'])} harmful, {sum(outcomes['allow'])} safe)")
    print(f"harmful blocked: {blocked_rate:.1%} (of which 'cannot be checked' → ask: {asks})")
    print(f"safe allowed:    {allowed_rate:.1%}")
    print(f"decide() per command, 501 rules, in process: {per_command_ms:.2f} ms")
    print(f"loading tree-sitter as the hook does (C bindings only): {bindings:.1f} ms; as documented "
          f"(the packages, with typing and importlib.resources): {packages:.1f} ms;")
    print(f"loading it and analysing one line: {parse:.1f} ms (fastest of {args.runs} fresh interpreters)")
    for miss in misses:
        print(
            f"  MISS expected {miss['expect']:5} [{miss['rules']}] {miss['command']!r} → {miss['decision']}"
        )

    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(
        json.dumps(
            {
                "benchmark": "Bash command rules: harmful variants and safe siblings",
                "measured_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                "corpus": len(rows),
                "harmful_blocked": round(blocked_rate, 4),
                "safe_allowed": round(allowed_rate, 4),
                "asked_cannot_be_checked": asks,
                "targets": {"harmful_blocked_min": 0.98, "safe_allowed_min": 0.98},
                "decide_ms_per_command": round(per_command_ms, 3),
                "tree_sitter_bindings_ms": round(bindings, 2),
                "tree_sitter_packages_ms": round(packages, 2),
                "load_and_analyse_one_line_ms": round(parse, 2),
                "misses": misses,
            },
            indent=2,
        )
        + "\n",
        encoding="utf-8",
    )
    print(f"\nwrote {RESULTS.relative_to(REPO)}")


if __name__ == "__main__":
    main()

"""`decide` with the hook's regex budget anywhere, not only on a main thread.

The budget (`matcher.REGEX_BUDGET_SECONDS`) stops a regex search with SIGALRM, and Python delivers signals to
the main thread only. The MCP server runs each tool on a worker thread (`cems_cli.mcp.server`), where a slow
rule would run unbounded and freeze the server: there the decision is made in a child process, which has
the budget, and which is killed if it still has not answered (its start-up included) after
CHILD_TIMEOUT_SECONDS. On the main thread (`cems rule test`, the library) it runs in process.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from cems_cli.errors import UserError
from cems_cli.rules.matcher import Decision, decide
from cems_cli.rules.model import Rule

CHILD_TIMEOUT_SECONDS = 15.0  # interpreter start and imports, on a busy machine; the matching takes 0.1 s


def decide_bounded(
    rules: Sequence[Rule],
    tool_name: str,
    tool_input: Mapping[str, Any],
    project: str | None,
    cwd: str | None,
    on_timeout: str,
) -> Decision | None:
    """What the hook would decide, within the hook's regex budget from any thread."""
    if threading.current_thread() is threading.main_thread() or not any(rule.regex for rule in rules):
        return decide(rules, tool_name, tool_input, project, cwd=cwd, on_timeout=on_timeout)
    request = {
        "rules": [rule.to_dict() for rule in rules], "tool": tool_name, "input": dict(tool_input),
        "project": project, "cwd": cwd, "on_timeout": on_timeout,
    }
    from cems_cli.plumbing.procs import python_argv, run

    try:
        # Isolated like every child of CEMS (plumbing/procs.py): the MCP server runs in the agent's repo.
        done = run(python_argv("cems_cli.rules.bounded"), input=json.dumps(request),
                   timeout=CHILD_TIMEOUT_SECONDS)
        if done.returncode != 0:
            last = (done.stderr.strip().splitlines() or ["no output"])[-1]
            raise UserError(f"the rules could not be tested: {last}")
        answer = json.loads(done.stdout)
    except subprocess.TimeoutExpired:
        raise UserError(f"the rules could not be tested within {CHILD_TIMEOUT_SECONDS:.0f} s") from None
    except (ValueError, OSError) as error:
        raise UserError(f"the rules could not be tested: {error}") from None
    if answer is None:
        return None
    return Decision(answer["action"], rules[answer["index"]], answer["value"], unchecked=answer["unchecked"])


def _main() -> None:
    request = json.loads(sys.stdin.read())
    rules = [Rule.from_dict(record) for record in request["rules"]]
    decision = decide(rules, request["tool"], request["input"], request["project"], cwd=request["cwd"],
                      on_timeout=request["on_timeout"])
    answer = None
    if decision is not None:
        index = next(i for i, rule in enumerate(rules) if rule is decision.rule)
        answer = {"action": decision.action, "index": index, "value": decision.value,
                  "unchecked": decision.unchecked}
    sys.stdout.write(json.dumps(answer))


if __name__ == "__main__":
    _main()

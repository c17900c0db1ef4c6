"""The warm search server answers hooks side by side, each request on a connection of its pool."""

from __future__ import annotations

import threading
from pathlib import Path


def test_concurrent_prompts_are_all_answered(env, cli):
    from cems_cli.server.client import call, call_or_start
    from cems_cli.server.daemon import POOL_SIZE, server_pid

    for text in ("Deploys run through the pipeline on main.", "The session cache lives in Redis.",
                 "Integration tests need docker compose up -d postgres."):
        assert cli("remember", text).code == 0
    home = env["CEMS_HOME"]
    base = {"op": "search", "user": env["CEMS_USER"], "project": env["CEMS_PROJECT"]}
    assert call_or_start(home, {**base, "query": "where does the session cache live?"}, 60.0) is not None
    pid = server_pid(Path(home))
    answers: list[list[str]] = []
    failures: list[str] = []

    def ask(worker: int) -> None:
        for question in ("where does the session cache live?", "how do deploys run?",
                         "what do the integration tests need?"):
            answer = call(home, {**base, "query": f"{question} ({worker})"}, 10.0)
            if answer is None or "error" in answer:
                failures.append(repr(answer))
            else:
                answers.append([r["content"] for r in answer["results"]])

    threads = [threading.Thread(target=ask, args=(n,)) for n in range(2 * POOL_SIZE)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    assert len(answers) == 6 * POOL_SIZE and all(answers)
    assert server_pid(Path(home)) == pid

"""The prompt hook injects the block the search server formatted for it, and formats the results itself
only when the server (one started by an earlier version, still running) sent none."""

from __future__ import annotations

import pytest

from cems_cli.engine.recall import format_recall
from cems_cli.hookhandlers import user_prompt_submit

RESULT = {"id": "0123456789abcdef", "category": "patterns", "created_at": "2026-11-01T10:00:00+00:00",
          "content": "Run the tests with make test", "score": 0.9, "confidence": 0.8}


def _answer(monkeypatch: pytest.MonkeyPatch, answer: dict) -> str | None:
    from cems_cli.server import client

    monkeypatch.setattr(client, "call_or_start", lambda home, request, budget: answer)
    monkeypatch.setenv("CEMS_HOME", "/nonexistent-cems-home")
    out = user_prompt_submit.handle({"prompt": "how do I run the tests?", "cwd": "/tmp", "session_id": "s"})
    return None if out is None else out["hookSpecificOutput"]["additionalContext"]


def test_the_servers_block_is_injected_as_sent(monkeypatch):
    block = "<memory-recall>\nformatted by the server\n</memory-recall>"
    assert _answer(monkeypatch, {"results": [RESULT], "recall": block}) == block


def test_without_a_block_the_hook_formats_the_results(monkeypatch):
    assert _answer(monkeypatch, {"results": [RESULT]}) == format_recall([RESULT], None)
    # Not a string (a malformed answer): formatted here too.
    assert _answer(monkeypatch, {"results": [RESULT], "recall": ["x"]}) == format_recall([RESULT], None)


def test_no_results_inject_nothing_whatever_the_block(monkeypatch):
    assert _answer(monkeypatch, {"results": [], "recall": "stale"}) is None

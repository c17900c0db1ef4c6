"""Where the test data shipped with the repository lives.

Tests and bench scripts read their Claude Code payloads and sample transcript from here, inside the checkout,
so a fresh clone runs them with nothing beside it (tests/unit/test_no_shared_paths.py keeps it that way).
The payloads and the transcript describe one session: the same session id, cwd and tool_use ids throughout.
"""

from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
FIXTURES = TESTS / "fixtures" / "claude-code"
PAYLOADS = FIXTURES / "payloads"  # one stdin per hook event: <Event>.json, <Event>-<Tool>.json
SAMPLE_TRANSCRIPT = FIXTURES / "sample-transcript.jsonl"
SAMPLE_SESSION = "b7d41c09-5e2a-4f8b-a1c3-6e90f2d47a18"  # session_id of every payload, stem of the transcript

"""What the agent found out and said in its answer is kept: fact-bearing sentences, never filler; one memory
per fact (a decision the answer repeats, a blocked command tried again)."""

from __future__ import annotations

from pathlib import Path

import pytest

from cems_cli.capture import sessions
from cems_cli.capture.chunks import ChunkBuilder
from cems_cli.capture.extract import finding_sentences, near_duplicate, request_gist, states_a_fact
from cems_cli.capture.observations import Chunk
from cems_cli.capture.transcript import parse_line

FIXTURES = Path(__file__).parent.parent / "fixtures" / "findings"


def chunks(name: str) -> list[Chunk]:
    builder = ChunkBuilder()
    found: list[Chunk] = []
    for number, raw in enumerate((FIXTURES / f"{name}.jsonl").read_bytes().splitlines(), 1):
        line = parse_line(raw)
        if line is not None:
            builder.line_no = number
            found += builder.feed(line)
    return found + builder.flush()


def texts(name: str, category: str | None = None) -> list[str]:
    return [o.text for c in chunks(name) for o in c.observations if category in (None, o.category)]


@pytest.mark.parametrize(
    "sentence",
    [
        "Flags are read from config/flags.yaml by app/flags.py; staging overrides live in "
        "deploy/staging/flags.yaml.",
        "The e2e tests timed out because Playwright's browsers were missing; I installed them with "
        "npx playwright install chromium.",
        "The image only builds with DOCKER_BUILDKIT=1 because the Dockerfile uses cache mounts.",
        "The API pod was OOMKilled at its 256Mi limit; the staging values now allow 512Mi.",
        "The dev server listens on port 5173.",
        "We are on Go 1.23 now.",
    ],
)
def test_a_sentence_that_names_something_of_the_project_or_a_cause_is_a_fact(sentence):
    assert states_a_fact(sentence)


@pytest.mark.parametrize(
    "sentence",
    [
        "Done.",
        "API Error: 401 {\"type\":\"authentication_error\"} · Please run /login",
        "Let me know if you want me to change anything else.",
        "I'll now run the tests in `tests/unit`.",
        "If you'd like, I can add it to the `Makefile`.",
        "Here's what I found in `app/flags.py`:",
        "All 141 tests pass in 4.37s.",
        "This works for input/output and CI/CD alike.",
    ],
)
def test_filler_plans_and_status_lines_are_not_facts(sentence):
    assert not states_a_fact(sentence)


def test_the_question_said_again_is_not_a_finding():
    request = "Why does `make build` fail with `E: cache mount`?"
    assert finding_sentences("You asked why `make build` fails with `E: cache mount`.", request) == []
    assert finding_sentences("`make build` needs `DOCKER_BUILDKIT=1`.", request) == [
        "`make build` needs `DOCKER_BUILDKIT=1`."
    ]


def test_headings_alone_and_code_blocks_are_left_out_and_a_one_line_command_block_is_kept_inline():
    answer = "## Feature flags\n\nThe CLI is installed with:\n```bash\nbrew install 1password-cli\n```\nDone."
    assert finding_sentences(answer) == ["The CLI is installed with: `brew install 1password-cli`."]


def test_the_text_right_under_a_heading_is_not_taken_for_the_heading():
    answer = (
        "## Issue fixed\n\n### **Problem**\nThe error occurred because `frontend/package.json` pinned "
        "`@next/swc-darwin-arm64`, a macOS-only package.\n### Solution\n"
        "I removed the pin from `frontend/package.json`."
    )
    assert finding_sentences(answer) == [
        "The error occurred because `frontend/package.json` pinned `@next/swc-darwin-arm64`, "
        "a macOS-only package."
    ]


def test_the_options_an_answer_offers_are_not_what_it_found():
    answer = (
        "The agent service on Railway is not answering chat requests; its `/health` answers 200.\n\n"
        "**Would you like me to:**\n"
        "1. **Investigate the Railway agent** (check `OPENAI_API_KEY` in its variables)\n"
        "2. **Update the tasks.md** with our current progress\n\n"
        "The frontend on Vercel works: conversations are stored in `public.conversations`."
    )
    assert finding_sentences(answer) == [
        "The agent service on Railway is not answering chat requests; its `/health` answers 200.",
        "The frontend on Vercel works: conversations are stored in `public.conversations`.",
    ]
    # A question that is not an offer leaves the list under it alone.
    answer = "Should I use Postgres or SQLite? What I found:\n- Postgres runs on port 5433 in `compose.yaml`."
    assert finding_sentences(answer) == ["Postgres runs on port 5433 in `compose.yaml`."]


def test_what_another_memory_of_the_turn_holds_is_not_repeated():
    fix = (
        '`pnpm test:e2e` failed with "Executable doesn\'t exist"; '
        "it passed after `pnpm exec playwright install`."
    )
    answer = "After `pnpm exec playwright install` the e2e tests pass with `pnpm test:e2e`."
    assert finding_sentences(answer, known=[fix]) == []


def test_the_request_in_a_few_words():
    assert request_gist("Where are the feature flags defined? Also check staging.") == (
        "Where are the feature flags defined?"
    )
    long = "Please go through every one of the services in this repository and tell me which ones read flags"
    assert request_gist(long).endswith("…") and len(request_gist(long).split()) == 12
    notification = "<task-notification><task-id>b33</task-id><summary>Background build failed</summary>"
    assert request_gist(notification) == "Background build failed"



def test_the_request_leaves_out_the_acknowledgement_it_opens_with():
    assert request_gist("Awesome, now where are the flags defined?") == "now where are the flags defined?"
    assert request_gist("ok thanks! Which port does the API use?") == "Which port does the API use?"
    assert request_gist("Yes.") == request_gist("ok") == ""  # a reply that asks nothing names nothing
    # Only an acknowledgement said as one: "No tests …", "Right now …" are the request.
    assert request_gist("No tests may touch the network.") == "No tests may touch the network."
    assert request_gist("Right now the CI is red.") == "Right now the CI is red."


def test_asking_for_something_is_not_a_preference():
    from cems_cli.capture.extract import preference_sentences

    for request in ("I'd like a script that rotates the logs.", "I want you to add a retry button here."):
        assert preference_sentences(request) == [], request
    for stated in ("I'd rather use pnpm in this repository.", "I don't want any new dependencies here.",
                   "I prefer small commits with clear messages."):
        assert preference_sentences(stated) == [stated], stated

def test_a_session_that_only_looked_around_and_answered_leaves_its_finding_with_provenance():
    [chunk] = chunks("flags")
    [finding] = [o for o in chunk.observations if o.category == "learnings"]
    assert finding.text == (
        "Where are the feature flags defined? — Flags are read from `config/flags.yaml` by `app/flags.py`; "
        "staging overrides live in `deploy/staging/flags.yaml`, which the staging kustomization mounts over "
        "the defaults."
    )
    assert finding.session_id == "6a0f1c2e-1111-4a1a-9b1b-000000000001"
    assert finding.line == 9  # the answer's transcript line
    record = sessions.merge(sessions.new_record(chunk.session_id, chunk.project, "", False), chunk.session)
    assert not sessions.worth_remembering(record)  # no session record: it only looked around


def test_the_cause_and_its_fix_and_a_config_key_are_findings():
    [e2e] = texts("e2e", "learnings")
    assert "Playwright's browsers were missing" in e2e and "`npx playwright install chromium`" in e2e
    assert "Done" not in e2e
    [docker] = texts("docker", "learnings")
    assert "`DOCKER_BUILDKIT=1`" in docker and "cache mounts" in docker
    assert "Good question" not in docker and "Makefile" not in docker and "I'll now" not in docker


def test_a_decision_said_in_the_prompt_and_repeated_in_the_answer_is_one_memory():
    decisions = texts("decision", "decisions")
    assert decisions == [
        "We'll use Postgres advisory locks instead of Redis locks, so a crashed worker releases its lock "
        "with its connection."
    ]
    assert near_duplicate(decisions[0], "We'll use Postgres advisory locks instead of Redis locks.")
    assert not near_duplicate(decisions[0], "We'll use Redis for the session cache.")


def test_a_blocked_command_carries_one_key_and_its_attempts_and_alone_makes_no_session_record():
    [chunk] = chunks("blocked-2")
    blocked = [o for o in chunk.observations if o.key]
    assert {o.key for o in blocked} == {blocked[0].key} and len(blocked) == 2  # `--force` and `-f`: one key
    [first] = [o for o in chunks("blocked-1")[0].observations if o.key]
    assert first.key == blocked[0].key and first.count == 1
    record = sessions.merge(sessions.new_record(chunk.session_id, chunk.project, "", False), chunk.session)
    assert record["blocked"] and not sessions.worth_remembering(record)


def test_what_the_agent_did_is_the_session_records_business_not_a_finding():
    answer = "Pushed `feat/rate-limit` to origin. Added `httpx` to the dev group with `uv add --dev httpx`."
    assert finding_sentences(answer) == []
    caused = "Added `pythonpath = [\"src\"]` because pytest did not see the `src/` layout."
    assert finding_sentences(caused) == [caused]


def test_a_progress_reports_check_marked_actions_are_no_findings_and_its_states_are():
    answer = ("Done:\n✅ Updated .gitignore - Comprehensive Node.js gitignore\n"
              "✅ Run Reuse Logic: Added `findOrCreateRun()` to reuse existing runs\n"
              "✅ The frontend now runs on port 3001\n"
              "I've successfully completed the docs for section 3.6 in README.md.")
    assert finding_sentences(answer) == ["✅ The frontend now runs on port 3001"]


def test_a_fixs_title_names_the_command_not_the_folder_it_ran_in():
    from cems_cli.capture.digests import _LEADING_CD

    learning = '`cd /Users/dev/My\\ Drive/shop/frontend && npm run test:e2e` failed in shop with "x"'
    assert _LEADING_CD.sub("`", learning) == '`npm run test:e2e` failed in shop with "x"'
    assert _LEADING_CD.sub("`", "`npm test` failed") == "`npm test` failed"


def _line(kind: str, number: int, **content: object) -> bytes:
    import json

    when = f"2026-11-20T10:00:{number:02d}Z"
    base = {"sessionId": "narration-1", "cwd": "/home/dev/shop-api", "timestamp": when, "uuid": f"u{number}"}
    if kind == "user":
        record = {**base, "type": "user", "message": {"role": "user", "content": content["content"]}}
    else:
        record = {**base, "type": "assistant",
                  "message": {"id": f"m{number}", "role": "assistant", "content": content["content"]}}
    return json.dumps(record).encode()


def _turn(steps: int) -> list[bytes]:
    """A prompt, `steps` rounds of narration + a Bash call + its output, then the answer."""
    lines = [_line("user", 0, content="Where does the worker read its queue settings?")]
    for step in range(steps):
        number = 1 + 2 * step
        said = f"THOUGHT: the file config/step{step}.yaml may set port {8000 + step}."
        narration = {"type": "text", "text": said}
        call = {"type": "tool_use", "id": f"t{step}", "name": "Bash", "input": {"command": f"cat step{step}"}}
        lines.append(_line("assistant", number, content=[narration, call]))
        result = {"type": "tool_result", "tool_use_id": f"t{step}", "content": "ok"}
        lines.append(_line("user", number + 1, content=[result]))
    said = "The worker reads its queue settings from config/queue.toml (port 5672)."
    answer = {"type": "text", "text": said}
    lines.append(_line("assistant", 1 + 2 * steps, content=[answer]))
    return lines


@pytest.mark.parametrize("chunk_max_tools", [40, 3])
def test_only_the_answer_after_the_last_tool_call_leaves_findings(chunk_max_tools):
    """Narration before a tool call (an agent's THOUGHT) is no answer; a long turn split in parts keeps its
    answer in the part that ends it, and the parts cut mid-turn leave no finding."""
    from cems_cli.capture.observations import Limits

    builder = ChunkBuilder(Limits(chunk_max_tools=chunk_max_tools))
    found: list[Chunk] = []
    for number, raw in enumerate(_turn(8), 1):
        line = parse_line(raw)
        if line is not None:
            builder.line_no = number
            found += builder.feed(line)
    found += builder.flush()
    learnings = [o.text for c in found for o in c.observations if o.category == "learnings"]
    assert len(found) == (1 if chunk_max_tools == 40 else 3)
    assert len(learnings) == 1 and "config/queue.toml" in learnings[0], learnings
    assert not any("step" in text for text in learnings)

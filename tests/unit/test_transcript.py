"""Transcript parsing and chunking without a database: lines from bytes, events from lines, chunks from
events, digests and the LLM answer's validation."""

from __future__ import annotations

import io
import json
import random

import pytest

from cems_cli.capture.chunks import ChunkBuilder
from cems_cli.capture.extract import decision_sentences, sentences
from cems_cli.capture.extraction import parse_extraction
from cems_cli.capture.observations import NO_OBSERVE_MARKER, Limits, clip, command_key
from cems_cli.capture.transcript import (
    AssistantText,
    LineReader,
    Malformed,
    Prompt,
    ToolCall,
    ToolOutput,
    parse_line,
)
from tests.support.paths import SAMPLE_SESSION, SAMPLE_TRANSCRIPT


def sample_lines() -> list[bytes]:
    return SAMPLE_TRANSCRIPT.read_bytes().splitlines()


def record(
    kind: str, content, *, session="s-1", message_id=None, ts="2026-03-02T09:00:00.000Z", **extra
) -> bytes:
    data = {
        "type": kind,
        "sessionId": session,
        "cwd": "/home/dev/acme-api",
        "gitBranch": "main",
        "timestamp": ts,
        **extra,
    }
    if kind == "assistant":
        data["message"] = {"id": message_id or "msg_1", "role": "assistant", "content": content}
    else:
        data["message"] = {"role": "user", "content": content}
    return json.dumps(data).encode()


def prompt(text: str, **kw) -> bytes:
    return record("user", text, **kw)


def say(text: str, message_id: str = "msg_1", **kw) -> bytes:
    return record("assistant", [{"type": "text", "text": text}], message_id=message_id, **kw)


def call(tool_id: str, name: str, tool_input: dict, message_id: str = "msg_1", **kw) -> bytes:
    return record(
        "assistant",
        [{"type": "tool_use", "id": tool_id, "name": name, "input": tool_input}],
        message_id=message_id,
        **kw,
    )


def result(tool_id: str, output: str, error: bool = False, **kw) -> bytes:
    block = {"type": "tool_result", "tool_use_id": tool_id, "content": output}
    if error:
        block["is_error"] = True
    return record("user", [block], **kw)


def fold(lines: list[bytes], limits: Limits | None = None, flush: bool = True, **options):
    builder = ChunkBuilder(limits, **options)
    chunks = []
    for number, raw in enumerate(lines, start=1):
        line = parse_line(raw)
        if line is not None:
            builder.line_no = number
            chunks.extend(builder.feed(line))
    if flush:
        chunks.extend(builder.flush())
    return chunks


# --------------------------------------------------------------------------- lines


def test_line_reader_returns_only_complete_lines_and_resumes_where_it_stopped():
    data = b'{"a": 1}\n{"b": 2}\n{"c": 3'
    reader = LineReader(io.BytesIO(data), 0, max_line=1024, block=4)  # lines span read blocks
    assert [(line.data, line.end) for line in reader] == [(b'{"a": 1}', 9), (b'{"b": 2}', 18)]
    assert reader.position == 18  # the unfinished third line is left for the next read
    resumed = LineReader(io.BytesIO(data + b"}\n"), reader.position, max_line=1024)
    assert [line.data for line in resumed] == [b'{"c": 3}']


def test_line_reader_skips_an_oversized_line_without_holding_it():
    data = b"short\n" + b"x" * 5000 + b"\nafter\n"
    reader = LineReader(io.BytesIO(data), 0, max_line=100, block=64)
    lines = list(reader)
    assert [line.data for line in lines] == [b"short", None, b"after"]
    assert lines[1].end == 6 + 5001 and reader.position == len(data)
    assert len(reader._buffer) < 200  # never accumulated the long line
    unfinished = LineReader(io.BytesIO(b"ok\n" + b"y" * 500), 0, max_line=100, block=64)
    assert [line.data for line in unfinished] == [b"ok"]
    assert unfinished.position == 3  # an oversized line still being written is resumed later, whole


# --------------------------------------------------------------------------- events


def test_sample_lines_parse_into_typed_events():
    lines = [parse_line(raw) for raw in sample_lines()]
    assert [type(e).__name__ for line in lines for e in line.events] == [
        "Prompt",
        "AssistantText",
        "ToolCall",
        "ToolOutput",
        "ToolCall",
        "ToolOutput",
    ]
    first = lines[0]
    assert (first.session_id, first.cwd, first.branch) == (
        SAMPLE_SESSION,
        "/home/priya/invoice-worker",
        "fix/webhook-timeout",
    )
    text, bash = lines[1].events[0], lines[2].events[0]
    assert isinstance(text, AssistantText) and isinstance(bash, ToolCall)
    assert text.message_id == bash.message_id == "msg_01WcN8hT5kLq2VxR9pYd3JmA"  # one streamed response
    assert bash.name == "Bash" and bash.input["command"] == 'rg -n "timeout=" src/'
    output = lines[3].events[0]
    assert isinstance(output, ToolOutput) and output.tool_id == bash.tool_id and not output.is_error
    # The line's toolUseResult travels with it (turn digests read Bash stdout/stderr from it).
    assert output.result["stdout"].startswith("src/invoice_worker/webhooks.py:12:")
    assert output.result["stderr"] == ""
    edit = lines[4].events[0]
    assert isinstance(edit, ToolCall) and edit.name == "Edit" and edit.message_id != bash.message_id
    assert parse_line(sample_lines()[0]).events[0] == Prompt(first.events[0].text)


@pytest.mark.parametrize("raw", [b"{not json", b"[1, 2]", b'"text"', b"null", b"\xff\xfe"])
def test_lines_that_are_not_json_objects_are_malformed(raw):
    with pytest.raises(Malformed):
        parse_line(raw)


def test_head_names_no_branch():
    assert parse_line(prompt("hi")).branch == "main"
    assert parse_line(prompt("hi", gitBranch="HEAD")).branch == ""


def test_blank_unknown_meta_and_noise_lines_carry_no_events():
    assert parse_line(b"   ") is None
    assert parse_line(b'{"type": "file-history-snapshot", "snapshot": {}}').events == []
    assert parse_line(b'{"type": "summary", "summary": "Fix redis"}').events == []
    assert parse_line(record("user", "Stop hook feedback: x", isMeta=True)).events == []
    assert parse_line(record("user", "summary of before", isCompactSummary=True)).events == []
    assert parse_line(prompt("<local-command-stdout>done</local-command-stdout>")).events == []
    assert parse_line(prompt("[Request interrupted by user]")).events == []
    assert (
        parse_line(record("assistant", [{"type": "thinking", "thinking": "hmm"}, {"type": "x"}])).events == []
    )


def test_prompts_lose_injected_reminders_and_slash_commands_keep_their_arguments():
    [event] = parse_line(prompt("<system-reminder>be brief</system-reminder>Fix the login bug")).events
    assert event == Prompt("Fix the login bug")
    [command] = parse_line(
        prompt(
            "<command-message>review</command-message><command-name>/review</command-name>"
            "<command-args>PR 42</command-args>"
        )
    ).events
    assert command == Prompt("/review PR 42")
    [blocks] = parse_line(
        record(
            "user", [{"type": "text", "text": "look at"}, {"type": "image"}, {"type": "text", "text": "this"}]
        )
    ).events
    assert blocks == Prompt("look at\nthis")


def test_tool_result_content_as_blocks_and_error_flag():
    raw = record(
        "user",
        [
            {
                "type": "tool_result",
                "tool_use_id": "t1",
                "is_error": True,
                "content": [{"type": "text", "text": "Exit code 2"}, {"type": "image"}],
            }
        ],
    )
    assert parse_line(raw).events == [ToolOutput("t1", "Exit code 2", True)]


# --------------------------------------------------------------------------- chunks


def test_a_chunk_is_a_request_and_the_work_that_followed():
    chunks = fold(
        [
            prompt("Make the cache optional"),
            say("Looking", "m1"),
            call("t1", "Bash", {"command": "ls"}),
            result("t1", "a b"),
            prompt("Now add a test"),
            say("Added tests/test_cache.py", "m2"),
        ]
    )
    assert len(chunks) == 2
    assert chunks[0].session["asked"] == ["Make the cache optional"]
    assert chunks[0].session["commands"] == ["ls"]
    assert chunks[1].session["asked"] == ["Now add a test"] and chunks[1].session["commands"] == []
    assert chunks[0].line == 1 and chunks[1].line == 5  # where each turn starts: provenance


def test_prompts_before_any_work_join_the_same_chunk_and_bare_slash_commands_are_dropped():
    chunks = fold([prompt("/clear"), prompt("Fix login"), prompt("it is in auth.py"), say("Fixed", "m1")])
    [chunk] = chunks
    assert "User: Fix login" in chunk.text and "User: it is in auth.py" in chunk.text
    assert chunk.session["asked"] == ["Fix login"]  # the request, not the slash command
    assert fold([prompt("/cost")]) == []


def test_assistant_lines_group_by_message_id_and_repeated_blocks_count_once():
    chunks = fold(
        [
            prompt("Why is it slow?"),
            say("We decided to", "m1"),
            say("add an index.", "m1"),
            say("We decided to", "m1"),
            call("t1", "Read", {"file_path": "/home/dev/acme-api/db.py"}, "m1"),
            result("t1", "code"),
            say("We switched the report query to the covering index instead of a full scan.", "m2"),
        ]
    )
    decisions = [o.text for o in chunks[0].observations if o.category == "decisions"]
    # Only the final answer decides; m1 was not the last message.
    assert decisions == ["We switched the report query to the covering index instead of a full scan."]
    first_message = fold(
        [prompt("Why?"), say("We decided to", "m1"), say("use an index.", "m1"), say("We decided to", "m1")]
    )[0]
    # Blocks of one streamed answer are one paragraph: the sentence is whole.
    assert [o.text for o in first_message.observations] == ["We decided to use an index."]
    assert chunks[0].text.count("We decided to") == 1  # the repeated block is rendered once


def test_outcomes_failures_and_a_verified_fix_becomes_a_learning():
    chunks = fold(
        [
            prompt("Tests fail on CI"),
            call("t1", "Bash", {"command": "cd app && pytest -q tests/test_api.py"}),
            result(
                "t1",
                "Exit code 1\nFAILED tests/test_api.py::test_get - KeyError: 'REDIS_URL'\n1 failed",
                True,
            ),
            call(
                "t2",
                "Edit",
                {"file_path": "/home/dev/acme-api/src/config.py", "old_string": "a", "new_string": "b"},
            ),
            result("t2", "updated"),
            call("t3", "Bash", {"command": "pytest -q"}),
            result("t3", "5 passed"),
            say("Fixed: config falls back when REDIS_URL is unset.", "m9"),
        ]
    )
    [chunk] = chunks
    by_category = {o.category: o for o in chunk.observations}
    learning = by_category["learnings"]
    assert learning.text == (
        "`cd app && pytest -q tests/test_api.py` failed in acme-api with "
        "\"FAILED tests/test_api.py::test_get - KeyError: 'REDIS_URL'\"; "
        "it passed after changes to src/config.py."
    )
    assert by_category["patterns"].text == "In project acme-api the tests run with `pytest -q`."
    assert learning.tags == ["session:s-1", "branch:main"] and learning.line == 1
    session = chunk.session
    assert session["changed"] == ["src/config.py"]
    assert session["commands"] == ["pytest -q"]  # the failing run was fixed: not "still failing"
    assert session["errors"] == [] and session["fixes"] == 1
    assert not any(o.category == "context" for o in chunk.observations)  # the session record is the context


def test_a_rerun_that_passes_without_any_change_is_not_a_learning():
    chunks = fold(
        [
            prompt("Run the tests"),
            call("t1", "Bash", {"command": "pytest"}),
            result("t1", "1 failed", True),
            call("t2", "Bash", {"command": "pytest"}),
            result("t2", "ok"),
        ]
    )
    assert [o.category for o in chunks[0].observations] == ["patterns"]


def test_a_rerun_that_passes_after_another_command_ran_is_a_learning():
    """The environmental fix: a container started, then the same tests pass. Looking around in between
    (`docker compose ps`, `git status`) is not the fix; the command that changed something is."""
    [chunk] = fold(
        [
            prompt("Run the integration tests"),
            call("t1", "Bash", {"command": "uv run pytest -m integration -q"}),
            result("t1", "E   psycopg.OperationalError: connection refused on port 5433\n24 errors", True),
            call("t2", "Bash", {"command": "docker compose up -d postgres"}),
            result("t2", "Container api-postgres-1  Started"),
            call("t3", "Bash", {"command": "docker compose ps"}),
            result("t3", "api-postgres-1   running"),
            call("t4", "Bash", {"command": "uv run pytest -m integration -q"}),
            result("t4", "24 passed in 6.20s"),
        ]
    )
    [learning] = [o for o in chunk.observations if o.category == "learnings"]
    assert learning.text == (
        '`uv run pytest -m integration -q` failed in acme-api with "psycopg.OperationalError: connection '
        'refused on port 5433"; it passed after running `docker compose up -d postgres`.'
    )
    assert chunk.session["errors"] == []  # it passes now: not "still failing"


def test_a_rerun_that_passes_after_only_looking_is_fixed_but_not_a_learning():
    [chunk] = fold(
        [
            prompt("Apply the migrations"),
            call("t1", "Bash", {"command": "uv run alembic upgrade head"}),
            result("t1", "FAILED: Can't locate revision", True),
            call("t2", "Bash", {"command": "uv run alembic current"}),
            result("t2", "0006_accounts_index"),
            call("t3", "Bash", {"command": "uv run alembic upgrade head"}),
            result("t3", "Running upgrade 0006 -> 0007"),
        ]
    )
    assert [o for o in chunk.observations if o.category == "learnings"] == []
    assert chunk.session["errors"] == [] and "uv run alembic upgrade head" in chunk.session["fixed_commands"]


def test_a_session_that_only_looked_around_leaves_no_record():
    """Asked a question, ran `ls` and `git status`, answered: its record would only repeat the question."""
    from cems_cli.capture import sessions

    def record_of(*chunks):
        merged = sessions.new_record("s-1", "project:acme-api", "main", False)
        for chunk in chunks:
            merged = sessions.merge(merged, chunk.session)
        return merged

    [looked] = fold(
        [
            prompt("Which i18n library do we use with React?"),
            call("t1", "Bash", {"command": "ls"}),
            result("t1", "package.json\nsrc"),
            call("t2", "Bash", {"command": "git status"}),
            result("t2", "On branch main"),
            say("next-intl, see package.json."),
        ]
    )
    assert looked.session["acted"] is False and not sessions.worth_remembering(record_of(looked))
    [worked] = fold(
        [
            prompt("Add German translations", ts="2026-03-02T10:00:00.000Z"),
            call("t3", "Bash", {"command": "pnpm lint"}, ts="2026-03-02T10:00:00.000Z"),
            result("t3", "ok", ts="2026-03-02T10:00:00.000Z"),
        ]
    )
    assert sessions.worth_remembering(record_of(worked))
    assert sessions.worth_remembering(record_of(looked, worked))  # a later turn that acted: a record
    # A record kept before "acted" existed: its commands count, as they did.
    assert sessions.worth_remembering({"commands": ["ls"]})


def test_a_learning_with_a_long_error_still_shows_its_fix_in_what_the_hook_injects():
    from cems_cli.text.snippet import SNIPPET_CHARS

    error = ("ERROR [alembic.util.messaging] Multiple head revisions are present for given argument 'head'; "
             "please specify a specific target revision, '<branchname>@head' to narrow to a specific head, "
             "or 'heads' for all heads")
    [chunk] = fold(
        [
            prompt("Apply the migrations"),
            call("t1", "Bash", {"command": "alembic upgrade head"}),
            result("t1", error, True),
            call("t2", "Bash", {"command": "alembic merge -m 'merge heads' 3f2a1c9d 9c1d4b2a"}),
            result("t2", "Generating merge revision"),
            call("t3", "Bash", {"command": "alembic upgrade head"}),
            result("t3", "Running upgrade"),
        ]
    )
    [learning] = [o for o in chunk.observations if o.category == "learnings"]
    assert "Multiple head revisions are present" in learning.text
    assert learning.text.endswith("passed after running `alembic merge -m 'merge heads' 3f2a1c9d 9c1d4b2a`.")
    assert len(learning.text) <= SNIPPET_CHARS  # shown whole, fix included


def test_a_variant_that_works_after_a_failure_is_a_learning():
    [chunk] = fold(
        [
            prompt("Run the DB tests"),
            call("t1", "Bash", {"command": "make test"}),
            result("t1", "Exit code 2\nmake: *** No rule to make target 'test'.  Stop.", True),
            call("t2", "Bash", {"command": "make test-db"}),
            result("t2", "12 passed in 3.1s"),
        ]
    )
    [learning] = [o for o in chunk.observations if o.category == "learnings"]
    assert learning.text == (
        "`make test` failed in acme-api with \"make: *** No rule to make target 'test'. Stop.\"; "
        "`make test-db` worked instead."
    )



@pytest.mark.parametrize("first", [
    # Claude Code on Windows: the working folder could not be turned into a POSIX path, the shell could not
    # fork, Windows could not start the process; nothing ran.
    "Command failed: cygpath -u 'c:\\users\\dev'\n      0 [main] cygpath (19308) child_copy: cygheap read",
    "Exit code 255\n      0 [main] bash (33480) child_copy: cygheap read copy failed, 0x0..0x800021730",
    "Exit code 3221225794",
    # The permission mode said no: nothing ran.
    "Permission to use Bash has been auto-denied in dontAsk mode.",
])
def test_a_command_the_client_never_started_is_no_failure_and_its_retry_no_remedy(first):
    [chunk] = fold(
        [
            prompt("Which tests are there?"),
            call("t1", "Bash", {"command": "ls tests/unit"}),
            result("t1", first, True),
            call("t2", "Bash", {"command": "ls tests"}),
            result("t2", "unit\nintegration"),
        ]
    )
    assert not [o for o in chunk.observations if o.category == "learnings"]
    assert chunk.session["errors"] == []


def test_another_command_of_the_same_program_is_no_remedy():
    """Two remote commands through one host share a command key; the second is the next thing the agent
    ran, not what fixed the first."""
    [chunk] = fold(
        [
            prompt("Is cloudflared running on the router?"),
            call("t1", "Bash", {"command": 'ssh root@10.0.0.1 "ps aux | grep -i cloudflared"'}),
            result("t1", "Exit code 1\nps: unrecognized option: a", True),
            call("t2", "Bash", {"command": 'ssh root@10.0.0.1 "uci show wireguard | head -20"'}),
            result("t2", "wireguard.wg0=interface"),
        ]
    )
    assert not [o for o in chunk.observations if o.category == "learnings"]
    # A variant of the failed command is still a remedy.
    [chunk] = fold(
        [
            prompt("Push the branch"),
            call("t1", "Bash", {"command": "git push origin feat/x"}),
            result("t1", "Exit code 128\nfatal: The current branch feat/x has no upstream branch.", True),
            call("t2", "Bash", {"command": "git push -u origin feat/x"}),
            result("t2", "branch 'feat/x' set up to track 'origin/feat/x'."),
        ]
    )
    [learning] = [o for o in chunk.observations if o.category == "learnings"]
    assert learning.text.endswith("`git push -u origin feat/x` worked instead.")

def test_a_command_a_rule_blocked_or_the_user_refused_did_not_run():
    [chunk] = fold(
        [
            prompt("push my branch"),
            call("t1", "Bash", {"command": "git push --force origin main"}),
            result(
                "t1",
                "PreToolUse:Bash hook error: Blocked by CEMS rule 0f1e2d3c-aaaa-bbbb-cccc-111122223333: "
                "force pushes rewrite shared history (pattern 'git push --force*')",
                True,
            ),
            call("t2", "Bash", {"command": "rm -rf build"}),
            result("t2", "The user doesn't want to proceed with this tool use. It was rejected.", True),
            call("t3", "Bash", {"command": "python -c 'import nosuchmod'"}),
            result("t3", "Exit code 1\nModuleNotFoundError: No module named 'nosuchmod'", True),
            say("Done.", "m1"),
        ]
    )
    session = chunk.session
    assert session["blocked"] == ["`git push --force origin main` (force pushes rewrite shared history)"]
    assert session["denied"] == ["rm -rf build"]
    assert session["commands"] == []  # nothing ran successfully
    assert session["errors"] == [
        "python -c 'import nosuchmod': ModuleNotFoundError: No module named 'nosuchmod'"
    ]
    # "Done." decides nothing (no filler memory); what the rule forbids, and why, is worth knowing.
    assert [(o.category, o.text) for o in chunk.observations] == [
        ("learnings", "`git push --force origin main` is blocked by a rule in acme-api: force pushes rewrite "
         "shared history")
    ]


def test_preferences_come_from_the_user_and_decisions_from_prompt_or_answer():
    [chunk] = fold(
        [
            prompt("In this repo we use pnpm, never npm. Can you add lodash?"),
            call("t1", "Bash", {"command": "pnpm add lodash"}),
            result("t1", "+ lodash 4.17.21"),
            say("Added lodash with pnpm. I always run the linter after installs.", "m1"),
        ]
    )
    found = [(o.category, o.text) for o in chunk.observations]
    assert ("preferences", "In this repo we use pnpm, never npm.") in found
    assert ("patterns", "In project acme-api dependencies are installed with `pnpm add` (pnpm).") in found
    assert not any("linter" in text for _, text in found)  # the assistant's habits are not the user's



def test_the_answer_states_a_decision_only_with_words_that_say_a_choice_was_made():
    [chunk] = fold(
        [
            prompt("Why does the chat fail in staging?"),
            say("Root cause: the agent used `test-key` instead of the real OpenAI key in `agent/.env`. "
                "The new check script gives us a one-command health check going forward. "
                "We decided to keep the key in Railway's variables from now on.", "m1"),
        ]
    )
    decisions = [o.text for o in chunk.observations if o.category == "decisions"]
    assert decisions == ["We decided to keep the key in Railway's variables from now on."]
    # Said by the user, "instead of" is a choice.
    [chunk] = fold([prompt("Use pnpm instead of npm in this repository."), say("Noted.", "m1")])
    assert [o.text for o in chunk.observations if o.category == "decisions"] == [
        "Use pnpm instead of npm in this repository."
    ]


@pytest.mark.parametrize(
    ("text", "by_agent"),
    [
        ("Great, let's move on to 3.2 in user story 3.", False),  # moving through a plan
        ("Now that both services are deployed, let's move on to the production Supabase setup.", True),
        ("Ok, let's keep working through the next steps.", False),
        ("Let's go with option B please.", False),  # the option is named elsewhere
        ("Great, let's go with your recommendation.", False),
        ("Create a new branch and switch to it.", False),
        # Pasted text: a changelog, a bug report. "Instead of" describes there; it decides nothing.
        ("Fixed timer duration showing 11m 60s instead of 12m 0s", False),
        ("Shell: Switch to in-memory shell snapshot to fix file-related errors", False),
        ("But this example (using method=u'POST' instead of method='POST') produces an error.", False),
    ],
)
def test_moving_on_an_option_named_elsewhere_and_pasted_text_are_no_decisions(text: str, by_agent: bool):
    assert decision_sentences(text, by_agent=by_agent) == []
    turn = [prompt("Next?"), say(text, "m1")] if by_agent else [prompt(text), say("Noted.", "m1")]
    [chunk] = fold(turn)
    assert [o.text for o in chunk.observations if o.category == "decisions"] == []


@pytest.mark.parametrize(
    "text",
    [
        "For environment, let's keep things local for now, assuming that will also work in a GitHub runner.",
        "Let's switch to `gpt-4o-mini`, which is still cheap but more compatible.",
        "Move the conversation fetching to internal API routes instead of querying Supabase from the page.",
        "Note: we use SUPABASE_PUBLISHABLE_KEY instead of the anon key.",
        "Avoid duplicate comments; update the bot's comment instead of posting a new one.",
        "We should NEVER be in mock mode in production. I'd much rather fail loudly rather than mock.",
    ],
)
def test_a_choice_in_the_users_own_words_is_still_a_decision(text: str):
    assert decision_sentences(text) == [text]


def test_a_sentence_ends_before_the_emoji_that_opens_the_next():
    pasted = "I want to avoid using mocks as much as possible. ⚠️ Tests That Need Full Services: 14/29 failed."
    [chunk] = fold([prompt(pasted), say("Noted.", "m1")])
    assert [o.text for o in chunk.observations if o.category == "preferences"] == [
        "I want to avoid using mocks as much as possible."
    ]
    answer = "The agent runs on Railway. 🚀 Health: `/health` answers 200. → Next: the smoke test."
    assert sentences(answer) == [
        "The agent runs on Railway.", "🚀 Health: `/health` answers 200.", "→ Next: the smoke test."
    ]

def test_long_turns_are_split_and_the_continuation_keeps_the_request():
    lines = [prompt("Migrate every handler")]
    for i in range(7):
        lines += [call(f"t{i}", "Edit", {"file_path": f"/home/dev/acme-api/h{i}.py"}), result(f"t{i}", "ok")]
    chunks = fold(lines, Limits(chunk_max_chars=10_000, chunk_max_tools=3))
    assert len(chunks) == 3
    assert "continuing the request: Migrate every handler" in chunks[1].text
    assert chunks[1].session["changed"] == ["h3.py", "h4.py", "h5.py"]


def test_a_new_session_id_closes_the_chunk():
    chunks = fold(
        [prompt("one", session="a"), say("did one", "m1", session="a"), say("did two", "m2", session="b")]
    )
    assert [c.session_id for c in chunks] == ["a", "b"]
    assert chunks[1].session["asked"] == []


def test_folding_line_by_line_through_json_state_equals_one_pass():
    """What makes kill -9 safe: the open chunk survives a round trip through the database unchanged."""
    lines = sample_lines() + [prompt("second request"), say("done", "m7")]
    rng = random.Random(4)
    for _ in range(3):
        lines += [
            call(
                f"r{len(lines)}",
                rng.choice(["Bash", "Read", "Grep"]),
                {"command": "make", "pattern": "x", "file_path": "/tmp/x"},
            ),
            result(f"r{len(lines)}", rng.choice(["ok", "Error: boom"]), rng.random() < 0.5),
        ]
    whole = fold(lines, Limits(chunk_max_chars=700, chunk_max_tools=2))
    pieces, state = [], None
    for number, raw in enumerate(lines, start=1):
        builder = ChunkBuilder(Limits(chunk_max_chars=700, chunk_max_tools=2), json.loads(json.dumps(state)))
        builder.line_no = number
        pieces.extend(builder.feed(parse_line(raw)))
        state = builder.state()
    pieces.extend(ChunkBuilder(Limits(chunk_max_chars=700, chunk_max_tools=2), state).flush())
    assert [c.to_json() for c in pieces] == [c.to_json() for c in whole]
    assert len(whole) > 3


def test_cems_own_sessions_are_ignored(tmp_path):
    marked = fold([prompt(f"{NO_OBSERVE_MARKER}\nExtract memories"), say("ok")])
    assert marked == []
    builder = ChunkBuilder(ignore_under=tmp_path)
    raw = json.loads(prompt("hello"))
    raw["cwd"] = str(tmp_path / "sub")
    assert builder.feed(parse_line(json.dumps(raw).encode())) == []
    assert builder.ignored and "CEMS_HOME" in builder.ignored
    assert builder.feed(parse_line(prompt("later, elsewhere"))) == []  # the whole transcript stays ignored


def test_secrets_and_private_blocks_are_gone_before_anything_is_kept():
    secret = "ghp_" + "a1B2" * 9
    builder = ChunkBuilder()
    builder.feed(parse_line(prompt(f"use token {secret} <private>on host db9.corp</private> to deploy")))
    builder.feed(parse_line(call("t1", "Bash", {"command": f"curl -H 'Authorization: Bearer {secret}' x"})))
    state = json.dumps(builder.state())
    [chunk] = builder.flush()
    kept = state + json.dumps(chunk.to_json())
    assert secret not in kept and "db9.corp" not in kept
    assert "[REDACTED:github_token]" in kept and "to deploy" in kept


# --------------------------------------------------------------------------- helpers


def test_clip_redacts_before_cutting_and_keeps_text_storable():
    assert clip("a  b\n c", 10) == "a b c"
    assert clip("x" * 20, 10) == "x" * 9 + "…"
    cut = clip("key: sk-ant-" + "Z" * 60, 15)
    assert "ZZZZ" not in cut  # redacted whole, then cut
    assert clip("bad \ud800 surrogate\x00", 50) == "bad ? surrogate"


@pytest.mark.parametrize(
    ("command", "key"),
    [
        ("pytest -q tests/x.py", "pytest"),
        ("cd api && FOO=1 npm test -- --watch", "npm test"),
        ("python -m pytest -x", "python -m pytest"),
        ("/usr/bin/make check", "make check"),
        ("uv run alembic upgrade head", "alembic upgrade"),  # launchers looked past
        ("sudo npx prettier --check .", "prettier"),
        ("", ""),
    ],
)
def test_command_key(command, key):
    assert command_key(command) == key


def test_llm_answers_are_validated():
    [chunk] = fold(sample_lines())
    assert parse_extraction(None, [chunk]) is None
    assert parse_extraction({"memories": []}, [chunk]) is None
    assert parse_extraction({"observations": []}, [chunk]) == []
    found = parse_extraction(
        {
            "observations": [
                {"category": "Decisions", "text": "Webhook timeout is configurable.", "title": "Timeout"},
                {"category": "weird", "text": "Defaults to context."},
                {"category": "context", "text": ""},
                "junk",
            ]
        },
        [chunk],
    )
    # Unknown kinds and session summaries are dropped: the session record is the context.
    assert [(o.category, o.text, o.title) for o in found] == [
        ("decisions", "Webhook timeout is configurable.", "Timeout")
    ]
    assert found[0].tags == [f"session:{SAMPLE_SESSION}", "branch:fix/webhook-timeout"]
    # The project is the cwd's folder name (no repository there); the time is the turn's last line.
    assert found[0].project == "project:invoice-worker" and found[0].created_at == "2026-04-14T16:02:24.322Z"

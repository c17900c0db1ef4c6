"""turns: a turn's transcript delta read from its offset, folded into a digest, and the LLM request/answer."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from cems_cli.capture.turns import (
    EXTRACTION_SYSTEM,
    MAX_DELTA_BYTES,
    collect,
    digest_text,
    extraction_prompt,
    parse_extraction,
    read_delta,
)

FIXTURES = Path(__file__).resolve().parents[2].parent / "shared" / "fixtures" / "claude-code"
SESSION = "3f1c2a9e-7b4d-4e1a-9c55-2d8f0b6a1e47"
CWD = "/home/dev/acme-api"
FINISHED_AT = 1772442900.0  # 2026-03-02 09:15 UTC
FINAL = "REDIS_URL is now optional: Settings.redis_url defaults to None. All 42 tests pass."


class Transcript:
    """Writes Claude Code transcript lines (modelled on sample-transcript.jsonl) to a .jsonl file."""

    def __init__(self, path: Path, cwd: str = CWD, session: str = SESSION) -> None:
        self.path, self.cwd, self.session = path, cwd, session
        self.parent: str | None = None
        self.messages = 0
        path.touch()

    def _write(self, record: dict) -> None:
        uid = str(uuid.uuid4())
        base = {
            "parentUuid": self.parent,
            "isSidechain": False,
            "userType": "external",
            "cwd": self.cwd,
            "sessionId": self.session,
            "version": "2.1.63",
            "gitBranch": "fix/optional-redis",
            "uuid": uid,
            "timestamp": "2026-03-02T09:14:05.118Z",
        }
        with self.path.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps({**base, **record}) + "\n")
        self.parent = uid

    def prompt(self, text: str) -> None:
        self._write({"type": "user", "message": {"role": "user", "content": text}})

    def _assistant(self, block: dict) -> None:
        self.messages += 1
        message = {
            "model": "claude-opus-4-6",
            "id": f"msg_{self.messages:04d}",
            "type": "message",
            "role": "assistant",
            "content": [block],
            "stop_reason": None,
        }
        self._write({"type": "assistant", "message": message, "requestId": f"req_{self.messages}"})

    def say(self, text: str) -> None:
        self._assistant({"type": "text", "text": text})

    def tool(
        self, name: str, tool_input: dict, output: str, result: dict | None = None, error: bool = False
    ) -> None:
        tool_id = f"toolu_{uuid.uuid4().hex[:20]}"
        self._assistant({"type": "tool_use", "id": tool_id, "name": name, "input": tool_input})
        block = {"tool_use_id": tool_id, "type": "tool_result", "content": output, "is_error": error}
        self._write(
            {"type": "user", "message": {"role": "user", "content": [block]}, "toolUseResult": result or {}}
        )

    def bash(self, command: str, stdout: str, error: bool = False) -> None:
        result = {"stdout": stdout, "stderr": "", "interrupted": False, "isImage": False}
        self.tool("Bash", {"command": command, "description": "run"}, stdout, result, error=error)

    def edit(self, relative: str) -> None:
        path = f"{self.cwd}/{relative}"
        self.tool(
            "Edit",
            {"file_path": path, "old_string": "a", "new_string": "b"},
            f"The file {path} has been updated.",
            {"filePath": path},
        )


def redis_turn(transcript: Transcript) -> None:
    """The REDIS_URL fix: grep, a failing test run, an edit, a passing run."""
    transcript.prompt(
        "The API returns 500 when REDIS_URL is unset. Make the cache optional and run the tests."
    )
    transcript.say("I'll find where REDIS_URL is read first.")
    transcript.bash(
        'grep -rn "REDIS_URL" src/', 'src/acme/config.py:14:    redis_url: str = os.environ["REDIS_URL"]'
    )
    transcript.bash(
        "pytest -q", "Exit code 1\nE       KeyError: 'REDIS_URL'\n1 failed, 41 passed in 0.52s", True
    )
    transcript.edit("src/acme/config.py")
    transcript.bash("pytest -q", "42 passed in 0.49s")
    transcript.say(FINAL)


# --- reading --------------------------------------------------------------------------------------------


def test_the_sample_transcript_is_read_whole(tmp_path):
    delta = read_delta(str(FIXTURES / "sample-transcript.jsonl"), 0, None)
    assert len(delta.lines) == 6
    assert delta.end == (FIXTURES / "sample-transcript.jsonl").stat().st_size
    activity = collect(delta.lines, CWD)
    assert activity.prompts == [
        "The API returns 500 when REDIS_URL is unset. Make the cache optional and run the tests."
    ]
    assert activity.files == ["src/acme/config.py"]
    assert activity.commands == ['grep -rn "REDIS_URL" src/ tests/']
    assert activity.errors == []


def test_only_complete_lines_up_to_the_turn_end_are_consumed(tmp_path):
    transcript = Transcript(tmp_path / "t.jsonl")
    redis_turn(transcript)
    end_of_turn = transcript.path.stat().st_size
    transcript.prompt("Now add a test for it.")
    with transcript.path.open("a") as handle:
        handle.write('{"type": "assistant", "message": {"content": [{"type": "te')  # still being written
    first = read_delta(str(transcript.path), 0, end_of_turn)
    assert first.end == end_of_turn
    assert collect(first.lines, CWD).prompts[0].startswith("The API returns 500")
    rest = read_delta(str(transcript.path), first.end, None)
    assert [line.kind for line in rest.lines] == ["user"]  # the unfinished line stays for the next read
    assert rest.end < transcript.path.stat().st_size
    assert read_delta(str(transcript.path), rest.end, None).lines == []


def test_a_replaced_transcript_is_read_from_the_start(tmp_path):
    transcript = Transcript(tmp_path / "t.jsonl")
    transcript.prompt("hello")
    delta = read_delta(str(transcript.path), 10_000_000, None)  # offset past the end: the file was replaced
    assert len(delta.lines) == 1


def test_malformed_and_oversized_lines_are_skipped(tmp_path):
    path = tmp_path / "t.jsonl"
    transcript = Transcript(path)
    with path.open("a") as handle:
        handle.write("not json\n[1, 2]\n\n")
    transcript.prompt("still read")
    activity = collect(read_delta(str(path), 0, None).lines, CWD)
    assert activity.prompts == ["still read"]


def test_a_huge_turn_is_read_from_its_end(tmp_path, monkeypatch):
    monkeypatch.setattr("cems_cli.capture.turns.MAX_DELTA_BYTES", 2000)
    transcript = Transcript(tmp_path / "t.jsonl")
    for index in range(30):
        transcript.bash(f"echo {index}", str(index))
    transcript.say("done")
    delta = read_delta(str(transcript.path), 0, None)
    assert delta.skipped and delta.end == transcript.path.stat().st_size
    commands = collect(delta.lines, CWD).commands
    assert "echo 29" in commands and "echo 0" not in commands
    assert MAX_DELTA_BYTES >= 1024 * 1024


def test_sidechain_lines_are_left_out(tmp_path):
    path = tmp_path / "t.jsonl"
    line = {"type": "user", "isSidechain": True, "message": {"role": "user", "content": "subagent prompt"}}
    path.write_text(json.dumps(line) + "\n")
    assert collect(read_delta(str(path), 0, None).lines).prompts == []


# --- the digest -----------------------------------------------------------------------------------------


def test_the_digest_says_what_the_turn_did(tmp_path):
    transcript = Transcript(tmp_path / "t.jsonl")
    redis_turn(transcript)
    activity = collect(read_delta(str(transcript.path), 0, None).lines, CWD)
    text = digest_text(
        activity, project="project:acme/api", session_id=SESSION, finished_at=FINISHED_AT, last_message=FINAL
    )
    assert text == "\n".join(
        [
            "Claude Code turn in project acme/api (session 3f1c2a9e, 2026-03-02 09:15 UTC).",
            "Asked: The API returns 500 when REDIS_URL is unset. Make the cache optional and run the tests.",
            "Files touched: src/acme/config.py.",
            'Commands run: `grep -rn "REDIS_URL" src/`; `pytest -q`.',
            "Errors: pytest -q failed with \"KeyError: 'REDIS_URL'\" (resolved).",
            f"Outcome: {FINAL}",
        ]
    )


def test_an_error_never_followed_by_success_stays_unresolved(tmp_path):
    transcript = Transcript(tmp_path / "t.jsonl")
    transcript.bash("npm test", 'npm ERR! Missing script: "test"', error=True)
    activity = collect(read_delta(str(transcript.path), 0, None).lines, CWD)
    text = digest_text(activity, project=None, session_id="abc", finished_at=FINISHED_AT, last_message="")
    assert 'Errors: npm test failed with "npm ERR! Missing script: "test"" (unresolved).' in text
    assert text.startswith("Claude Code turn (session abc,")


def test_an_empty_turn_has_no_digest():
    activity = collect([], CWD)
    assert (
        digest_text(activity, project=None, session_id="s", finished_at=FINISHED_AT, last_message="") is None
    )


def test_the_digest_takes_no_secret_or_private_text_from_the_transcript(tmp_path):
    transcript = Transcript(tmp_path / "t.jsonl")
    transcript.prompt("Deploy with <private>the staging password is hunter2</private> please")
    transcript.bash("AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE ./deploy.sh", "deployed")
    activity = collect(read_delta(str(transcript.path), 0, None).lines, CWD)
    text = digest_text(activity, project=None, session_id="s", finished_at=FINISHED_AT, last_message="ok")
    prompt = extraction_prompt(activity, project=None, last_message="ok")
    for produced in (text, prompt):
        assert "hunter2" not in produced and "AKIAIOSFODNN7EXAMPLE" not in produced
    assert "[REDACTED:aws_access_key]" in text


# --- the model ------------------------------------------------------------------------------------------


def test_the_prompt_shows_the_turn_and_marks_itself_unobservable(tmp_path):
    transcript = Transcript(tmp_path / "t.jsonl")
    redis_turn(transcript)
    activity = collect(read_delta(str(transcript.path), 0, None).lines, CWD)
    prompt = extraction_prompt(activity, project="project:acme/api", last_message=FINAL)
    assert prompt.startswith("<cems:no-observe/>\nProject: acme/api\n")
    assert (
        "Tool Bash: pytest -q" in prompt
        and "Error: Exit code 1" in prompt
        and f"Final answer: {FINAL}" in prompt
    )
    assert '"learnings"' in EXTRACTION_SYSTEM and '"decisions"' in EXTRACTION_SYSTEM


def test_a_long_turn_is_cut_in_the_middle_for_the_model(tmp_path):
    transcript = Transcript(tmp_path / "t.jsonl")
    transcript.prompt("first request")
    for index in range(200):
        transcript.bash(f"echo step {index}", "x" * 100)
    activity = collect(read_delta(str(transcript.path), 0, None).lines, CWD)
    prompt = extraction_prompt(activity, project=None, last_message="the end")
    assert len(prompt) < 13_000
    assert "first request" in prompt and "the end" in prompt and "[… part of the turn left out …]" in prompt


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ({"learnings": ["a"], "decisions": ["b"]}, [("learnings", "a"), ("decisions", "b")]),
        ({"learnings": [], "decisions": []}, []),
        (
            {"learnings": [{"text": "from an object"}, "  spaced   out  ", 3, ""]},
            [("learnings", "from an object"), ("learnings", "spaced out")],
        ),
        ({"decisions": [f"d{i}" for i in range(9)]}, [("decisions", f"d{i}") for i in range(5)]),
        ({"observations": ["wrong shape"]}, None),
        ({"learnings": "not a list"}, None),
        (None, None),
        (["learnings"], None),
    ],
)
def test_the_answer_is_read_defensively(answer, expected):
    assert parse_extraction(answer) == expected


def test_answers_are_redacted():
    [(category, text)] = parse_extraction(
        {"learnings": ["The token is ghp_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"]}
    )
    assert category == "learnings" and "ghp_" not in text

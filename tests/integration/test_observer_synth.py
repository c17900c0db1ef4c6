"""Synthetic Claude Code transcripts shaped like real ones (hooks-reference §5), for observer tests and the
throughput bench: typed prompts, streamed assistant lines sharing `message.id`, Read/Bash/Edit tool calls
with `toolUseResult` copies of their output (which is what makes real transcripts large), failing test runs
followed by a fix. Deterministic for a seed."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

from cems_cli.capture.transcript import Malformed, parse_line

COMPONENTS = [
    "rate limiter",
    "session cache",
    "invoice exporter",
    "webhook retry",
    "search index",
    "auth token",
    "CSV importer",
    "email digest",
    "feature flag",
    "audit log",
    "image resizer",
    "billing sync",
]
VERBS = ["fix", "refactor", "add tests for", "speed up", "document", "harden"]
REASONS = [
    "it times out under load",
    "customers see duplicate rows",
    "the nightly job fails",
    "it leaks memory",
    "the API returns 500",
    "QA found an off-by-one error",
]
WORDS = (
    "def return self value config request response cache retry token user item order total index "
    "client server error result data payload timeout session parse render"
).split()


def _pool() -> str:
    """~256 KB of code-like lines, built once: tool outputs are slices of it (fast to generate)."""
    global _POOL
    if not _POOL:
        rng = random.Random(0)
        lines = [
            f"{n:6d}\u2192    " + " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 9)))
            for n in range(1, 5000)
        ]
        _POOL = "\n".join(lines)
    return _POOL


_POOL = ""


def _code(rng: random.Random, chars: int) -> str:
    pool = _pool()
    start = rng.randrange(len(pool) - 1)
    text = pool[start : start + chars]
    while len(text) < chars:
        text += "\n" + pool[: chars - len(text)]
    return text


class SessionWriter:
    """Lines of one session, turn by turn."""

    def __init__(
        self,
        session_id: str,
        *,
        seed: int,
        cwd: str = "/home/dev/shop-api",
        branch: str = "main",
        output_chars: tuple[int, int] = (500, 3000),
        reads: tuple[int, int] = (1, 1),
    ) -> None:
        self.session_id = session_id
        self.rng = random.Random(seed)
        self.cwd = cwd
        self.branch = branch
        self.output_chars = output_chars
        self.reads = reads  # Read calls per request: real sessions read many files for one prompt
        self.clock = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
        self.turn = 0
        self.parent: str | None = None
        self.serial = 0

    def _base(self, kind: str) -> dict:
        self.serial += 1
        self.clock += timedelta(seconds=self.rng.randint(1, 20))
        uuid = f"{self.session_id[:8]}-{self.serial:08d}"
        record = {
            "parentUuid": self.parent,
            "isSidechain": False,
            "userType": "external",
            "cwd": self.cwd,
            "sessionId": self.session_id,
            "version": "2.1.63",
            "gitBranch": self.branch,
            "type": kind,
            "uuid": uuid,
            "timestamp": self.clock.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        }
        self.parent = uuid
        return record

    def _user(self, content: object, tool_use_result: object = None) -> dict:
        record = self._base("user")
        record["message"] = {"role": "user", "content": content}
        if tool_use_result is not None:
            record["toolUseResult"] = tool_use_result
        return record

    def _assistant(self, message_id: str, block: dict) -> dict:
        record = self._base("assistant")
        record["message"] = {
            "model": "claude-opus-4-6",
            "id": message_id,
            "type": "message",
            "role": "assistant",
            "content": [block],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": 3, "output_tokens": 9},
        }
        record["requestId"] = f"req_{message_id}"
        return record

    def _tool(
        self,
        message_id: str,
        name: str,
        tool_input: dict,
        output: str,
        *,
        error: bool = False,
        result: object = None,
    ) -> Iterator[dict]:
        tool_id = f"toolu_{self.session_id[:6]}_{self.serial:07d}"
        yield self._assistant(
            message_id, {"type": "tool_use", "id": tool_id, "name": name, "input": tool_input}
        )
        block = {"tool_use_id": tool_id, "type": "tool_result", "content": output}
        if error:
            block["is_error"] = True
        yield self._user([block], result if result is not None else {"stdout": output, "stderr": ""})

    def turn_lines(self) -> Iterator[dict]:
        self.turn += 1
        n, rng = self.turn, self.rng
        component, module = rng.choice(COMPONENTS), f"mod_{n:04d}"
        source, test = f"src/shop/{module}.py", f"tests/test_{module}.py"
        prompt = f"Task {n}: {rng.choice(VERBS)} the {component} in {module} because {rng.choice(REASONS)}."
        yield self._user(prompt)
        first = f"msg_{self.session_id[:6]}_{n:05d}a"
        yield self._assistant(
            first, {"type": "text", "text": f"I'll read {source} to see how the {component} works."}
        )
        reads = self.reads[0] if self.reads[0] == self.reads[1] else rng.randint(*self.reads)
        for index in range(reads):
            name = source if index == 0 else f"src/shop/{rng.choice(WORDS)}_{index}.py"
            content = _code(rng, rng.randint(*self.output_chars))
            yield from self._tool(
                first,
                "Read",
                {"file_path": f"{self.cwd}/{name}"},
                content,
                result={"type": "text", "file": {"filePath": f"{self.cwd}/{name}", "content": content}},
            )
        failing = rng.random() < 0.4
        second = f"msg_{self.session_id[:6]}_{n:05d}b"
        command = f"pytest -q {test}"
        if failing:
            failure = (
                f"Exit code 1\nFAILED {test}::test_{component.replace(' ', '_')} - AssertionError: "
                f"expected {n} got {n + 1}\n1 failed, 4 passed in 0.{n % 10}1s"
            )
            yield from self._tool(
                second, "Bash", {"command": command, "description": "Run the tests"}, failure, error=True
            )
        third = f"msg_{self.session_id[:6]}_{n:05d}c"
        old, new = f"limit = {n}", f"limit = {n + 1}"
        original = _code(rng, rng.randint(*self.output_chars))
        yield from self._tool(
            third,
            "Edit",
            {"file_path": f"{self.cwd}/{source}", "old_string": old, "new_string": new, "replace_all": False},
            f"The file {self.cwd}/{source} has been updated.",
            result={
                "filePath": f"{self.cwd}/{source}",
                "oldString": old,
                "newString": new,
                "originalFile": original,
                "userModified": False,
            },
        )
        fourth = f"msg_{self.session_id[:6]}_{n:05d}d"
        yield from self._tool(fourth, "Bash", {"command": command}, f"..... \n5 passed in 0.{n % 10}2s")
        fifth = f"msg_{self.session_id[:6]}_{n:05d}e"
        yield self._assistant(
            fifth,
            {
                "type": "text",
                "text": f"The {component} in {module} is fixed: the limit "
                f"is now {n + 1} and all 5 tests pass.",
            },
        )


def dump(record: dict) -> bytes:
    return (json.dumps(record, separators=(",", ":")) + "\n").encode()


def write_session(path: Path, session_id: str, turns: int, *, seed: int, **options: object) -> int:
    """Write a whole session; returns its size in bytes."""
    writer = SessionWriter(session_id, seed=seed, **options)  # type: ignore[arg-type]
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as handle:
        for _ in range(turns):
            for record in writer.turn_lines():
                handle.write(dump(record))
    return path.stat().st_size


def write_sized(
    path: Path, target_bytes: int, *, seed: int, session_id: str = "big-session-0001", **options: object
) -> tuple[int, int]:
    """Write turns until the file holds `target_bytes` (streamed, bounded memory); returns (bytes, turns)."""
    writer = SessionWriter(session_id, seed=seed, **options)  # type: ignore[arg-type]
    path.parent.mkdir(parents=True, exist_ok=True)
    size = 0
    with open(path, "wb") as handle:
        while size < target_bytes:
            for record in writer.turn_lines():
                data = dump(record)
                handle.write(data)
                size += len(data)
    return size, writer.turn


def one_pass(path: Path, *, home: Path | None = None, unique: bool = True) -> list[tuple[str, str]]:
    """What a file should become: (text, category) of every observation from folding it whole, then
    flushing (as an idle session is) — the reference the incremental and crashing runs must match.
    `unique=False`: every observation as produced, repeats included (a pattern seen in several turns)."""
    from cems_cli.capture.chunks import ChunkBuilder

    builder = ChunkBuilder(ignore_under=home)
    chunks = []
    with open(path, "rb") as handle:
        for raw in handle:
            try:
                line = parse_line(raw)
            except Malformed:
                continue
            if line is not None:
                chunks.extend(builder.feed(line))
    chunks.extend(builder.flush())
    produced = [(o.text, o.category) for chunk in chunks for o in chunk.observations]
    produced += sorted(session_contexts(chunks))
    return sorted(set(produced)) if unique else sorted(produced)


def session_contexts(chunks) -> set[tuple[str, str]]:
    """The one context memory per session that folding these chunks into session records renders."""
    from cems_cli.capture import sessions

    records: dict[str, dict] = {}
    for chunk in chunks:
        if not chunk.session_id:
            continue
        record = records.get(chunk.session_id) or sessions.new_record(
            chunk.session_id, chunk.project, chunk.branch, chunk.sidechain
        )
        records[chunk.session_id] = sessions.merge(record, chunk.session)
    return {(sessions.render(r), "context") for r in records.values() if sessions.worth_remembering(r)}


# --------------------------------------------------------------------------- the generator itself


def test_generated_lines_parse_and_group_by_message_id(tmp_path):
    path = tmp_path / "s.jsonl"
    write_session(path, "gen-session-01", 5, seed=1)
    lines = [parse_line(raw) for raw in path.read_bytes().splitlines()]
    assert all(line is not None and line.session_id == "gen-session-01" for line in lines)
    kinds = {line.kind for line in lines if line}
    assert kinds == {"user", "assistant"}


def test_sized_writer_reaches_its_target_and_is_deterministic(tmp_path):
    first, second = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    size, turns = write_sized(first, 200_000, seed=7)
    assert size >= 200_000 and turns > 3
    write_sized(second, 200_000, seed=7)
    assert first.read_bytes() == second.read_bytes()
    try:
        parse_line(b"{not json")
    except Malformed:
        pass
    else:
        raise AssertionError("garbage must be reported as malformed")

"""A session benchmark on disk, and how an injected recall block is scored against a question's facts.

Layout of a session set (bench/sessions/README.md):

    DIR/questions.jsonl                          one question a line (qid, project_cwd, question, facts…)
    DIR/projects/<encoded-cwd>/<session>.jsonl   Claude Code transcripts, as under ~/.claude/projects

Scoring is pure (no store, no model) so it can be unit-tested and re-run on saved details:
* a keyword is present when it occurs in the text case-insensitively as a whole word (no letter, digit or
  underscore right before or after it, where the keyword itself starts or ends with one), whitespace folded;
* a fact (a list of keywords) is present when all its keywords are;
* a recalled memory (one `- [id] (category, date) text` line of the block) is useful for a question when it
  holds a whole fact, or holds a keyword of a fact that the block holds only across several lines;
* noise is the share of the block's memory tokens in memories that are not useful (header lines excluded).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from cems_cli.evaluation.datasets import DatasetError, read_jsonl

QUESTIONS_FILE = "questions.jsonl"
PROJECTS_DIR = "projects"

Fact = tuple[str, ...]


# --------------------------------------------------------------------------- questions


@dataclass(frozen=True)
class SessionQuestion:
    qid: str
    project: str  # the data set's name for the project (reporting only)
    project_cwd: str  # where the later session runs: the hook's `cwd`
    question: str
    category: str
    facts: tuple[Fact, ...]
    distractors: tuple[Fact, ...] = ()
    session_id: str = ""
    asked_at: str = ""


def _facts(value: Any, where: str, name: str) -> tuple[Fact, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(
        isinstance(fact, list) and fact and all(isinstance(k, str) and k.strip() for k in fact)
        for fact in value
    ):
        raise DatasetError(f"{where}: {name!r} must be a list of non-empty lists of keywords")
    return tuple(tuple(k.strip() for k in fact) for fact in value)


def load_questions(path: Path) -> list[SessionQuestion]:
    questions: list[SessionQuestion] = []
    seen: set[str] = set()
    for row, where in read_jsonl(path):
        missing = [k for k in ("qid", "project_cwd", "question") if not isinstance(row.get(k), str)
                   or not row[k].strip()]
        if missing:
            raise DatasetError(f"{where}: missing {', '.join(missing)}")
        qid = row["qid"]
        if qid in seen:
            raise DatasetError(f"{where}: duplicate qid {qid!r}")
        seen.add(qid)
        cwd = row["project_cwd"]
        questions.append(SessionQuestion(
            qid=qid,
            project=str(row.get("project") or cwd.rstrip("/").rsplit("/", 1)[-1]),
            project_cwd=cwd,
            question=row["question"],
            category=str(row.get("category") or "uncategorised"),
            facts=_facts(row.get("facts"), where, "facts"),
            distractors=_facts(row.get("distractors"), where, "distractors"),
            session_id=str(row.get("session_id") or ""),
            asked_at=str(row.get("asked_at") or ""),
        ))
    return questions


# --------------------------------------------------------------------------- transcripts as turns


@dataclass
class ToolEvent:
    """What a PostToolUse / PostToolUseFailure hook receives for one tool call (common fields aside)."""

    event: str  # PostToolUse or PostToolUseFailure
    tool_name: str
    tool_use_id: str
    tool_input: dict[str, Any]
    tool_response: Any = None
    error: str = ""
    timestamp: str = ""  # of the tool_result line: when the hook fired


@dataclass
class Turn:
    """One user request and what followed it, as the lines Claude Code appends to the transcript."""

    lines: list[bytes]  # raw lines, each with its newline
    stop: bool  # Claude Code fires Stop after it (not after an interrupted turn or a local command)
    last_message: str  # last assistant text: the Stop payload's last_assistant_message
    cwd: str
    permission_mode: str
    tool_events: dict[int, ToolEvent] = field(default_factory=dict)  # line index → the hook it fires


@dataclass
class Transcript:
    relative: Path  # under DIR/projects
    session_id: str
    cwd: str
    started: str  # first timestamp: sessions are replayed in this order
    turns: list[Turn]

    @property
    def lines(self) -> int:
        return sum(len(t.lines) for t in self.turns)


@dataclass
class SessionSet:
    root: Path
    transcripts: list[Transcript]
    questions: list[SessionQuestion]

    @property
    def name(self) -> str:
        return self.root.resolve().name

    def scored_questions(self) -> list[SessionQuestion]:
        return list(self.questions)


# Claude Code writes these for calls that never ran: no PostToolUse hook fires for them.
_NOT_RUN = re.compile(
    r"^(?:PreToolUse:\S+ )?hook error:|operation blocked by hook|^Blocked by (?:CEMS )?rule\b"
    r"|The user doesn't want to (?:proceed|take this action)|but you haven't granted it"
    r"|Permission to use \S+ has been denied",
    re.I,
)
_INTERRUPTED = "[Request interrupted by user"
_NOT_PROMPTS = ("<local-command-stdout>", "<local-command-stderr>", "<bash-stdout>", "<bash-stderr>",
                _INTERRUPTED, "Caveat: The messages below were generated")


def _record(raw: bytes) -> dict[str, Any] | None:
    try:
        value = json.loads(raw)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text"
                         and isinstance(b.get("text"), str))
    return ""


def _prompt_of(record: dict[str, Any]) -> str | None:
    """The text the user typed, for a line that starts a turn; None for every other line."""
    if record.get("type") != "user" or record.get("isMeta") or record.get("isCompactSummary"):
        return None
    message = record.get("message")
    if not isinstance(message, dict):
        return None
    content = message.get("content")
    if isinstance(content, list) and any(isinstance(b, dict) and b.get("type") == "tool_result"
                                         for b in content):
        return None
    text = _content_text(content).strip()
    if not text or text.startswith(_NOT_PROMPTS):
        return None
    return text


def split_turns(data: bytes) -> tuple[list[Turn], dict[str, str]]:
    """The transcript's turns, and what identifies the session (sessionId, cwd, first timestamp).

    A turn starts at a typed prompt (or a slash command, with the file-history snapshot written just before
    it) and runs to the next one; lines before the first prompt belong to the first turn. Stop fires after a
    turn in which the model answered and that was not interrupted."""
    raw_lines = [line + b"\n" for line in data.split(b"\n") if line.strip()]
    starts: list[int] = []
    records = [_record(line) for line in raw_lines]
    for index, record in enumerate(records):
        if record is not None and _prompt_of(record) is not None:
            # Claude Code writes the turn's file-history snapshot just before its prompt.
            while index and (records[index - 1] or {}).get("type") == "file-history-snapshot":
                index -= 1
            starts.append(index)
    if not starts:
        starts = [0]
    starts[0] = 0  # whatever comes before the first prompt is part of the first turn
    identity = {"session_id": "", "cwd": "", "started": ""}
    turns: list[Turn] = []
    for number, start in enumerate(starts):
        end = starts[number + 1] if number + 1 < len(starts) else len(raw_lines)
        turns.append(_turn(raw_lines[start:end], records[start:end], identity))
    return [t for t in turns if t.lines], identity


def _turn(lines: list[bytes], records: list[dict[str, Any] | None], identity: dict[str, str]) -> Turn:
    calls: dict[str, tuple[str, dict[str, Any]]] = {}
    tool_events: dict[int, ToolEvent] = {}
    answered = interrupted = False
    last_message, cwd, mode = "", "", "default"
    for index, record in enumerate(records):
        if record is None:
            continue
        identity["session_id"] = identity["session_id"] or str(record.get("sessionId") or "")
        identity["cwd"] = identity["cwd"] or str(record.get("cwd") or "")
        identity["started"] = identity["started"] or str(record.get("timestamp") or "")
        cwd = str(record.get("cwd") or cwd)
        mode = str(record.get("permissionMode") or mode)
        message = record.get("message")
        if not isinstance(message, dict):
            continue
        content = message.get("content")
        if record.get("type") == "assistant":
            answered = True
            interrupted = False
            for block in content if isinstance(content, list) else []:
                if not isinstance(block, dict):
                    continue
                text = block.get("text")
                if block.get("type") == "text" and isinstance(text, str) and text.strip():
                    last_message = text
                elif block.get("type") == "tool_use" and isinstance(block.get("id"), str):
                    tool_input = block.get("input")
                    calls[block["id"]] = (str(block.get("name") or ""),
                                          tool_input if isinstance(tool_input, dict) else {})
        elif record.get("type") == "user" and isinstance(content, list):
            if _content_text(content).startswith(_INTERRUPTED):
                interrupted = True
            for block in content:
                if not isinstance(block, dict) or block.get("type") != "tool_result":
                    continue
                event = _tool_event(block, calls, record.get("toolUseResult"))
                if event is not None:
                    event.timestamp = str(record.get("timestamp") or "")
                    tool_events[index] = event
    return Turn(lines=lines, stop=answered and not interrupted, last_message=last_message, cwd=cwd,
                permission_mode=mode, tool_events=tool_events)


def _tool_event(block: dict[str, Any], calls: dict[str, tuple[str, dict[str, Any]]],
                result: Any) -> ToolEvent | None:
    tool_id = block.get("tool_use_id")
    if not isinstance(tool_id, str) or tool_id not in calls:
        return None
    name, tool_input = calls[tool_id]
    text = _content_text(block.get("content"))
    if block.get("is_error") is True:
        if _NOT_RUN.search(text.strip()[:2000]):
            return None  # denied before it ran (a PreToolUse rule, or the user at the permission prompt)
        return ToolEvent("PostToolUseFailure", name, tool_id, tool_input, error=text)
    return ToolEvent("PostToolUse", name, tool_id, tool_input,
                     tool_response=result if isinstance(result, dict) else {"output": text})


def load_transcript(root: Path, path: Path) -> Transcript:
    try:
        data = path.read_bytes()
    except OSError as error:
        raise DatasetError(f"cannot read {path}: {error.strerror or error}") from None
    turns, identity = split_turns(data)
    return Transcript(relative=path.relative_to(root), session_id=identity["session_id"] or path.stem,
                      cwd=identity["cwd"], started=identity["started"], turns=turns)


def load_session_set(folder: Path, questions_file: Path | None = None) -> SessionSet:
    """Read DIR/questions.jsonl (or `questions_file`) and every transcript under DIR/projects (sessions in
    time order)."""
    if not folder.is_dir():
        raise DatasetError(f"{folder} is not a folder")
    projects = folder / PROJECTS_DIR
    if not projects.is_dir():
        raise DatasetError(f"{folder} has no {PROJECTS_DIR}/ folder of transcripts")
    questions = load_questions(questions_file or folder / QUESTIONS_FILE)
    transcripts = [load_transcript(projects, path) for path in sorted(projects.rglob("*.jsonl"))]
    transcripts = [t for t in transcripts if t.turns]
    if not transcripts:
        raise DatasetError(f"{projects} holds no transcript (*.jsonl)")
    transcripts.sort(key=lambda t: (t.started, str(t.relative)))
    return SessionSet(folder, transcripts, questions)


# --------------------------------------------------------------------------- time


_TIMESTAMP = re.compile(
    rb'("timestamp"\s*:\s*")(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?)(Z|[+-]\d\d:\d\d)?(")'
)


def parse_time(text: str) -> datetime | None:
    """An ISO-8601 moment (UTC when it names no zone); None when it is not one."""
    try:
        moment = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def shift_line(line: bytes, offset: timedelta) -> bytes:
    """The line with every `"timestamp": "…"` moved by `offset`, in the same notation; nothing else
    changes (the bytes around it are kept as they are)."""
    def move(match: re.Match[bytes]) -> bytes:
        stamp = match.group(2).decode()
        moment = parse_time(stamp + (match.group(3) or b"Z").decode())
        if moment is None:
            return match.group(0)
        moved = (moment + offset).astimezone(UTC)
        fraction = stamp.split(".", 1)[1] if "." in stamp else ""
        text = moved.strftime("%Y-%m-%dT%H:%M:%S")
        if fraction:
            text += "." + f"{moved.microsecond:06d}"[: len(fraction)].ljust(len(fraction), "0")
        return match.group(1) + text.encode() + b"Z" + match.group(4)

    return _TIMESTAMP.sub(move, line)


def latest_moment(dataset: SessionSet) -> datetime | None:
    """When the questions are asked: the latest `asked_at`, else the last transcript line's time."""
    asked = [m for m in (parse_time(q.asked_at) for q in dataset.questions if q.asked_at) if m]
    if asked:
        return max(asked)
    stamps = [m for t in dataset.transcripts for turn in t.turns for line in turn.lines
              for match in _TIMESTAMP.finditer(line)
              if (m := parse_time((match.group(2) + (match.group(3) or b"Z")).decode()))]
    return max(stamps) if stamps else None


# --------------------------------------------------------------------------- scoring


def _pattern(keyword: str) -> re.Pattern[str]:
    folded = " ".join(keyword.split())
    body = r"\s+".join(re.escape(part) for part in folded.split(" "))
    left = r"(?<!\w)" if re.match(r"\w", folded) else ""
    right = r"(?!\w)" if re.search(r"\w$", folded) else ""
    return re.compile(left + body + right, re.I)


def keyword_present(keyword: str, text: str) -> bool:
    return _pattern(keyword).search(text) is not None


def fact_present(fact: Fact, text: str) -> bool:
    return all(keyword_present(keyword, text) for keyword in fact)


_MEMORY_LINE = re.compile(r"^- \[[^\]]*\] ")
# "- [id] (category, date, confidence 0.82; session 1a2b3c4d (project x)) text": the header, one level of
# parentheses inside it.
_LINE_HEADER = re.compile(r"^- \[[^\]]*\] (?:\((?:[^()]|\([^()]*\))*\) )?")


def memory_lines(block: str) -> list[str]:
    """The recalled memories of a `<memory-recall>` block, one per line (format_recall's layout)."""
    return [line for line in block.splitlines() if _MEMORY_LINE.match(line)]


def memory_text(line: str) -> str:
    """What a recalled line says, without its header (id, category, date, confidence, source): a fact is
    found in what a memory says, never in the words the block adds around it ("session", "patterns"). The
    block shows each `<` of a memory as `‹` (cems_cli/text/inert.py); a fact such as `ingest.<tenant>` is
    still what the memory says."""
    from cems_cli.text.inert import MODEL_LESS_THAN

    return _LINE_HEADER.sub("", line, count=1).replace(MODEL_LESS_THAN, "<")


@dataclass
class LineScore:
    text: str
    tokens: int
    useful: bool
    distractor: bool


@dataclass
class QuestionScore:
    facts_present: list[bool]
    lines: list[LineScore]

    @property
    def tokens(self) -> int:
        return sum(line.tokens for line in self.lines)

    @property
    def noise_tokens(self) -> int:
        return sum(line.tokens for line in self.lines if not line.useful)

    @property
    def distractor(self) -> bool:
        return any(line.distractor for line in self.lines)


def score_block(question: SessionQuestion, block: str, count_tokens: Callable[[str], int]) -> QuestionScore:
    """Which facts the injected block holds, and which of its memories are useful, noise or distractors."""
    lines = memory_lines(block)
    texts = [memory_text(line) for line in lines]
    said = "\n".join(texts)
    present = [fact_present(fact, said) for fact in question.facts]
    # A fact present only across several memories: each memory holding one of its keywords helps.
    spread = [fact for fact, found in zip(question.facts, present, strict=True)
              if found and not any(fact_present(fact, text) for text in texts)]
    scored: list[LineScore] = []
    for line, text in zip(lines, texts, strict=True):
        useful = any(fact_present(fact, text) for fact in question.facts) or any(
            keyword_present(keyword, text) for fact in spread for keyword in fact)
        distractor = not useful and any(fact_present(fact, text) for fact in question.distractors)
        scored.append(LineScore(line, count_tokens(line), useful, distractor))
    return QuestionScore(present, scored)


@dataclass
class Tally:
    """Question metrics summed over a group (a project, a category, everything)."""

    questions: int = 0
    answerable: int = 0  # questions with at least one fact
    facts: int = 0
    facts_present: int = 0
    facts_stored: int = 0  # facts held by one stored memory of the project: what recall could find
    all_facts: int = 0  # answerable questions whose facts are all present
    injected: int = 0  # questions that got a block at all
    tokens: int = 0
    noise_tokens: int = 0
    distractors: int = 0  # questions whose block holds a distractor memory
    latencies_ms: list[float] = field(default_factory=list)

    def add(self, question: SessionQuestion, score: QuestionScore, latency_ms: float,
            stored: list[bool] | None = None) -> None:
        self.questions += 1
        self.latencies_ms.append(latency_ms)
        if question.facts:
            self.answerable += 1
            self.facts += len(question.facts)
            self.facts_present += sum(score.facts_present)
            self.facts_stored += sum(stored or [])
            self.all_facts += int(all(score.facts_present))
        self.injected += int(bool(score.lines))
        self.tokens += score.tokens
        self.noise_tokens += score.noise_tokens
        self.distractors += int(score.distractor)

    def to_json(self) -> dict[str, Any]:
        from cems_cli.evaluation.metrics import percentile

        return {
            "questions": self.questions,
            "facts": self.facts,
            "fact_recall": round(self.facts_present / self.facts, 4) if self.facts else None,
            "stored_recall": round(self.facts_stored / self.facts, 4) if self.facts else None,
            "all_facts": round(self.all_facts / self.answerable, 4) if self.answerable else None,
            "noise": round(self.noise_tokens / self.tokens, 4) if self.tokens else 0.0,
            "injected": round(self.injected / self.questions, 4) if self.questions else 0.0,
            "tokens_per_question": round(self.tokens / self.questions, 1) if self.questions else 0.0,
            "distractors": round(self.distractors / self.questions, 4) if self.questions else 0.0,
            "latency_p50_ms": round(percentile(self.latencies_ms, 50), 2),
        }


def facts_stored(question: SessionQuestion, memories: list[str]) -> list[bool]:
    """For each fact, whether one of `memories` (the project's stored texts) holds it whole."""
    return [any(fact_present(fact, text) for text in memories) for fact in question.facts]


def iter_groups(question: SessionQuestion) -> Iterator[tuple[str, str]]:
    """The report groups a question counts in: overall, its project, its category."""
    yield "overall", ""
    yield "by_project", question.project
    yield "by_category", question.category

"""LongMemEval's `longmemeval_s.json` / `longmemeval_oracle.json` (xiaowu0162/LongMemEval) as a benchmark.

Each entry is one question with its own haystack of chat sessions, so it is its own corpus (memory space),
named by its `question_id`. Every turn is a unit: doc id `<question_id>:<session_id>:<n>` (n counts the
session's turns from 1, as LongMemEval's own retrieval code numbers them), session
`<question_id>:<session_id>`, speaker its role, timestamp its session's `haystack_dates` entry. The question
is asked at its `question_date`. Evidence: `answer_session_ids` (session level) and the turns marked
`has_answer: true` (turn level). Abstention questions (id ending in `_abs`) ask about things never said: they
have no evidence and are not scored, only counted (LongMemEval's retrieval evaluation skips them too).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cems_cli.evaluation.datasets import (
    DatasetError,
    Question,
    SessionBenchmark,
    Unit,
    check_ids,
    optional_string,
    read_json,
    string_field,
)

ABSTENTION_SUFFIX = "_abs"
REQUIRED_KEYS = ("question_id", "question_type", "question", "haystack_session_ids", "haystack_sessions",
                 "answer_session_ids")
# "2023/05/20 (Sat) 02:21"; the weekday and the time may be absent.
_DATE = re.compile(r"^(\d{4})/(\d{1,2})/(\d{1,2})(?:\s*\([A-Za-z]+\))?(?:\s+(\d{1,2}):(\d{2}))?$")


def load_longmemeval(path: Path) -> SessionBenchmark:
    """A LongMemEval file → units, questions, evidence sessions and evidence turns; DatasetError (one line,
    naming the entry) when it is not JSON, not a list of objects, or an entry lacks a required key."""
    path = Path(path)
    entries = read_json(path)
    if not isinstance(entries, list):
        raise DatasetError(f"{path.name}: not a LongMemEval file (expected a JSON list of questions)")
    units: list[Unit] = []
    questions: list[Question] = []
    turn_gold: dict[str, tuple[str, ...]] = {}
    session_gold: dict[str, tuple[str, ...]] = {}
    seen: set[str] = set()
    for number, entry in enumerate(entries, start=1):
        where = f"{path.name} entry {number}"
        if not isinstance(entry, dict):
            raise DatasetError(f"{where}: expected a JSON object")
        if isinstance(entry.get("question_id"), str):
            where += f" ({entry['question_id']})"
        missing = [key for key in REQUIRED_KEYS if key not in entry]
        if missing:
            raise DatasetError(f"{where}: missing {', '.join(repr(key) for key in missing)}")
        qid = string_field(entry, "question_id", where)
        if qid in seen:  # said here, before its haystack's doc ids clash with the first one's
            raise DatasetError(f"{where}: question_id {qid!r} appears twice")
        seen.add(qid)
        entry_units, evidence_turns = haystack_units(entry, where)
        question = _question(entry, where)
        units.extend(entry_units)
        questions.append(question)
        sessions = _evidence_sessions(entry, {u.session_id for u in entry_units}, where)
        if sessions and not qid.endswith(ABSTENTION_SUFFIX):
            session_gold[qid] = sessions
            if evidence_turns:
                turn_gold[qid] = evidence_turns
    bench = SessionBenchmark(path.stem, tuple(units), tuple(questions), turn_gold, session_gold)
    check_ids(bench, path.name)
    return bench


def haystack_units(entry: dict[str, Any], where: str) -> tuple[list[Unit], tuple[str, ...]]:
    """One entry's turns as units, in session order, and the doc ids of the turns marked `has_answer`."""
    qid = string_field(entry, "question_id", where)
    ids, sessions = entry["haystack_session_ids"], entry["haystack_sessions"]
    if not isinstance(ids, list) or not isinstance(sessions, list):
        raise DatasetError(f"{where}: 'haystack_session_ids' and 'haystack_sessions' must be lists")
    if len(ids) != len(sessions):
        raise DatasetError(f"{where}: {len(ids)} haystack_session_ids for {len(sessions)} haystack_sessions")
    dates = entry.get("haystack_dates")
    if dates is not None and (not isinstance(dates, list) or len(dates) != len(sessions)):
        raise DatasetError(f"{where}: 'haystack_dates' must be a list with one date per session")
    units: list[Unit] = []
    evidence: list[str] = []
    seen: set[str] = set()
    for index, (raw_id, turns) in enumerate(zip(ids, sessions, strict=True)):
        session_where = f"{where} session {index + 1}"
        if not isinstance(raw_id, (str, int)) or not isinstance(turns, list):
            raise DatasetError(f"{session_where}: expected a session id and a list of turns")
        session_id = f"{qid}:{raw_id}"
        if session_id in seen:  # the same session twice in one haystack: its turns are stored once
            continue
        seen.add(session_id)
        raw_date = dates[index] if dates is not None else None
        timestamp = None if raw_date is None else parse_longmemeval_date(raw_date, f"{session_where} date")
        for position, turn in enumerate(turns, start=1):
            unit = _turn_unit(turn, qid, session_id, f"{session_id}:{position}", timestamp, raw_date,
                              f"{session_where} turn {position}")
            if unit is None:
                continue
            units.append(unit)
            if turn.get("has_answer") is True:
                evidence.append(unit.doc_id)
    return units, tuple(evidence)


def _turn_unit(turn: Any, qid: str, session_id: str, doc_id: str, timestamp: datetime | None,
               raw_date: Any, where: str) -> Unit | None:
    """A turn as a unit; None for a turn with no text (nothing to store or find)."""
    if not isinstance(turn, dict) or not isinstance(turn.get("content"), str):
        raise DatasetError(f"{where}: expected an object with a 'content' string")
    role = turn.get("role")
    if role is not None and not isinstance(role, str):
        raise DatasetError(f"{where}: 'role' must be a string")
    if not turn["content"].strip():
        return None
    return Unit(corpus_id=qid, doc_id=doc_id, text=turn["content"], session_id=session_id,
                timestamp=timestamp, speaker=role or None,
                timestamp_raw=None if raw_date is None else str(raw_date))


def _question(entry: dict[str, Any], where: str) -> Question:
    qid = string_field(entry, "question_id", where)
    raw_date = entry.get("question_date")
    # The file's times name no zone; the memories' are stored as UTC, so the question is asked in UTC too.
    asked_at = (None if raw_date is None
                else parse_longmemeval_date(raw_date, f"{where} question_date").replace(tzinfo=UTC))
    return Question(qid=qid, question=string_field(entry, "question", where),
                    category=string_field(entry, "question_type", where), corpus_id=qid,
                    answer=optional_string(entry, "answer"), asked_at=asked_at)


def _evidence_sessions(entry: dict[str, Any], known: set[str | None], where: str) -> tuple[str, ...]:
    """The answer sessions, in the order named, that are in the haystack: one named but absent cannot be
    retrieved, so it is no evidence."""
    ids = entry["answer_session_ids"]
    if not isinstance(ids, list) or not all(isinstance(i, (str, int)) for i in ids):
        raise DatasetError(f"{where}: 'answer_session_ids' must be a list of session ids")
    qid = entry["question_id"]
    return tuple(dict.fromkeys(f"{qid}:{i}" for i in ids if f"{qid}:{i}" in known))


def parse_longmemeval_date(raw: Any, where: str) -> datetime:
    """"2023/05/20 (Sat) 02:21" → 2023-05-20 02:21 (naive, like LoCoMo's times: stored as UTC)."""
    match = _DATE.match(" ".join(str(raw).split()))
    try:
        if match is None:
            raise ValueError
        year, month, day, hour, minute = (int(g) if g else 0 for g in match.groups())
        return datetime(year, month, day, hour, minute)
    except ValueError:
        raise DatasetError(f"{where}: not a date like '2023/05/20 (Sat) 02:21': {raw!r}") from None

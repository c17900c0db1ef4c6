"""Benchmark loaders: the generic JSONL folder format, and LoCoMo's official `locomo10.json` converted to it.

Both produce the same in-memory `Benchmark` (the folder format is described at `load_bench_dir`):
units (the memories to ingest, grouped by `corpus_id`), questions, and qrels (question → relevant doc ids).
A `SessionBenchmark` (LongMemEval, loaded in longmemeval.py) has whole sessions as its evidence instead.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property
from pathlib import Path
from typing import Any, ClassVar

from cems_cli.evaluation import metrics


class DatasetError(ValueError):
    """A benchmark file that cannot be read; the message is one line naming the file (and line)."""


@dataclass(frozen=True)
class Unit:
    """One memory-to-be: a dialog turn, a note, a document."""

    corpus_id: str
    doc_id: str
    text: str
    session_id: str | None = None
    timestamp: datetime | None = None
    speaker: str | None = None
    timestamp_raw: str | None = None


@dataclass(frozen=True)
class Question:
    qid: str
    question: str
    category: str
    corpus_id: str
    answer: str | None = None
    category_id: int | None = None
    # When the dataset says the question was asked (with its zone); None: at the run's moment.
    asked_at: datetime | None = None


@dataclass(frozen=True)
class Benchmark:
    name: str
    units: tuple[Unit, ...]
    questions: tuple[Question, ...]
    qrels: dict[str, tuple[str, ...]] = field(default_factory=dict)

    metric_names: ClassVar[tuple[str, ...]] = metrics.METRIC_NAMES

    def scored_questions(self) -> list[Question]:
        """Questions with at least one relevant doc id, in file order (the others are not scored)."""
        return [q for q in self.questions if self.qrels.get(q.qid)]

    def score(self, qid: str, ranked: list[str]) -> dict[str, float]:
        """`metric_names` for a scored question from its ranked doc ids."""
        return metrics.question_metrics(ranked, self.qrels[qid])

    def gold(self, qid: str) -> dict[str, list[str]]:
        """What a question's results are checked against, for its per-question details."""
        return {"gold": list(self.qrels.get(qid, ()))}

    def units_by_corpus(self) -> dict[str, list[Unit]]:
        grouped: dict[str, list[Unit]] = {}
        for unit in self.units:
            grouped.setdefault(unit.corpus_id, []).append(unit)
        return grouped


@dataclass(frozen=True)
class SessionBenchmark(Benchmark):
    """Units are turns, evidence is whole sessions (`session_gold`: question → session ids, as the units'
    `session_id`); `qrels` are the evidence turns, which a dataset may not mark (then turn level is unscored).
    A question is scored when it has an evidence session."""

    session_gold: dict[str, tuple[str, ...]] = field(default_factory=dict)

    metric_names: ClassVar[tuple[str, ...]] = metrics.SESSION_METRIC_NAMES

    @cached_property
    def session_of(self) -> dict[str, str]:
        return {unit.doc_id: unit.session_id for unit in self.units if unit.session_id is not None}

    def scored_questions(self) -> list[Question]:
        return [q for q in self.questions if self.session_gold.get(q.qid)]

    def score(self, qid: str, ranked: list[str]) -> dict[str, float]:
        return metrics.session_metrics(ranked, self.session_of, self.session_gold[qid],
                                       self.qrels.get(qid, ()))

    def gold(self, qid: str) -> dict[str, list[str]]:
        return {**super().gold(qid), "gold_sessions": list(self.session_gold.get(qid, ()))}


# The generic format -----------------------------------------------------------------------------------------

def load_bench_dir(directory: Path) -> Benchmark:
    """Read corpus.jsonl, questions.jsonl and qrels.jsonl from a folder; DatasetError if anything is off."""
    directory = Path(directory)
    if not directory.is_dir():
        raise DatasetError(f"{directory} is not a folder of corpus.jsonl, questions.jsonl and qrels.jsonl")
    units = [_unit(row, where) for row, where in read_jsonl(directory / "corpus.jsonl")]
    questions = [_question(row, where) for row, where in read_jsonl(directory / "questions.jsonl")]
    qrels: dict[str, tuple[str, ...]] = {}
    for row, where in read_jsonl(directory / "qrels.jsonl"):
        qid = string_field(row, "qid", where)
        ids = row.get("relevant_doc_ids")
        if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
            raise DatasetError(f"{where}: 'relevant_doc_ids' must be a list of strings")
        qrels[qid] = tuple(dict.fromkeys(ids))
    return check_ids(Benchmark(directory.name, tuple(units), tuple(questions), qrels), directory.name)


def read_jsonl(path: Path) -> Iterator[tuple[dict[str, Any], str]]:
    """Each non-blank line of a JSONL file as (object, 'NAME line N'); DatasetError on anything else."""
    try:
        handle = open(path, encoding="utf-8")
    except OSError as error:
        raise DatasetError(f"cannot read {path}: {error.strerror or error}") from None
    with handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            where = f"{path.name} line {number}"
            try:
                row = json.loads(line)
            except json.JSONDecodeError as error:
                raise DatasetError(f"{where}: not valid JSON ({error.msg})") from None
            if not isinstance(row, dict):
                raise DatasetError(f"{where}: expected a JSON object")
            yield row, where


def read_json(path: Path) -> Any:
    """A whole JSON file; DatasetError when it cannot be read or is not JSON."""
    path = Path(path)
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise DatasetError(f"cannot read {path}: {error.strerror or error}") from None
    except UnicodeDecodeError:
        raise DatasetError(f"{path.name}: not valid JSON (not UTF-8 text)") from None
    except json.JSONDecodeError as error:
        raise DatasetError(f"{path.name}: not valid JSON ({error.msg} at line {error.lineno})") from None


def string_field(row: dict[str, Any], key: str, where: str) -> str:
    value = row.get(key)
    if not isinstance(value, str) or not value.strip():
        raise DatasetError(f"{where}: {key!r} must be a non-empty string")
    return value


def optional_string(row: dict[str, Any], key: str) -> str | None:
    value = row.get(key)
    return None if value is None else str(value)


def _unit(row: dict[str, Any], where: str) -> Unit:
    stamp = row.get("timestamp")
    timestamp = None
    if stamp is not None:
        try:
            timestamp = datetime.fromisoformat(str(stamp))
        except ValueError:
            raise DatasetError(f"{where}: 'timestamp' is not ISO 8601: {stamp!r}") from None
    return Unit(corpus_id=string_field(row, "corpus_id", where), doc_id=string_field(row, "doc_id", where),
                text=string_field(row, "text", where), session_id=optional_string(row, "session_id"),
                timestamp=timestamp, speaker=optional_string(row, "speaker"),
                timestamp_raw=optional_string(row, "timestamp_raw"))


def _question(row: dict[str, Any], where: str) -> Question:
    category_id = row.get("category_id")
    return Question(qid=string_field(row, "qid", where), question=string_field(row, "question", where),
                    category=optional_string(row, "category") or "all",
                    corpus_id=string_field(row, "corpus_id", where), answer=optional_string(row, "answer"),
                    category_id=category_id if isinstance(category_id, int) else None)


def check_ids(bench: Benchmark, source: str) -> Benchmark:
    """Unique doc ids and qids; qrels only name known questions and doc ids of the question's own corpus."""
    corpus_of: dict[str, str] = {}
    for unit in bench.units:
        if unit.doc_id in corpus_of:
            raise DatasetError(f"{source}: doc_id {unit.doc_id!r} appears twice")
        corpus_of[unit.doc_id] = unit.corpus_id
    questions: dict[str, Question] = {}
    for question in bench.questions:
        if question.qid in questions:
            raise DatasetError(f"{source}: qid {question.qid!r} appears twice")
        questions[question.qid] = question
    for qid, ids in bench.qrels.items():
        if qid not in questions:
            raise DatasetError(f"{source}: qrels name an unknown question {qid!r}")
        for doc_id in ids:
            if corpus_of.get(doc_id) != questions[qid].corpus_id:
                raise DatasetError(f"{source}: qrels of {qid!r} name {doc_id!r}, not a doc of its corpus")
    return bench


# LoCoMo -----------------------------------------------------------------------------------------------------

LOCOMO_CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
_SESSION_KEY = re.compile(r"^session_(\d+)$")
# Evidence ids as written in the file: "D1:3", and the slips "D:11:26", "D30:05" and "D8:6; D9:17".
_EVIDENCE_ID = re.compile(r"^D:?(\d+):(\d+)$")
_LOCOMO_TIME = "%I:%M %p on %d %B, %Y"  # "1:56 pm on 8 May, 2023"


def load_locomo(path: Path) -> Benchmark:
    """LoCoMo's `locomo10.json` → units (one per dialog turn, doc_id `conv-26:D1:3`), questions and qrels."""
    path = Path(path)
    samples = read_json(path)
    if not isinstance(samples, list) or not all(isinstance(s, dict) and "conversation" in s for s in samples):
        raise DatasetError(f"{path.name}: not a LoCoMo file (expected a list of samples with 'conversation')")
    units: list[Unit] = []
    questions: list[Question] = []
    qrels: dict[str, tuple[str, ...]] = {}
    for sample in samples:
        sample_units = locomo_units(sample)
        units.extend(sample_units)
        known = {u.doc_id for u in sample_units}
        for question, gold in locomo_questions(sample, known):
            questions.append(question)
            if gold:
                qrels[question.qid] = gold
    return check_ids(Benchmark(path.stem, tuple(units), tuple(questions), qrels), path.name)


def locomo_units(sample: dict[str, Any]) -> list[Unit]:
    corpus_id = str(sample["sample_id"])
    conversation = sample["conversation"]
    sessions = sorted((int(m.group(1)), key) for key in conversation if (m := _SESSION_KEY.match(key)))
    units: list[Unit] = []
    for number, key in sessions:
        raw_time = conversation.get(f"{key}_date_time")
        timestamp = parse_locomo_time(raw_time) if raw_time else None
        for turn in conversation[key] or []:
            text = f"{turn['speaker']}: {turn['text']}"
            if turn.get("blip_caption"):  # the photo a speaker shared, as the dataset's authors describe it
                text += f" [shares a photo: {turn['blip_caption']}]"
            units.append(Unit(corpus_id=corpus_id, doc_id=f"{corpus_id}:{turn['dia_id']}", text=text,
                              session_id=f"{corpus_id}:session_{number}", timestamp=timestamp,
                              speaker=turn["speaker"], timestamp_raw=raw_time))
    return units


def parse_locomo_time(raw: str) -> datetime | None:
    try:
        return datetime.strptime(" ".join(raw.split()), _LOCOMO_TIME)
    except ValueError:
        return None


def locomo_questions(sample: dict[str, Any],
                     known_doc_ids: set[str]) -> Iterator[tuple[Question, tuple[str, ...]]]:
    corpus_id = str(sample["sample_id"])
    for index, qa in enumerate(sample.get("qa") or []):
        answer = qa.get("answer", qa.get("adversarial_answer"))
        category_id = int(qa["category"])
        question = Question(qid=f"{corpus_id}:q{index}", question=str(qa["question"]),
                            category=LOCOMO_CATEGORIES.get(category_id, str(category_id)),
                            corpus_id=corpus_id, answer=None if answer is None else str(answer),
                            category_id=category_id)
        yield question, normalise_evidence(corpus_id, qa.get("evidence") or [], known_doc_ids)


def normalise_evidence(corpus_id: str, evidence: list[str], known_doc_ids: set[str]) -> tuple[str, ...]:
    """Split run-together ids, repair "D:11:26" and "D30:05", drop ids naming no turn, keep the first of
    repeated ids."""
    gold: list[str] = []
    for entry in evidence:
        for token in re.split(r"[;,\s]+", str(entry)):
            match = _EVIDENCE_ID.match(token.strip())
            if not match:
                continue
            doc_id = f"{corpus_id}:D{int(match.group(1))}:{int(match.group(2))}"  # "D30:05" is D30:5
            if doc_id in known_doc_ids and doc_id not in gold:
                gold.append(doc_id)
    return tuple(gold)

"""Session sets written by others, through the session benchmark: each set apart, then together.

A questions folder (bench/agent-sessions/) holds one `<set>.jsonl` per set, in the session benchmark's
question format; the sessions themselves are public data kept outside the project (`--data FOLDER`, one
sub-folder per set, see bench/agent-sessions/README.md). Each set is converted to Claude Code transcripts
in an owner-only temporary folder (`convert_specstory`, `convert_claude`, `convert_swebench`), captured and
asked in its own throwaway home (`sessions.run_sessions`: each set's memory ages are those of its own data),
and compared with BM25 over its raw turns (`bm25_reference`). The converted transcripts are deleted after.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cems_cli.config import Settings
from cems_cli.evaluation import bm25_reference
from cems_cli.evaluation.datasets import DatasetError
from cems_cli.evaluation.runner import ProgressFactory
from cems_cli.evaluation.sessions import Asked, run_sessions
from cems_cli.evaluation.sessions_data import (
    QuestionScore,
    SessionQuestion,
    SessionSet,
    Tally,
    load_session_set,
)


@dataclass(frozen=True)
class SetSpec:
    name: str  # the data's sub-folder and the questions file's stem
    fmt: str  # specstory, claude or swebench
    cwd: str = ""  # specstory: the one project's working directory (the exports name none)


SETS = (
    SetSpec("chef-chopsky", "specstory", "/cursor/chef-chopsky"),
    SetSpec("m-claude", "claude"),
    SetSpec("swebench-mini", "swebench"),
)


def convert_set(spec: SetSpec, source: Path, projects: Path, *, swebench_per_repo: int | None = None
                ) -> list[Path]:
    """Writes the set's sessions as Claude Code transcripts under `projects`."""
    if not source.is_dir():
        raise DatasetError(f"{source} is not a folder (the {spec.name} set's data)")
    if spec.fmt == "specstory":
        from cems_cli.evaluation import convert_specstory

        return convert_specstory.convert(source, projects, spec.cwd)
    if spec.fmt == "claude":
        from cems_cli.evaluation import convert_claude

        return convert_claude.convert(source, projects)
    if spec.fmt == "swebench":
        from cems_cli.evaluation import convert_swebench

        return convert_swebench.convert(source, projects, per_repo=swebench_per_repo)
    raise ValueError(f"unknown session format {spec.fmt!r}")


def chosen_sets(questions: Path, names: list[str] | None) -> list[SetSpec]:
    """The sets to run: those named (all known ones by default) whose questions file exists."""
    known = {spec.name: spec for spec in SETS}
    unknown = [name for name in names or [] if name not in known]
    if unknown:
        raise DatasetError(f"unknown set {unknown[0]!r} (expected one of: {', '.join(known)})")
    specs = [known[name] for name in names] if names else list(SETS)
    missing = [spec.name for spec in specs if not (questions / f"{spec.name}.jsonl").is_file()]
    if names and missing:
        raise DatasetError(f"{questions} has no {missing[0]}.jsonl")
    specs = [spec for spec in specs if spec.name not in missing]
    if not specs:
        raise DatasetError(f"{questions} holds no questions file of a known set "
                           f"({', '.join(s.name + '.jsonl' for s in SETS)})")
    return specs


def load_set(spec: SetSpec, data: Path, questions: Path, work: Path, *,
             swebench_per_repo: int | None = None) -> SessionSet:
    folder = work / spec.name
    convert_set(spec, data / spec.name, folder / "projects", swebench_per_repo=swebench_per_repo)
    dataset = load_session_set(folder, questions / f"{spec.name}.jsonl")
    dataset.root = Path(spec.name)  # the report names the set, not the temporary folder
    return dataset


@dataclass
class AgentSessionsRun:
    result: dict[str, Any]
    details: list[dict[str, Any]]


def run_agent_sessions(data: Path, questions: Path, base: Settings, *, names: list[str] | None = None,
                       trigger: str = "both", mode: str | None = None, limit_questions: int | None = None,
                       swebench_per_repo: int | None = None, progress: ProgressFactory | None = None,
                       announce: Callable[[str], None] | None = None) -> AgentSessionsRun:
    """Every chosen set converted, captured and asked in its own throwaway home; BM25 beside it."""
    from cems_cli.text.tokens import count_tokens

    specs = chosen_sets(questions, names)
    started = time.perf_counter()
    sets: dict[str, dict[str, Any]] = {}
    details: list[dict[str, Any]] = []
    together, together_bm25 = _Sums(), _Sums()
    with tempfile.TemporaryDirectory(prefix="cems-agent-sessions-") as work:
        for spec in specs:
            if announce:
                announce(f"{spec.name}: converting")
            set_started = time.perf_counter()
            dataset = load_set(spec, data, questions, Path(work), swebench_per_repo=swebench_per_repo)
            if not dataset.questions:
                raise DatasetError(f"{questions / (spec.name + '.jsonl')} has no question")
            run = run_sessions(dataset, base, trigger=trigger, mode=mode, limit_questions=limit_questions,
                               progress=progress, source=str(data / spec.name))
            asked_questions = [question for question, *_rest in run.asked]
            reference = bm25_reference.rank(dataset, asked_questions, count_tokens)
            capture = run.result["capture"]
            mine, bm25 = _Sums(), _Sums()
            mine.add_run(run.asked, run.result)
            bm25.add_reference(reference)
            together.add_run(run.asked, run.result)
            together_bm25.add_reference(reference)
            sets[spec.name] = {
                "summary": mine.row(capture["sessions"], capture["memories"]),
                "bm25": bm25.row(),
                "run": run.result,
                "seconds": round(time.perf_counter() - set_started, 1),
            }
            for row, (_q, block, score) in zip(run.details, reference, strict=True):
                details.append({"set": spec.name, **row, "bm25": {
                    "facts": [present for present in score.facts_present], "tokens": score.tokens,
                    "block": block}})
    result = {
        "sets": sets,
        "together": {"summary": together.row(together.sessions, together.memories),
                     "bm25": together_bm25.row()},
        "config": {"kind": "agent-sessions", "data": str(data), "questions": str(questions),
                   "sets": [spec.name for spec in specs], "trigger": trigger,
                   "swebench_per_repo": swebench_per_repo, "limit_questions": limit_questions,
                   "bm25_top_k": bm25_reference.TOP_K,
                   "seconds": round(time.perf_counter() - started, 1)},
    }
    return AgentSessionsRun(result, details)


class _Sums:
    """A group's question metrics (the session benchmark's Tally) plus memory lines per question and the
    memories stored per session."""

    def __init__(self) -> None:
        self.tally = Tally()
        self.lines = 0
        self.sessions = 0
        self.memories = 0
        self.stored = 0

    def _add(self, question: SessionQuestion, score: QuestionScore, elapsed: float) -> None:
        self.tally.add(question, score, elapsed)
        self.lines += len(score.lines)

    def add_run(self, asked: list[Asked], result: dict[str, Any]) -> None:
        for question, _block, score, elapsed in asked:
            self._add(question, score, elapsed)
        overall = result["overall"]
        # Facts held by a stored memory, as the run counted them (its store is gone by now).
        self.stored += round((overall.get("stored_recall") or 0) * overall["facts"])
        self.sessions += result["capture"]["sessions"]
        self.memories += result["capture"]["memories"]

    def add_reference(self, scored: list[tuple[SessionQuestion, str, QuestionScore]]) -> None:
        for question, _block, score in scored:
            self._add(question, score, 0.0)

    def row(self, sessions: int | None = None, memories: int | None = None) -> dict[str, Any]:
        row = self.tally.to_json()
        questions = self.tally.questions
        row["lines_per_question"] = round(self.lines / questions, 2) if questions else 0.0
        if sessions is not None and memories is not None:
            row["stored_recall"] = round(self.stored / self.tally.facts, 4) if self.tally.facts else None
            row.update({"sessions": sessions, "memories": memories,
                        "memories_per_session": round(memories / sessions, 2) if sessions else None})
        else:
            row.pop("stored_recall", None)
            row.pop("latency_p50_ms", None)
        return row

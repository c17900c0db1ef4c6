"""Run a retrieval benchmark against the real product in a throwaway data folder.

Each corpus is ingested into its own memory space (a distinct CEMS_USER in one temporary CEMS_HOME, never
the user's own memories) through the `cems import` engine, then every scored question is asked through
`cems.Memory.search` — the code `cems search` runs — and its results are mapped back to doc ids.
"""

from __future__ import annotations

import contextlib
import platform
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cems_cli.config import Settings
from cems_cli.evaluation import metrics
from cems_cli.evaluation.datasets import Benchmark, Question, Unit
from cems_cli.evaluation.indexing import MEMORY_TEXT_FORMAT, unit_to_record
from cems_cli.plumbing import procs

SEARCH_LIMIT = 10
MODES = ("vector", "hybrid", "auto")
# Settings that identify a person or a place, or hold secrets: never written into a results file.
_PRIVATE_SETTINGS = frozenset({"home", "user", "team", "project", "database_url", "llm_api_key",
                               "llm_base_url"})

Update = Callable[[int, int], None]
ProgressFactory = Callable[[str], AbstractContextManager[Update]]


@dataclass
class EvalRun:
    summary: dict[str, Any]
    latencies_ms: list[float]
    config: dict[str, Any]
    details: list[dict[str, Any]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """Exactly {"overall", "by_category", "latency_ms", "config"}."""
        return {
            "overall": _rounded(self.summary["overall"]),
            "by_category": {name: _rounded(row) for name, row in self.summary["by_category"].items()},
            "latency_ms": {"p50": round(metrics.percentile(self.latencies_ms, 50), 2),
                           "p95": round(metrics.percentile(self.latencies_ms, 95), 2)},
            "config": self.config,
        }


def _rounded(row: dict[str, float | int | None]) -> dict[str, float | int | None]:
    return {key: value if key == "n" or value is None else round(value, 4) for key, value in row.items()}


def run_benchmark(bench: Benchmark, base: Settings, *, mode: str, limit_questions: int | None = None,
                  progress: ProgressFactory | None = None, source: str | None = None,
                  as_of: datetime | None = None, with_context: bool = True) -> EvalRun:
    """Ingest the corpora the questions need, ask every scored question, and score the answers.

    A question is asked at `as_of` when given, else when the dataset says it was asked (LongMemEval's
    question_date), else when the run starts: time decay counts whole days from that moment, so questions
    asked on either side of a day boundary would otherwise see other scores, and a fixed moment reproduces a
    run on any later day.

    One corpus at a time is ingested, asked its questions and closed: a benchmark of hundreds of corpora
    (LongMemEval has one per question) never holds a database connection per corpus at once."""
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r} (expected one of: {', '.join(MODES)})")
    run_start = datetime.now(UTC)
    progress = progress or _no_progress
    questions = bench.scored_questions()
    limited = limit_questions is not None and limit_questions < len(questions)
    if limit_questions is not None:
        questions = questions[:limit_questions]
    units = bench.units_by_corpus()
    by_corpus: dict[str, list[int]] = {}
    for index, question in enumerate(questions):
        by_corpus.setdefault(question.corpus_id, []).append(index)
    total_units = sum(len(units.get(c, [])) for c in by_corpus)
    latencies: list[float] = []
    rows: list[dict[str, float]] = [{} for _ in questions]
    details: list[dict[str, Any]] = [{} for _ in questions]
    ingest_seconds = 0.0
    with throwaway_home() as home, progress("running") as update:
        done, total = 0, total_units + len(questions)
        for corpus_id, indexes in by_corpus.items():
            corpus_units = units.get(corpus_id, [])
            started = time.perf_counter()
            with ingest_corpus(corpus_id, corpus_units, base, home,
                               _offset(update, done, len(corpus_units), total), with_context) as space:
                ingest_seconds += time.perf_counter() - started
                done += len(corpus_units)
                for index in indexes:
                    question = questions[index]
                    moment = as_of or question.asked_at or run_start
                    ranked, elapsed = space.ask(question.question, mode, moment)
                    rows[index] = bench.score(question.qid, ranked)
                    latencies.append(elapsed)
                    details[index] = _detail(question, bench.gold(question.qid), ranked, rows[index], elapsed,
                                             moment)
                    done += 1
                    update(done, total)
    config = _config(bench, base, mode=mode, source=source, questions=questions, corpora=list(by_corpus),
                     units=total_units, ingest_seconds=ingest_seconds, query_seconds=sum(latencies) / 1000,
                     limit_questions=limit_questions, as_of=as_of or run_start)
    config["context"] = "the unit before it" if with_context else "none (each unit alone, as capture stores)"
    config.update(_coverage(bench, questions, rows, fixed_moment=as_of is not None, limited=limited))
    scored = [(question.category, row) for question, row in zip(questions, rows, strict=True)]
    return EvalRun(metrics.summarise(scored, bench.metric_names), latencies, config, details)


def _coverage(bench: Benchmark, questions: list[Question], rows: list[dict[str, float]], *,
              fixed_moment: bool, limited: bool) -> dict[str, Any]:
    """What the averages stand on: questions asked at their own date, questions counted but not scored, and
    any metric computed for only some questions (turn level without `has_answer` flags) with its count."""
    partial = {name: sum(1 for row in rows if name in row) for name in bench.metric_names}
    return {
        "dated_questions": 0 if fixed_moment else sum(1 for q in questions if q.asked_at is not None),
        "unscored": unscored_questions(bench, questions, limited=limited),
        "questions_per_metric": {name: n for name, n in partial.items() if n < len(rows)},
    }


def unscored_questions(bench: Benchmark, asked: list[Question], *, limited: bool) -> dict[str, Any]:
    """The questions without evidence (LoCoMo's unanswerable ones, LongMemEval's abstention questions):
    neither asked nor scored, but counted, per category. With a limit: those among the questions up to the
    last one asked, so the count describes the same stretch of the file."""
    scored = {q.qid for q in bench.scored_questions()}
    considered = list(bench.questions)
    if limited and asked:
        last = asked[-1].qid
        considered = considered[:next(i for i, q in enumerate(considered) if q.qid == last) + 1]
    by_category: dict[str, int] = {}
    for question in considered:
        if question.qid not in scored:
            by_category[question.category] = by_category.get(question.category, 0) + 1
    return {"n": sum(by_category.values()), "by_category": dict(sorted(by_category.items()))}


@contextlib.contextmanager
def _no_progress(_label: str) -> Iterator[Update]:
    yield lambda _done, _total: None


def _offset(update: Update, before: int, size: int, total: int) -> Update:
    """One corpus's embedding progress (chunks) as the run's progress (units of all corpora, then
    questions)."""
    def forward(done: int, corpus_total: int) -> None:
        update(before + (size * done // corpus_total if corpus_total else size), total)
    return forward


@dataclass
class Corpus:
    """One ingested memory space: its service, and which doc ids each stored memory stands for."""

    service: Any  # cems_cli.api.Memory (imported lazily: the CLI module must stay cheap to import)
    docs_of: dict[str, list[str]]

    def ask(self, question: str, mode: str, as_of: datetime | None = None) -> tuple[list[str], float]:
        """Ranked doc ids for a question and the search latency in ms (access stats left alone)."""
        started = time.perf_counter()
        # The ranking is measured, not the confidence floor: every result of the top SEARCH_LIMIT counts.
        results = self.service.search(question, limit=SEARCH_LIMIT, mode=mode, track_access=False, now=as_of,
                                      include_weak=True)
        elapsed = (time.perf_counter() - started) * 1000
        return [doc for result in results for doc in self.docs_of.get(result.id, [])], elapsed


@contextlib.contextmanager
def ingest_corpus(corpus_id: str, units: list[Unit], base: Settings, home: Path,
                  progress: Update, with_context: bool = True) -> Iterator[Corpus]:
    """Store a corpus as memories of its own user in `home`; the service is closed on exit. Without
    context each unit is indexed alone, as capture stores what it derives (no neighbouring turn)."""
    from cems_cli.api import Memory

    project = f"project:eval/{corpus_id}"
    settings = base.model_copy(update={"home": home, "user": f"eval:{corpus_id}", "team": None,
                                       "database_url": None, "project": project})
    with Memory(settings) as service:
        records = [unit_to_record(unit, project, units[i - 1] if i and with_context else None,
                                  settings.max_memory_bytes)
                   for i, unit in enumerate(units)]
        # Our own records, whose source and project the evaluation reads back: trusted.
        report = service.import_records(records, trusted=True, progress=progress)
        docs_of: dict[str, list[str]] = {}
        # Two units with the same text are one memory (dedup): a hit on it counts for both doc ids.
        for unit, memory_id in zip(units, report.ids, strict=True):
            docs_of.setdefault(memory_id, []).append(unit.doc_id)
        yield Corpus(service, docs_of)


@contextlib.contextmanager
def throwaway_home() -> Iterator[Path]:
    """A temporary CEMS_HOME (its own embedded server), stopped and deleted afterwards.

    CEMS_HOME is also set in the environment for the duration, so nothing reached through `paths` can
    touch the user's own data folder.
    """
    from cems_cli.paths import pgdata_path, using_home
    from cems_cli.store.embedded import ServerError, stop_server

    home = Path(tempfile.mkdtemp(prefix="cems-eval-"))
    try:
        with using_home(home):
            yield home
    finally:
        with contextlib.suppress(ServerError, OSError):
            stop_server(pgdata_path(home))
        shutil.rmtree(home, ignore_errors=True)


def _detail(question: Question, gold: dict[str, list[str]], ranked: list[str], row: dict[str, float],
            elapsed: float, asked_at: datetime) -> dict[str, Any]:
    return {"qid": question.qid, "category": question.category, "question": question.question,
            **gold, "ranked": list(dict.fromkeys(ranked))[:SEARCH_LIMIT],
            "metrics": {k: round(v, 4) for k, v in row.items()}, "latency_ms": round(elapsed, 2),
            "asked_at": asked_at.isoformat(timespec="seconds")}


def _config(bench: Benchmark, base: Settings, *, mode: str, source: str | None, questions: list[Question],
            corpora: list[str], units: int, ingest_seconds: float, query_seconds: float,
            limit_questions: int | None, as_of: datetime) -> dict[str, Any]:
    settings = {k: v for k, v in base.model_dump(mode="json").items() if k not in _PRIVATE_SETTINGS}
    commit, dirty = git_state()
    from cems_cli import __version__

    return {
        "benchmark": bench.name, "source": source, "mode": mode, "limit": SEARCH_LIMIT,
        "questions": len(questions), "limit_questions": limit_questions, "corpora": len(corpora),
        "as_of": as_of.isoformat(timespec="seconds"),
        "units": units, "memory_text": MEMORY_TEXT_FORMAT,
        "embedding": {"backend": base.embedding_backend, "model": base.resolved_embedding_model,
                      "dim": base.resolved_embedding_dim},
        "llm_configured": base.llm_configured, "settings": settings,
        "ingest_seconds": round(ingest_seconds, 2),
        "ingest_per_second": round(units / ingest_seconds, 1) if ingest_seconds > 0 else None,
        "query_seconds": round(query_seconds, 2),
        "git_commit": commit, "git_dirty": dirty, "cems_version": __version__,
        "python": platform.python_version(), "finished_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }


def git_state() -> tuple[str | None, bool | None]:
    """(HEAD commit, uncommitted changes?) of the checkout CEMS runs from; (None, None) outside one."""
    repo = Path(__file__).resolve().parents[2]
    try:
        head = procs.run(["git", "-C", str(repo), "rev-parse", "HEAD"], timeout=5)
        if head.returncode != 0:
            return None, None
        # --no-optional-locks: a read must not refresh (write) the index of a checkout others work in.
        status = procs.run(
            ["git", "--no-optional-locks", "-C", str(repo), "status", "--porcelain", "--untracked-files=no"],
            timeout=10,
        )
    except (OSError, subprocess.SubprocessError):
        return None, None
    return head.stdout.strip(), (bool(status.stdout.strip()) if status.returncode == 0 else None)

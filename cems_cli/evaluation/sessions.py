"""The product's own loop as a benchmark: sessions in, captured memories, recall in a later session.

In a throwaway CEMS_HOME (`runner.throwaway_home`: its own embedded server, never the user's data):

1. Capture. Every transcript of the set is replayed turn by turn, in the order the sessions started, into a
   Claude Code-like projects folder, and captured by the real engine through the chosen trigger(s):
   * `hooks`: as the installed hooks would, PostToolUse/PostToolUseFailure for each tool call that ran
     (`hookhandlers.post_tool_use.handle`), then Stop at the end of each turn (`hookhandlers.stop.handle`)
     and the capture worker that Stop starts (`capture.worker.process_pending`, run in-process; the
     hook finds the worker lock held, so it spawns no process of its own);
   * `observer`: the observer engine (`capture.observer.Observer`) reading the folder, as the daemon does;
   * `both` (default): both, interleaved as they race in real use: per turn, the observer reads the file
     before the Stop worker, after it, or halfway through the turn and again after it.
   At the end the observer (if on) finalizes idle sessions and extracts what waits, with its clock moved
   past the idle time. An LLM extracts when CEMS_LLM_BASE_URL (or an API key) is set, else offline.
2. Recall. The search server of the throwaway home is started and warmed up; then each question is asked
   through the UserPromptSubmit hook handler (`hookhandlers.user_prompt_submit.handle`) with a payload of
   prompt, cwd and session id, at the product's default recall settings, and the `<memory-recall>` block it
   injects is scored (`sessions_data.score_block`). Latency is the handler's wall time.
3. Store. Memories stored per session and duplicates are read from the store afterwards.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import platform
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cems_cli.config import Settings, get_settings
from cems_cli.evaluation import metrics
from cems_cli.evaluation.runner import ProgressFactory, Update, _no_progress, git_state, throwaway_home
from cems_cli.evaluation.sessions_data import (
    QuestionScore,
    SessionQuestion,
    SessionSet,
    Tally,
    ToolEvent,
    Transcript,
    Turn,
    facts_stored,
    iter_groups,
    latest_moment,
    parse_time,
    score_block,
    shift_line,
)

if TYPE_CHECKING:
    from cems_cli.capture.observer import Observer, RunReport
    from cems_cli.engine.service import MemoryService

TRIGGERS = ("both", "hooks", "observer")
EVAL_USER = "eval:sessions"
# Targets the product aims at (bench/sessions/README.md); the report marks each met or not.
TARGETS: dict[str, tuple[str, float]] = {
    "fact_recall": (">=", 0.85),
    "noise": ("<=", 0.30),
    "duplicates": ("<=", 0),
    "memories_per_session": ("<=", 5),
    "latency_p50_ms": ("<=", 80.0),
}
# Recall settings unset for the run (every CEMS_RECALL_*, as the prompt hook sends them all): the benchmark
# measures the recall a user gets by default.
_RECALL_PREFIX = "CEMS_RECALL_"
_IDLE_SECONDS = 86_400.0  # no session goes idle during the replay; the final pass moves the clock past it
_SERVER_START_SECONDS = 180.0
_WARM_UP = "How do I run the tests in this project?"


@dataclass
class Capture:
    """What the triggers reported while capturing (summed over all their runs)."""

    turns: int = 0
    stops: int = 0
    tool_events: int = 0
    observer: dict[str, int] = field(default_factory=dict)
    worker: dict[str, int] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    summaries: dict[str, int] | None = None  # cems_cli/engine/summaries.py's report, when summaries are on

    def add_observer(self, report: RunReport) -> None:
        for key, value in report.to_json().items():
            if isinstance(value, int):
                self.observer[key] = self.observer.get(key, 0) + value
        self.errors.extend(report.errors)

    def add_worker(self, summary: dict[str, Any]) -> None:
        for key, value in summary.items():
            if isinstance(value, int) and not isinstance(value, bool):
                self.worker[key] = self.worker.get(key, 0) + value


Asked = tuple[SessionQuestion, str, QuestionScore, float]


@dataclass
class SessionsRun:
    result: dict[str, Any]
    details: list[dict[str, Any]]
    asked: list[Asked] = field(default_factory=list)  # what each question got, to sum runs together


def run_sessions(dataset: SessionSet, base: Settings, *, trigger: str = "both", mode: str | None = None,
                 limit_questions: int | None = None, progress: ProgressFactory | None = None,
                 source: str | None = None,
                 probe: Callable[[MemoryService, list[SessionQuestion]], None] | None = None) -> SessionsRun:
    """Capture every session through `trigger`, ask every question through the prompt hook, score.
    `probe`: called with the captured store and the questions before they are asked (what
    bench/confidence_fit.py reads the candidates' evidence from)."""
    if trigger not in TRIGGERS:
        raise ValueError(f"unknown trigger {trigger!r} (expected one of: {', '.join(TRIGGERS)})")
    progress = progress or _no_progress
    questions = dataset.scored_questions()
    if limit_questions is not None:
        questions = questions[:limit_questions]
    mode = mode or base.search_mode
    # The questions are asked now; the sessions are replayed as many days before now as the data puts them
    # before `asked_at`, so memory ages (time decay) are those of the data whenever the benchmark runs.
    reference = latest_moment(dataset)
    offset = datetime.now(UTC) - reference if reference else timedelta(0)
    with throwaway_home() as home, _environment(home, mode):
        settings = base.model_copy(update={"home": home, "user": EVAL_USER, "team": None,
                                           "database_url": None, "project": None})
        from cems_cli.engine.service import MemoryService

        with MemoryService(settings) as service:
            started = time.perf_counter()
            with progress("capturing sessions") as update:
                capture = _capture(dataset, settings, service, home, trigger, update, offset)
            if settings.summaries:
                # What the observer's daily maintenance makes of them before the questions are asked.
                from cems_cli.engine.summaries import build_summaries

                capture.summaries = build_summaries(service.conn, settings).to_json()
            ingest_seconds = time.perf_counter() - started
            store = _store_stats(service, dataset)
            if probe is not None:
                probe(service, questions)
        try:
            started = time.perf_counter()
            with progress("asking questions") as update:
                asked = _ask(questions, home, update)
            query_seconds = time.perf_counter() - started
        finally:
            _stop_search_server(home)
    result = _result(dataset, questions, asked, capture, store, settings=base, trigger=trigger, mode=mode,
                     source=source, limit_questions=limit_questions, ingest_seconds=ingest_seconds,
                     query_seconds=query_seconds, shift_days=offset.total_seconds() / 86400)
    details = [_detail(q, block, score, ms) for q, block, score, ms in asked]
    return SessionsRun(result, details, asked)


@contextlib.contextmanager
def _environment(home: Path, mode: str) -> Iterator[None]:
    """The process environment the hooks, the worker and the search server see during the run: this
    home's store only (no external database, no team, no fixed project: the project comes from each
    session's cwd), the eval user, default recall settings."""
    values: dict[str, str | None] = {
        "CEMS_USER": EVAL_USER,
        "CEMS_PROJECT": None,
        "CEMS_TEAM": None,
        "CEMS_DATABASE_URL": None,
        "CEMS_SEARCH_MODE": mode,
        "CEMS_OBSERVER_PATHS": str(home / "claude" / "projects"),
        "CEMS_OBSERVER_IDLE_SECONDS": str(_IDLE_SECONDS),
        # A benchmark does not wait out a failing endpoint: retry at once, then fall back to the digests.
        "CEMS_OBSERVER_BACKOFF_INITIAL": "0",
        "CEMS_OBSERVER_BACKOFF_MAX": "0",
        "CEMS_OBSERVER_LLM_MAX_ATTEMPTS": "2",
        # If this process dies before stopping it, the search server goes away on its own soon after.
        "CEMS_SERVE_IDLE_SECONDS": "600",
        **dict.fromkeys(name for name in os.environ if name.startswith(_RECALL_PREFIX)),
    }
    from cems_cli.paths import environ_set

    try:
        with environ_set(values):
            get_settings.cache_clear()
            yield
    finally:
        get_settings.cache_clear()


# --------------------------------------------------------------------------- capture


class _Clock:
    """The observer's wall clock: real time, moved forward at the end so every session is idle."""

    def __init__(self) -> None:
        self.offset = 0.0

    def __call__(self) -> float:
        return time.time() + self.offset


def _capture(dataset: SessionSet, settings: Settings, service: MemoryService, home: Path, trigger: str,
             update: Update, offset: timedelta) -> Capture:
    root = home / "claude" / "projects"
    root.mkdir(parents=True)
    capture = Capture()
    clock = _Clock()
    observer = _observer(service, settings, clock) if trigger in ("both", "observer") else None
    total = sum(len(t.turns) for t in dataset.transcripts)
    if trigger == "observer":
        # The daemon catching up on sessions that ran without hooks: whole files, then one pass.
        for transcript in dataset.transcripts:
            target = root / transcript.relative
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(b"".join(shift_line(line, offset) for turn in transcript.turns
                                        for line in turn.lines))
            capture.turns += len(transcript.turns)
        assert observer is not None
        capture.add_observer(observer.sync())
        update(total, total)
    else:
        with contextlib.closing(_Replay(settings, home, observer, hooks=True, capture=capture,
                                        offset=offset)) as replay:
            done = 0
            for number, transcript in enumerate(dataset.transcripts):
                path = root / transcript.relative
                path.parent.mkdir(parents=True, exist_ok=True)
                path.touch()
                for index, turn in enumerate(transcript.turns):
                    replay.turn(path, transcript, turn, (number + index) % 3)
                    done += 1
                    update(done, total)
    if observer is not None:
        _finish(observer, service, clock, capture)
    return capture


def _observer(service: MemoryService, settings: Settings, clock: _Clock) -> Observer:
    from cems_cli.capture.observer import Observer, llm_for
    from cems_cli.capture.observer_settings import load_observer_settings

    observer_settings = load_observer_settings()  # CEMS_OBSERVER_* as `_environment` set them
    llm = llm_for(observer_settings, settings)
    return Observer(service, observer_settings, llm, wall_clock=clock)


class _Replay:
    """Appends turns to transcripts with the hooks firing as Claude Code fires them, and the observer
    reading the file before the Stop worker (order 0), after it (1), or mid-turn and after it (2)."""

    def __init__(self, settings: Settings, home: Path, observer: Observer | None, *, hooks: bool,
                 capture: Capture, offset: timedelta) -> None:
        from cems_cli.capture import spool

        self.settings, self.home, self.observer, self.hooks = settings, home, observer, hooks
        self.capture, self.offset = capture, offset
        self.spool = spool.connect(spool.spool_path(str(home)))

    def close(self) -> None:
        self.spool.close()

    def turn(self, path: Path, transcript: Transcript, turn: Turn, order: int) -> None:
        observer, capture = self.observer, self.capture
        capture.turns += 1
        half = len(turn.lines) // 2 if observer is not None and order == 2 else len(turn.lines)
        with path.open("ab") as handle:
            for index, line in enumerate(turn.lines):
                if index == half and observer is not None:
                    handle.flush()
                    capture.add_observer(observer.sync([path]))  # a file-change event mid-turn
                handle.write(shift_line(line, self.offset))
                event = turn.tool_events.get(index)
                if self.hooks and event is not None:
                    handle.flush()
                    self._post_tool_use(path, transcript, turn, event)
        if observer is not None and order == 0:
            capture.add_observer(observer.sync([path]))
        if self.hooks and turn.stop:
            self._stop(path, transcript, turn)
        if observer is not None and order != 0:
            capture.add_observer(observer.sync([path]))

    def _post_tool_use(self, path: Path, transcript: Transcript, turn: Turn, event: ToolEvent) -> None:
        from cems_cli.hookhandlers import post_tool_use

        payload = _payload(path, transcript, turn, event.event)
        payload.update({"tool_name": event.tool_name, "tool_input": event.tool_input,
                        "tool_use_id": event.tool_use_id})
        if event.event == "PostToolUse":
            payload["tool_response"] = event.tool_response
        else:
            payload.update({"error": event.error, "is_interrupt": False})
        post_tool_use.handle(payload)
        self.capture.tool_events += 1
        # The spool stamps an event with the time the hook ran; the replay runs months of sessions in
        # minutes, so the event is dated when the transcript says the tool ran (what `patterns` memories
        # made from it carry as their date, as the engine's own memories carry the transcript's).
        moment = parse_time(event.timestamp)
        if moment is not None:
            self.spool.execute("UPDATE tool_events SET received_at = ? WHERE tool_use_id = ?",
                               ((moment + self.offset).timestamp(), event.tool_use_id))

    def _stop(self, path: Path, transcript: Transcript, turn: Turn) -> None:
        """The Stop hook, then the capture worker it would start. The worker lock is held while the hook
        runs, so the hook sees a worker running and starts no process; the worker then runs here."""
        from cems_cli.capture import spool
        from cems_cli.capture.worker import process_pending
        from cems_cli.hookhandlers import stop

        payload = _payload(path, transcript, turn, "Stop")
        payload.update({"stop_hook_active": False, "last_assistant_message": turn.last_message})
        with open(self.home / spool.LOCK_FILE, "a+") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                stop.handle(payload)
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)
        self.capture.stops += 1
        self.capture.add_worker(process_pending(self.settings, wait=True).to_json())


def _payload(path: Path, transcript: Transcript, turn: Turn, event: str) -> dict[str, Any]:
    return {"session_id": transcript.session_id, "transcript_path": str(path),
            "cwd": turn.cwd or transcript.cwd, "permission_mode": turn.permission_mode,
            "hook_event_name": event}


def _finish(observer: Observer, service: MemoryService, clock: _Clock, capture: Capture) -> None:
    """Every session idle: finalize what is open and extract what waits (a few passes for retries)."""
    from cems_cli.store import observer as observer_store

    clock.offset = _IDLE_SECONDS + 60
    capture.add_observer(observer.sync())
    items, _chars = observer_store.backlog_totals(service.conn, service.settings.user)
    # After a failed call the observer leaves the rest for its next pass (backoff), so a failing endpoint
    # settles one batch per pass: at most every item's attempts, then its offline digests.
    passes = items * (observer.settings.observer_llm_max_attempts + 1)
    while items and passes > 0:
        capture.add_observer(observer.sync())
        items, _chars = observer_store.backlog_totals(service.conn, service.settings.user)
        passes -= 1
    if items:
        capture.errors.append(f"{items} chunks still wait for LLM extraction after the final passes")


# --------------------------------------------------------------------------- what was stored


def _normalised(text: str) -> str:
    """Text compared for duplicates: case, quotes and backticks, spacing and a final stop ignored."""
    folded = " ".join(text.replace("`", "").replace('"', "").replace("'", "").lower().split())
    return folded.rstrip(".! ")


def _store_stats(service: MemoryService, dataset: SessionSet) -> dict[str, Any]:
    rows = service.conn.execute(
        "SELECT content, category, coalesce(source, ''), coalesce(source_ref, ''), coalesce(title, '') "
        "FROM memory_documents WHERE user_id = %s AND NOT archived ORDER BY created_at, id",
        (service.settings.user,),
    ).fetchall()
    by_category: dict[str, int] = {}
    by_source: dict[str, int] = {}
    texts: dict[tuple[str, str], int] = {}
    sources: dict[tuple[str, str, str], int] = {}
    for content, category, source, source_ref, title in rows:
        by_category[category] = by_category.get(category, 0) + 1
        by_source[source] = by_source.get(source, 0) + 1
        key = (category, _normalised(content))
        texts[key] = texts.get(key, 0) + 1
        if source_ref and title:
            where = (source_ref, category, title)
            sources[where] = sources.get(where, 0) + 1
    same_content = sum(n - 1 for n in texts.values())
    same_source = sum(n - 1 for n in sources.values())
    from cems_cli.project import project_for_dir

    per_project: dict[str, dict[str, int]] = {}
    texts_of: dict[str, list[str]] = {}
    for transcript in dataset.transcripts:
        project = project_for_dir(transcript.cwd) if transcript.cwd else ""
        per_project.setdefault(project, {"sessions": 0, "memories": 0})["sessions"] += 1
    for content, _category, _source, source_ref, _title in rows:
        for project, row in per_project.items():
            if project and (source_ref == project or source_ref.startswith(project + ":")):
                row["memories"] += 1
                texts_of.setdefault(project, []).append(content)
                break
    return {
        "memories": len(rows),
        "by_category": dict(sorted(by_category.items())),
        "by_source": dict(sorted(by_source.items())),
        "duplicates": {"same_content": same_content, "same_source": same_source,
                       "total": same_content + same_source},
        "per_project": per_project,
        "texts_of": texts_of,
    }


# --------------------------------------------------------------------------- recall


def _ask(questions: list[SessionQuestion], home: Path, update: Update) -> list[Asked]:
    from cems_cli.hookhandlers import user_prompt_submit
    from cems_cli.server.client import call_or_start
    from cems_cli.text.tokens import count_tokens

    if call_or_start(str(home), {"op": "ping"}, _SERVER_START_SECONDS) is None:
        raise RuntimeError(f"the search server of {home} did not start within {_SERVER_START_SECONDS:.0f} s "
                           f"(see {home / 'logs' / 'server.log'})")
    # One untimed question: whatever loads on a server's first search is not what a prompt waits for.
    user_prompt_submit.handle(_prompt(_WARM_UP, questions[0] if questions else None))
    asked: list[Asked] = []
    for index, question in enumerate(questions, start=1):
        started = time.perf_counter()
        answer = user_prompt_submit.handle(_prompt(question.question, question))
        elapsed = (time.perf_counter() - started) * 1000
        block = ""
        if answer:
            block = str(answer.get("hookSpecificOutput", {}).get("additionalContext") or "")
        asked.append((question, block, score_block(question, block, count_tokens), elapsed))
        update(index, len(questions))
    return asked


def _prompt(text: str, question: SessionQuestion | None) -> dict[str, Any]:
    return {"session_id": question.session_id if question else "", "transcript_path": "",
            "cwd": question.project_cwd if question else "/", "permission_mode": "default",
            "hook_event_name": "UserPromptSubmit", "prompt": text}


def _stop_search_server(home: Path) -> None:
    from cems_cli.server.daemon import stop_server

    with contextlib.suppress(OSError):
        stop_server(home)


# --------------------------------------------------------------------------- the report


def _result(dataset: SessionSet, questions: list[SessionQuestion], asked: list[Asked], capture: Capture,
            store: dict[str, Any], *, settings: Settings, trigger: str, mode: str, source: str | None,
            limit_questions: int | None, ingest_seconds: float, query_seconds: float,
            shift_days: float) -> dict[str, Any]:
    groups: dict[str, dict[str, Tally]] = {"overall": {}, "by_project": {}, "by_category": {}}
    from cems_cli.project import project_for_dir

    for question, _block, score, elapsed in asked:
        stored = facts_stored(question, store["texts_of"].get(project_for_dir(question.project_cwd), []))
        for group, key in iter_groups(question):
            groups[group].setdefault(key, Tally()).add(question, score, elapsed, stored)
    overall = groups["overall"].get("", Tally()).to_json()
    sessions = len(dataset.transcripts)

    by_project: dict[str, dict[str, Any]] = {}
    for name, tally in sorted(groups["by_project"].items()):
        row = tally.to_json()
        cwd = next(q.project_cwd for q in questions if q.project == name)
        counts = store["per_project"].get(project_for_dir(cwd), {"sessions": 0, "memories": 0})
        row.update({"sessions": counts["sessions"], "memories": counts["memories"],
                    "memories_per_session": round(counts["memories"] / counts["sessions"], 2)
                    if counts["sessions"] else None})
        by_project[name] = row
    latencies = [elapsed for *_rest, elapsed in asked]
    from cems_cli.defaults import RECALL_TIME_BUDGET

    latency = {"p50": round(metrics.percentile(latencies, 50), 2),
               "p95": round(metrics.percentile(latencies, 95), 2),
               "max": round(max(latencies), 2) if latencies else 0.0,
               # The hook gives up after its time budget and injects nothing: count those apart.
               "timeouts": sum(1 for ms in latencies if ms >= RECALL_TIME_BUDGET * 1000 * 0.98)}
    capture_json = {
        "trigger": trigger,
        "sessions": sessions,
        "turns": capture.turns,
        "stop_hooks": capture.stops,
        "tool_events": capture.tool_events,
        "memories": store["memories"],
        "memories_per_session": round(store["memories"] / sessions, 2) if sessions else 0.0,
        "by_category": store["by_category"],
        "by_source": store["by_source"],
        "duplicates": store["duplicates"],
        "observer": capture.observer,
        "worker": capture.worker,
        **({"summaries": capture.summaries} if capture.summaries is not None else {}),
        "errors": capture.errors[:20],
    }
    values = {"fact_recall": overall["fact_recall"], "noise": overall["noise"],
              "duplicates": store["duplicates"]["total"],
              "memories_per_session": capture_json["memories_per_session"], "latency_p50_ms": latency["p50"]}
    targets = {name: {"target": f"{op} {goal:g}", "value": values[name],
                      "met": _met(values[name], op, goal)} for name, (op, goal) in TARGETS.items()}
    return {
        "overall": overall,
        "by_project": by_project,
        "by_category": {name: t.to_json() for name, t in sorted(groups["by_category"].items())},
        "capture": capture_json,
        "latency_ms": latency,
        "targets": targets,
        "config": _config(dataset, settings, questions=questions, trigger=trigger, mode=mode, source=source,
                          limit_questions=limit_questions, ingest_seconds=ingest_seconds,
                          query_seconds=query_seconds, shift_days=shift_days),
    }


def _met(value: float | int | None, op: str, goal: float) -> bool:
    if value is None:
        return False
    return value >= goal if op == ">=" else value <= goal


def _config(dataset: SessionSet, settings: Settings, *, questions: list[SessionQuestion], trigger: str,
            mode: str, source: str | None, limit_questions: int | None, ingest_seconds: float,
            query_seconds: float, shift_days: float) -> dict[str, Any]:
    from cems_cli import __version__, defaults
    from cems_cli.api import RecallOptions

    defaults_recall = RecallOptions()  # the defaults, as the run unset every CEMS_RECALL_* (_RECALL_PREFIX)

    commit, dirty = git_state()
    return {
        "benchmark": dataset.name,
        "source": source,
        "kind": "sessions",
        "trigger": trigger,
        "mode": mode,
        "questions": len(questions),
        "limit_questions": limit_questions,
        "sessions": len(dataset.transcripts),
        "transcript_lines": sum(t.lines for t in dataset.transcripts),
        "projects": len({q.project for q in questions}),
        "recall": {**{name: getattr(defaults_recall, name) for name in RecallOptions.knobs()},
                   "time_budget_s": defaults.RECALL_TIME_BUDGET},
        "time_shift_days": round(shift_days, 2),
        "llm_configured": settings.llm_configured,
        "llm_model": settings.llm_model if settings.llm_configured else None,
        "embedding": {"backend": settings.embedding_backend, "model": settings.resolved_embedding_model,
                      "dim": settings.resolved_embedding_dim},
        "ingest_seconds": round(ingest_seconds, 2),
        "query_seconds": round(query_seconds, 2),
        "git_commit": commit, "git_dirty": dirty, "cems_version": __version__,
        "python": platform.python_version(), "machine": platform.machine(), "cpus": os.cpu_count(),
        "finished_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }


def _detail(question: SessionQuestion, block: str, score: QuestionScore, elapsed: float) -> dict[str, Any]:
    return {
        "qid": question.qid, "project": question.project, "category": question.category,
        "question": question.question,
        "facts": [{"keywords": list(fact), "present": present}
                  for fact, present in zip(question.facts, score.facts_present, strict=True)],
        "tokens": score.tokens, "noise_tokens": score.noise_tokens, "distractor": score.distractor,
        "memories": [asdict(line) for line in score.lines],
        "latency_ms": round(elapsed, 2),
        "block": block,
    }


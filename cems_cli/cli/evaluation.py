"""`cems eval`: retrieval quality on a benchmark (generic folder, LoCoMo or LongMemEval), the
capture-and-recall loop on Claude Code sessions (`--sessions`); the difference of two runs."""

from __future__ import annotations

import json
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import typer

from cems_cli.cli.common import JsonOption, check_range, console, emit_json, fail


def eval_(
    bench: Path = typer.Option(None, "--bench", help="A benchmark folder: corpus/questions/qrels.jsonl."),
    locomo: Path = typer.Option(None, "--locomo", help="LoCoMo's official locomo10.json."),
    longmemeval: Path = typer.Option(None, "--longmemeval", help="LongMemEval's longmemeval_s.json or "
                                     "longmemeval_oracle.json; each question is asked at its question_date."),
    sessions: Path = typer.Option(None, "--sessions", help="A session set: Claude Code transcripts and the "
                                  "questions of a later session (bench/sessions/README.md)."),
    compare: tuple[Path, Path] = typer.Option(None, "--compare", help="Two results files: print B − A."),
    trigger: str = typer.Option(None, "--trigger", help="--sessions only: capture through both (default), "
                                "hooks (Stop/PostToolUse and the worker) or observer."),
    questions: Path = typer.Option(None, "--questions", help="--sessions only: ask these questions (a "
                                   "questions.jsonl of the same format) instead of DIR/questions.jsonl."),
    data: Path = typer.Option(None, "--data", help="--sessions only: the folder of the session sets "
                              "recorded elsewhere (one sub-folder per set); DIR then holds their questions, "
                              "<set>.jsonl (bench/agent-sessions/README.md)."),
    sets: list[str] = typer.Option(None, "--set", metavar="<name>", help="--data only: run this set "
                                   "(repeatable; default every set with a questions file)."),
    swebench_per_repo: int = typer.Option(None, "--swebench-per-repo", help="--data only: the first N "
                                          "runs of each repository of the swebench set (default all)."),
    mode: str = typer.Option(None, "--mode", help="vector, hybrid or auto (default CEMS_SEARCH_MODE)."),
    limit_questions: int = typer.Option(None, "--limit-questions", help="Only the first N scored questions."),
    out: Path = typer.Option(None, "--out", "-o", help="Write the results JSON here."),
    details: Path = typer.Option(None, "--details", help="Write per-question results (JSONL) here."),
    as_of: str = typer.Option(None, "--as-of", help="Ask every question at this moment (YYYY-MM-DD or an "
                              "ISO timestamp; default: the question's own date if the benchmark has one, "
                              "else when the run starts). Time decay counts from it."),
    context: bool = typer.Option(True, "--context/--no-context", help="--locomo, --longmemeval, --bench: "
                                 "index each unit with the one before it (default), or alone, as capture "
                                 "stores what it derives."),
    as_json: bool = JsonOption,
) -> None:
    """Measure retrieval on a benchmark in a throwaway data folder (your memories are never touched)."""
    if sum(1 for given in (bench, locomo, longmemeval, sessions, compare) if given) != 1:
        fail("give exactly one of --bench DIR, --locomo FILE, --longmemeval FILE, --sessions DIR or "
             "--compare A.json B.json")
    if trigger is not None and not sessions:
        fail("--trigger applies to --sessions only")
    if questions is not None and not sessions:
        fail("--questions applies to --sessions only")
    if data is None and (sets or swebench_per_repo is not None):
        fail("--set and --swebench-per-repo apply to --sessions DIR --data FOLDER only")
    if data is not None and (not sessions or questions is not None):
        fail("--data applies to --sessions DIR (the questions of each set), without --questions")
    if not context and (sessions or compare):
        fail("--no-context applies to --locomo, --longmemeval and --bench")
    if compare:
        _compare(compare, as_json)
        return
    check_range("--limit-questions", limit_questions, 1, 1_000_000)
    if sessions and data is not None:
        check_range("--swebench-per-repo", swebench_per_repo, 1, 1_000_000)
        _agent_sessions(sessions, data, sets=sets or None, swebench_per_repo=swebench_per_repo,
                        trigger=trigger, mode=mode, limit_questions=limit_questions, out=out, details=details,
                        as_of=as_of, as_json=as_json)
        return
    if sessions:
        _sessions(sessions, trigger=trigger, mode=mode, limit_questions=limit_questions, out=out,
                  details=details, as_of=as_of, as_json=as_json, questions=questions)
        return
    moment = _moment(as_of) if as_of is not None else None
    from cems_cli.config import get_settings
    from cems_cli.evaluation.datasets import DatasetError, load_bench_dir, load_locomo
    from cems_cli.evaluation.longmemeval import load_longmemeval
    from cems_cli.evaluation.report import render_results
    from cems_cli.evaluation.runner import MODES, run_benchmark

    settings = get_settings()
    mode = (mode or settings.search_mode).strip().lower()
    if mode not in MODES:
        fail(f"unknown mode {mode!r} (expected one of: {', '.join(MODES)})")
    source = bench or locomo or longmemeval
    load = load_bench_dir if bench else load_locomo if locomo else load_longmemeval
    try:
        benchmark = load(source)
    except DatasetError as error:
        fail(str(error))
    if not benchmark.scored_questions():
        fail(f"{source} has no question with evidence (relevant doc ids): nothing to score")
    from cems_cli.cli.progress import progress_bar

    run = run_benchmark(benchmark, settings, mode=mode, limit_questions=limit_questions, source=str(source),
                        progress=lambda label: progress_bar(label, disabled=as_json), as_of=moment,
                        with_context=context)
    result = run.to_json()
    if _saved_or_emitted(result, run.details, out, details, as_json):
        return
    render_results(result, console)
    config = result["config"]
    console.print(f"ingested {config['units']:,} units in {config['ingest_seconds']:.1f} s; "
                  f"{config['questions']:,} questions in {config['query_seconds']:.1f} s"
                  + (f"; results in {out}" if out else ""))


def _saved_or_emitted(result: dict[str, Any], rows: list[dict[str, Any]], out: Path | None,
                      details: Path | None, as_json: bool) -> bool:
    """Write a run's result (--out) and per-question details (--details); with --json print the result and
    say so (True), so the caller renders nothing."""
    if out:
        _write(out, json.dumps(result, indent=2, ensure_ascii=False) + "\n")
    if details:
        _write(details, "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows))
    if as_json:
        emit_json(result)
    return as_json


def _trigger_and_mode(trigger: str | None, mode: str | None, default_mode: str) -> tuple[str, str]:
    """--trigger and --mode of a sessions run, checked (a one-line error names a wrong one)."""
    from cems_cli.evaluation.runner import MODES
    from cems_cli.evaluation.sessions import TRIGGERS

    trigger = (trigger or "both").strip().lower()
    if trigger not in TRIGGERS:
        fail(f"unknown trigger {trigger!r} (expected one of: {', '.join(TRIGGERS)})")
    mode = (mode or default_mode).strip().lower()
    if mode not in MODES:
        fail(f"unknown mode {mode!r} (expected one of: {', '.join(MODES)})")
    return trigger, mode


def _sessions(folder: Path, *, trigger: str | None, mode: str | None, limit_questions: int | None,
              out: Path | None, details: Path | None, as_of: str | None, as_json: bool,
              questions: Path | None = None) -> None:
    """Capture a session set through the real triggers, ask its questions through the prompt hook."""
    if as_of is not None:
        fail("--as-of does not apply to --sessions: the prompt hook asks at the current time")
    from cems_cli.config import get_settings
    from cems_cli.evaluation.datasets import DatasetError
    from cems_cli.evaluation.sessions import run_sessions
    from cems_cli.evaluation.sessions_data import load_session_set
    from cems_cli.evaluation.sessions_report import render_sessions

    settings = get_settings()
    trigger, mode = _trigger_and_mode(trigger, mode, settings.search_mode)
    try:
        dataset = load_session_set(folder, questions)
    except DatasetError as error:
        fail(str(error))
    if not dataset.questions:
        fail(f"{folder} has no question: nothing to ask")
    from cems_cli.cli.progress import progress_bar

    run = run_sessions(dataset, settings, trigger=trigger, mode=mode, limit_questions=limit_questions,
                       source=str(folder), progress=lambda label: progress_bar(label, disabled=as_json))
    if _saved_or_emitted(run.result, run.details, out, details, as_json):
        return
    render_sessions(run.result, console)
    config = run.result["config"]
    console.print(f"captured {config['sessions']} sessions in {config['ingest_seconds']:.1f} s; "
                  f"{config['questions']} questions in {config['query_seconds']:.1f} s"
                  + (f"; results in {out}" if out else ""))


def _agent_sessions(questions: Path, data: Path, *, sets: list[str] | None, swebench_per_repo: int | None,
                    trigger: str | None, mode: str | None, limit_questions: int | None, out: Path | None,
                    details: Path | None, as_of: str | None, as_json: bool) -> None:
    """Session sets recorded by others: converted, captured and asked set by set, BM25 beside."""
    if as_of is not None:
        fail("--as-of does not apply to --sessions: the prompt hook asks at the current time")
    from cems_cli.config import get_settings
    from cems_cli.evaluation.agent_sessions import chosen_sets, run_agent_sessions
    from cems_cli.evaluation.datasets import DatasetError
    from cems_cli.evaluation.sessions_report import render_agent_sessions

    settings = get_settings()
    trigger, mode = _trigger_and_mode(trigger, mode, settings.search_mode)
    if not questions.is_dir():
        fail(f"{questions} is not a folder (the questions of the sets, <set>.jsonl)")
    if not data.is_dir():
        fail(f"{data} is not a folder (the session sets' data)")
    from cems_cli.cli.progress import progress_bar

    try:
        chosen_sets(questions, sets)
        run = run_agent_sessions(data, questions, settings, names=sets, trigger=trigger, mode=mode,
                                 limit_questions=limit_questions, swebench_per_repo=swebench_per_repo,
                                 progress=lambda label: progress_bar(label, disabled=as_json),
                                 announce=None if as_json else console.print)
    except DatasetError as error:
        fail(str(error))
    if _saved_or_emitted(run.result, run.details, out, details, as_json):
        return
    render_agent_sessions(run.result, console)
    if out:
        console.print(f"results in {out}")


def _moment(text: str) -> datetime:
    """--as-of: a date (midnight UTC) or an ISO timestamp (UTC when it names no zone)."""
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        fail(f"--as-of {text!r} is not a date (YYYY-MM-DD) or an ISO timestamp")
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _compare(paths: tuple[Path, Path], as_json: bool) -> None:
    from cems_cli.evaluation.report import compare_rows, render_compare
    from cems_cli.evaluation.sessions_report import (
        compare_session_rows,
        is_sessions_result,
        render_session_compare,
    )

    a, b = (_read_result(p) for p in paths)
    sessions = [is_sessions_result(r) for r in (a, b)]
    if any(sessions) and not all(sessions):
        fail("cannot compare a --sessions result with a retrieval benchmark result")
    rows = compare_session_rows(a, b) if all(sessions) else compare_rows(a, b)
    if as_json:
        emit_json({"a": str(paths[0]), "b": str(paths[1]),
                   "rows": [{**asdict(r), "delta": r.delta} for r in rows]})
        return
    render = render_session_compare if all(sessions) else render_compare
    render(rows, console, (paths[0].name, paths[1].name))


def _read_result(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as error:
        fail(f"cannot read {path}: {error.strerror or error}")
    except json.JSONDecodeError as error:
        fail(f"{path} is not JSON ({error.msg} at line {error.lineno})")
    if not isinstance(data, dict) or not isinstance(data.get("overall"), dict):
        fail(f"{path} is not a `cems eval` results file (no 'overall')")
    return data


def _write(path: Path, text: str) -> None:
    try:
        path.expanduser().parent.mkdir(parents=True, exist_ok=True)
        path.expanduser().write_text(text, encoding="utf-8")
    except OSError as error:
        fail(f"cannot write {path}: {error.strerror or error}")


def register(app: typer.Typer) -> None:
    app.command("eval")(eval_)

"""Tables for a session benchmark result (`cems eval --sessions`)."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from cems_cli.evaluation.report import Difference, render_compare


def _ratio(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f}"


def _percent(value: float | None) -> str:
    return "—" if value is None else f"{value:.0%}"


def render_sessions(result: dict[str, Any], console: Console) -> None:
    config = result.get("config", {})
    capture = result["capture"]
    title = (f"{config.get('benchmark', 'sessions')} — trigger {capture['trigger']}, "
             f"{'LLM' if config.get('llm_configured') else 'offline'}, mode {config.get('mode', '?')}")
    table = Table(title=title)
    # Short headers: the table must fit 80 columns (the legend is in bench/sessions/README.md).
    table.add_column("project", no_wrap=True)
    for column in ("q", "facts", "recall", "noise", "tok/q", "distr", "mem/s", "p50"):
        table.add_column(column, justify="right")
    for name, row in result["by_project"].items():
        table.add_row(name, *_cells(row, row.get("memories_per_session")))
    table.add_row("overall", *_cells(result["overall"], capture["memories_per_session"]), style="bold")
    console.print(table)

    categories = Table(title="by category")
    for column in ("category", "q", "facts", "stored", "recall", "all", "noise", "distr"):
        categories.add_column(column, justify="left" if column == "category" else "right")
    for name, row in [*result["by_category"].items(), ("overall", result["overall"])]:
        categories.add_row(name, str(row["questions"]), str(row["facts"]), _ratio(row.get("stored_recall")),
                           _ratio(row["fact_recall"]), _ratio(row["all_facts"]), _percent(row["noise"]),
                           _percent(row["distractors"]), style="bold" if name == "overall" else None)
    console.print(categories)

    duplicates = capture["duplicates"]
    kinds = ", ".join(f"{n} {c}" for c, n in capture["by_category"].items())
    sources = ", ".join(f"{n} {s or 'unknown'}" for s, n in capture["by_source"].items())
    console.print(f"captured {capture['memories']} memories from {capture['sessions']} sessions "
                  f"({capture['turns']} turns): {capture['memories_per_session']:.2f} per session; {kinds}; "
                  f"stored by {sources}")
    console.print(f"duplicates {duplicates['total']} (same content {duplicates['same_content']}, same "
                  f"source and title {duplicates['same_source']})")
    latency = result["latency_ms"]
    console.print(f"prompt hook latency  p50 {latency['p50']:.1f} ms  p95 {latency['p95']:.1f} ms  "
                  f"max {latency['max']:.1f} ms  timeouts {latency['timeouts']}")
    if capture.get("errors"):
        console.print(f"[red]capture errors ({len(capture['errors'])}):[/red] {capture['errors'][0]}")
    marks = []
    for name, target in result["targets"].items():
        sign = "[green]✓[/green]" if target["met"] else "[red]✗[/red]"
        value = target["value"]
        shown = "—" if value is None else (f"{value:.3f}" if isinstance(value, float) else str(value))
        marks.append(f"{sign} {name} {shown} ({target['target']})")
    console.print("targets: " + "  ".join(marks))


def _cells(row: dict[str, Any], per_session: float | None) -> list[str]:
    return [str(row["questions"]), str(row["facts"]), _ratio(row["fact_recall"]), _percent(row["noise"]),
            f"{row['tokens_per_question']:.0f}", _percent(row["distractors"]),
            "—" if per_session is None else f"{per_session:.2f}", f"{row['latency_p50_ms']:.0f}"]


# --------------------------------------------------------------------------- B − A of two session results

# (metric, higher is better) per question group; the capture and latency rows follow.
_GROUP_METRICS = (("fact_recall", True), ("stored_recall", True), ("all_facts", True), ("noise", False),
                  ("distractors", False), ("tokens_per_question", False))


def is_sessions_result(result: dict[str, Any]) -> bool:
    return result.get("config", {}).get("kind") == "sessions" and isinstance(result.get("capture"), dict)


def compare_session_rows(a: dict[str, Any], b: dict[str, Any]) -> list[Difference]:
    """Overall, each project and category (in either file), capture and latency, as (A, B, B − A)."""
    sections: list[tuple[str, Any, Any]] = [("overall", a.get("overall"), b.get("overall"))]
    for group in ("by_project", "by_category"):
        names = list(dict.fromkeys([*a.get(group, {}), *b.get(group, {})]))
        sections += [(name, a.get(group, {}).get(name), b.get(group, {}).get(name)) for name in names]
    rows = [Difference(name, metric, _number(row_a, metric), _number(row_b, metric), higher)
            for name, row_a, row_b in sections for metric, higher in _GROUP_METRICS]
    capture_a, capture_b = a.get("capture", {}), b.get("capture", {})
    rows.append(Difference("capture", "memories_per_session", _number(capture_a, "memories_per_session"),
                           _number(capture_b, "memories_per_session"), False))
    rows.append(Difference("capture", "duplicates", _number(capture_a.get("duplicates"), "total"),
                           _number(capture_b.get("duplicates"), "total"), False))
    for metric in ("p50", "p95"):
        rows.append(Difference("latency_ms", metric, _number(a.get("latency_ms"), metric),
                               _number(b.get("latency_ms"), metric), False))
    return rows


def _number(row: dict[str, Any] | None, key: str) -> float | None:
    value = (row or {}).get(key)
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def render_session_compare(rows: list[Difference], console: Console, names: tuple[str, str]) -> None:
    render_compare(rows, console, names, _shown, plain=())


def _shown(value: float | None, metric: str) -> str:
    if value is None:
        return "—"
    if metric in ("duplicates",):
        return f"{value:.0f}"
    return f"{value:.1f}" if metric in ("p50", "p95", "tokens_per_question") else f"{value:.3f}"


# --------------------------------------------------------------------------- sets written by others


def render_agent_sessions(result: dict[str, Any], console: Console) -> None:
    """Each set's own tables, then the sets side by side and together (one column each, to fit 80
    columns), with BM25 over the raw turns below the capture's figures."""
    for run in (entry["run"] for entry in result["sets"].values()):
        render_sessions(run, console)
    config = result.get("config", {})
    columns = [*result["sets"].items(), ("together", result["together"])]
    table = Table(title=f"sets written by others — capture, then BM25 top-{config.get('bm25_top_k', 3)} "
                        "over the raw turns")
    table.add_column("metric", no_wrap=True)
    for name, _entry in columns:
        table.add_column(name, justify="right", style="bold" if name == "together" else None)
    rows: list[tuple[str, str, str, Any]] = [
        ("questions", "summary", "questions", str), ("facts", "summary", "facts", str),
        ("fact recall", "summary", "fact_recall", _ratio),
        ("stored recall", "summary", "stored_recall", _ratio),
        ("all facts", "summary", "all_facts", _ratio), ("noise", "summary", "noise", _percent),
        ("lines / question", "summary", "lines_per_question", lambda v: f"{v:.1f}"),
        ("tokens / question", "summary", "tokens_per_question", lambda v: f"{v:.0f}"),
        ("memories / session", "summary", "memories_per_session", lambda v: "—" if v is None else f"{v:.2f}"),
        ("BM25 fact recall", "bm25", "fact_recall", _ratio), ("BM25 all facts", "bm25", "all_facts", _ratio),
        ("BM25 noise", "bm25", "noise", _percent),
        ("BM25 tokens / question", "bm25", "tokens_per_question", lambda v: f"{v:.0f}"),
    ]
    for label, part, key, shown in rows:
        table.add_row(label, *(shown(entry[part].get(key)) for _name, entry in columns),
                      end_section=label == "memories / session")
    console.print(table)
    seconds = ", ".join(f"{name} {entry['seconds']:.0f} s" for name, entry in result["sets"].items())
    console.print(f"took {config.get('seconds', 0):.0f} s ({seconds})"
                  + (f"; swebench: first {config['swebench_per_repo']} runs per repository"
                     if config.get("swebench_per_repo") else ""))

"""Tables for eval results and for the difference between two results files."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rich.console import Console
from rich.table import Table

_HEADERS = {"recall@5": "R@5", "recall@10": "R@10", "ndcg@10": "nDCG@10", "hit@5": "hit@5",
            "recall_all@5": "all@5", "recall_any@5": "any@5", "turn_recall@5": "turn R@5",
            "turn_recall@10": "turn R@10"}
_LATENCY = ("p50", "p95")


def metric_names(*results: dict[str, Any]) -> list[str]:
    """The metrics the results report, in their order (a benchmark's own set: LoCoMo's, LongMemEval's)."""
    return list(dict.fromkeys(key for result in results for key in result.get("overall") or {} if key != "n"))


def render_results(result: dict[str, Any], console: Console) -> None:
    config = result.get("config", {})
    title = (f"{config.get('benchmark', 'benchmark')} — mode {config.get('mode', '?')}, "
             f"top {config.get('limit', 10)}")
    names = metric_names(result)
    table = Table(title=title)
    table.add_column("category")
    table.add_column("n", justify="right")
    for name in names:
        table.add_column(_HEADERS.get(name, name), justify="right")
    for category, row in result["by_category"].items():
        table.add_row(category, str(row["n"]), *(_fmt(row.get(m), m) for m in names))
    overall = result["overall"]
    table.add_row("overall", str(overall["n"]), *(_fmt(overall.get(m), m) for m in names), style="bold",
                  end_section=False)
    console.print(table)
    latency = result["latency_ms"]
    console.print(f"search latency  p50 {latency['p50']:.1f} ms  p95 {latency['p95']:.1f} ms")
    for line in coverage_lines(config):
        console.print(line)


def coverage_lines(config: dict[str, Any]) -> list[str]:
    """What the table's averages leave out: unscored questions, metrics computed for some questions only."""
    lines = []
    unscored = config.get("unscored") or {}
    if unscored.get("n"):
        kinds = ", ".join(f"{n} {c}" for c, n in unscored.get("by_category", {}).items())
        lines.append(f"not scored, no evidence (abstention): {_questions(unscored['n'])} — {kinds}")
    partial: dict[int, list[str]] = {}
    for name, n in (config.get("questions_per_metric") or {}).items():
        partial.setdefault(n, []).append(_HEADERS.get(name, name))
    for n, headers in partial.items():
        lines.append(f"{', '.join(headers)}: over {_questions(n)} (the others mark no evidence turn)")
    return lines


def _questions(n: int) -> str:
    return f"{n} question" if n == 1 else f"{n} questions"


@dataclass(frozen=True)
class Difference:
    section: str  # "overall", a category, or "latency_ms"
    metric: str
    a: float | None
    b: float | None
    higher_is_better: bool = True

    @property
    def delta(self) -> float | None:
        return None if self.a is None or self.b is None else self.b - self.a


def compare_rows(a: dict[str, Any], b: dict[str, Any]) -> list[Difference]:
    """Every metric of overall, each category (in either file) and latency, as (A, B, B − A)."""
    sections = [("overall", a.get("overall"), b.get("overall"))]
    categories = list(dict.fromkeys([*a.get("by_category", {}), *b.get("by_category", {})]))
    sections += [(c, a.get("by_category", {}).get(c), b.get("by_category", {}).get(c)) for c in categories]
    names = metric_names(a, b)
    rows = [Difference(name, metric, _get(row_a, metric), _get(row_b, metric))
            for name, row_a, row_b in sections for metric in ("n", *names)]
    latency_a, latency_b = a.get("latency_ms"), b.get("latency_ms")
    return rows + [Difference("latency_ms", metric, _get(latency_a, metric), _get(latency_b, metric),
                              higher_is_better=False) for metric in _LATENCY]


def _get(row: dict[str, Any] | None, key: str) -> float | None:
    value = (row or {}).get(key)
    return float(value) if isinstance(value, (int, float)) else None


def render_compare(rows: list[Difference], console: Console, names: tuple[str, str],
                   fmt: Callable[[float | None, str], str] | None = None,
                   plain: tuple[str, ...] = ("n",)) -> None:
    """The rows as a table, each value shown by `fmt`; B − A without colour for the `plain` metrics."""
    fmt = fmt or _fmt
    table = Table(title=f"{names[0]} → {names[1]}")
    for column, justify in (("section", "left"), ("metric", "left"), ("A", "right"), ("B", "right"),
                            ("B − A", "right")):
        table.add_column(column, justify=justify)  # type: ignore[arg-type]
    for index, row in enumerate(rows):
        last_of_section = index + 1 == len(rows) or rows[index + 1].section != row.section
        table.add_row(row.section, row.metric, fmt(row.a, row.metric), fmt(row.b, row.metric),
                      signed_delta(row, fmt, plain=row.metric in plain), end_section=last_of_section)
    console.print(table)


def _fmt(value: float | None, metric: str) -> str:
    if value is None:
        return "—"
    return f"{value:.0f}" if metric == "n" else f"{value:.1f}" if metric in _LATENCY else f"{value:.3f}"


def signed_delta(row: Difference, fmt: Callable[[float, str], str], *, plain: bool = False) -> str:
    """B − A with its sign, green when better and red when worse (`plain`: no colour, e.g. a count)."""
    delta = row.delta
    if delta is None:
        return "—"
    text = fmt(delta, row.metric)
    text = text if text.startswith("-") else "+" + text
    if plain or abs(delta) < 5e-4:
        return text
    better = (delta > 0) == row.higher_is_better
    return f"[green]{text}[/green]" if better else f"[red]{text}[/red]"

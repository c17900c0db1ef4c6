"""Tables for eval results and for the difference between two results files."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rich.console import Console
from rich.table import Table

from cems_cli.evaluation.metrics import METRIC_NAMES

_HEADERS = {"recall@5": "R@5", "recall@10": "R@10", "ndcg@10": "nDCG@10", "hit@5": "hit@5",
            "recall_all@5": "all@5"}


def render_results(result: dict[str, Any], console: Console) -> None:
    config = result.get("config", {})
    title = (f"{config.get('benchmark', 'benchmark')} — mode {config.get('mode', '?')}, "
             f"top {config.get('limit', 10)}")
    table = Table(title=title)
    table.add_column("category")
    table.add_column("n", justify="right")
    for name in METRIC_NAMES:
        table.add_column(_HEADERS[name], justify="right")
    for category, row in result["by_category"].items():
        table.add_row(category, str(row["n"]), *(f"{row[m]:.3f}" for m in METRIC_NAMES))
    overall = result["overall"]
    table.add_row("overall", str(overall["n"]), *(f"{overall[m]:.3f}" for m in METRIC_NAMES), style="bold",
                  end_section=False)
    console.print(table)
    latency = result["latency_ms"]
    console.print(f"search latency  p50 {latency['p50']:.1f} ms  p95 {latency['p95']:.1f} ms")


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
    rows: list[Difference] = []
    sections = [("overall", a.get("overall"), b.get("overall"))]
    categories = list(dict.fromkeys([*a.get("by_category", {}), *b.get("by_category", {})]))
    sections += [(c, a.get("by_category", {}).get(c), b.get("by_category", {}).get(c)) for c in categories]
    for name, row_a, row_b in sections:
        for metric in ("n", *METRIC_NAMES):
            rows.append(Difference(name, metric, _get(row_a, metric), _get(row_b, metric)))
    for metric in ("p50", "p95"):
        rows.append(Difference("latency_ms", metric, _get(a.get("latency_ms"), metric),
                               _get(b.get("latency_ms"), metric), higher_is_better=False))
    return rows


def _get(row: dict[str, Any] | None, key: str) -> float | None:
    value = (row or {}).get(key)
    return float(value) if isinstance(value, (int, float)) else None


def render_compare(rows: list[Difference], console: Console, names: tuple[str, str]) -> None:
    table = Table(title=f"{names[0]} → {names[1]}")
    for column, justify in (("section", "left"), ("metric", "left"), ("A", "right"), ("B", "right"),
                            ("B − A", "right")):
        table.add_column(column, justify=justify)  # type: ignore[arg-type]
    for index, row in enumerate(rows):
        last_of_section = index + 1 == len(rows) or rows[index + 1].section != row.section
        table.add_row(row.section, row.metric, _fmt(row.a, row.metric), _fmt(row.b, row.metric), _delta(row),
                      end_section=last_of_section)
    console.print(table)


def _fmt(value: float | None, metric: str) -> str:
    if value is None:
        return "—"
    return f"{value:.0f}" if metric == "n" else f"{value:.3f}" if metric in METRIC_NAMES else f"{value:.1f}"


def _delta(row: Difference) -> str:
    return signed_delta(row, _fmt, plain=row.metric == "n")


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

"""Progressive recall over MCP: the tokens an agent spends to find a fact with the compact index and `get`,
against one full search.

The sessions of a capture benchmark (bench/sessions by default) are captured as `cems eval --sessions`
captures them; then each question is searched once, as the MCP `search` tool searches it from the
question's project, and the answers the tools would send are counted in tokens (cl100k_base, the JSON text
the server writes):

* full:   `search` with full: true, every result's text and metadata (the form before the index);
* oracle: `search` (the index), then `get` of exactly the results whose text holds a fact of the answer
          and whose index title does not show it already (an agent that picks right from the titles: the
          floor of the index's cost);
* top-k:  the index, then `get` of the first k results whatever they hold (an agent that reads the best
          ones without judging titles).

"facts reached" is the share of questions whose fetched texts (or index titles) hold at least one fact
(full search: its results hold one). Questions no result answers cost the index alone in `oracle`.

    python bench/progressive_recall.py [--sessions bench/sessions] [--limit 5] [--limit 10] [--top 1 --top 2]
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cems_cli.engine.service import MemoryService
    from cems_cli.evaluation.sessions_data import SessionQuestion

ROOT = Path(__file__).resolve().parent.parent


def _tokens(payload: dict[str, Any]) -> int:
    """The tool answer as the server sends it: made inert, then the JSON text (cems_cli/mcp/server.py)."""
    from cems_cli.text.inert import model_payload
    from cems_cli.text.tokens import count_tokens

    return count_tokens(json.dumps(model_payload(payload), ensure_ascii=False, default=str))


def _probe(rows: list[dict[str, Any]], limits: list[int], tops: list[int]) -> Any:
    from cems_cli.api import Memory
    from cems_cli.evaluation.sessions_data import fact_present
    from cems_cli.mcp.tools import get_payload, search_payload
    from cems_cli.progressive import entry_of_result

    def probe(service: MemoryService, questions: list[SessionQuestion]) -> None:
        memory = Memory(service.settings, service=service)
        for question in questions:
            for limit in limits:
                results = memory.search(question.question, limit=limit, cwd=question.project_cwd,
                                        track_access=False)
                holds = [any(fact_present(fact, r.content) for fact in question.facts) for r in results]
                # What the index line already says (a short memory's title is its whole text).
                shown = [any(fact_present(fact, entry_of_result(r).title) for fact in question.facts)
                         for r in results]
                full = _tokens(search_payload(question.question, results, full=True))
                index = _tokens(search_payload(question.question, results))

                def fetch(ids: list[str]) -> int:
                    return _tokens(get_payload(memory.get_many(ids))) if ids else 0

                row = {"qid": question.qid, "category": question.category, "limit": limit,
                       "results": len(results), "answerable": any(holds), "full": full, "index": index,
                       "index_reached": any(shown),
                       "oracle": index + fetch([r.id for r, h, seen in zip(results, holds, shown, strict=True)
                                                if h and not seen])}
                for k in tops:
                    row[f"top{k}"] = index + fetch([r.id for r in results[:k]])
                    row[f"top{k}_reached"] = any(holds[:k]) or any(shown)
                rows.append(row)
    return probe


def _report(rows: list[dict[str, Any]], limits: list[int], tops: list[int]) -> None:
    print("tokens per question (mean over questions; median in brackets)")
    for limit in limits:
        for subset, keep in (("all questions", lambda r: True), ("answerable", lambda r: r["answerable"])):
            chosen = [r for r in rows if r["limit"] == limit and keep(r)]
            if not chosen:
                continue
            print(f"\nlimit {limit}, {subset}: {len(chosen)} questions")

            answered = statistics.mean(float(r["answerable"]) for r in chosen)
            _line(chosen, "full search", "full", answered)
            _line(chosen, "index only", "index", statistics.mean(float(r["index_reached"]) for r in chosen))
            _line(chosen, "index + get (right ids)", "oracle", answered)
            for k in tops:
                _line(chosen, f"index + get (top {k})", f"top{k}",
                      statistics.mean(float(r[f"top{k}_reached"]) for r in chosen))


def _line(chosen: list[dict[str, Any]], name: str, key: str, reached: float) -> None:
    values = [r[key] for r in chosen]
    mean, median = statistics.mean(values), statistics.median(values)
    share = mean / statistics.mean([r["full"] for r in chosen])
    print(f"  {name:28} {mean:7.0f}  ({median:5.0f})  {share:6.0%} of full   facts reached {reached:5.0%}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=Path, default=ROOT / "bench" / "sessions")
    parser.add_argument("--limit", type=int, action="append", help="search limit(s) (default 5 and 10)")
    parser.add_argument("--top", type=int, action="append", help="top-k fetches (default 1 and 2)")
    parser.add_argument("--out", type=Path, help="write every question's numbers here (JSONL)")
    args = parser.parse_args()
    limits, tops = args.limit or [5, 10], args.top or [1, 2]

    from cems_cli.config import get_settings
    from cems_cli.evaluation.sessions import run_sessions
    from cems_cli.evaluation.sessions_data import load_session_set

    rows: list[dict[str, Any]] = []
    run_sessions(load_session_set(args.sessions, None), get_settings(), probe=_probe(rows, limits, tops))
    if args.out:
        args.out.write_text("".join(json.dumps(r) + "\n" for r in rows))
    _report(rows, limits, tops)


if __name__ == "__main__":
    main()

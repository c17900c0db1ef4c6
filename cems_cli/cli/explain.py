"""`cems search --explain`: why each result ranks where it does, one line per factor.

The full record (`--explain-full`, or `--json --explain`) has every number of every stage; the compact form
keeps what moved the score: each stage's inputs and its result, and of the adjustments only the factors that
are not 1. A stage this module does not know is shown as its plain numbers, still on one line.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

Line = tuple[str, str]  # (factor, what it did)


def _n(value: Any) -> str:
    """A number as a reader wants it: 3 significant digits, integers as they are."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    return str(value) if isinstance(value, int) else f"{value:.3g}"


def _short(memory_id: Any) -> str:
    return str(memory_id)[:8]


def _ranks(ranks: Mapping[str, Any]) -> str:
    return ", ".join(f"{name} #{rank}" for name, rank in ranks.items())


def _fusion(data: Mapping[str, Any]) -> str:
    ranks = f" (ranks: {_ranks(data['ranks'])})" if data.get("ranks") else ""
    if data.get("method") == "linear":
        return f"lexical {_n(data['lexical'])}, vector {_n(data['vector'])} → {_n(data['score'])}{ranks}"
    return (f"rrf {_n(data.get('rrf_normalised', data.get('rrf')))}, vector {_n(data.get('vector_score'))} "
            f"→ {_n(data.get('score'))}{ranks}")


def _rerank(data: Mapping[str, Any]) -> str:
    if data["rerank"] is None:  # a record without the key is of another shape: shown plain
        return f"not reranked (rank {data['rank']}), {_n(data['score'])}"
    return (f"fused {_n(data['fused'])} × {_n(data['w_fused'])} + reranker {_n(data['rerank'])} × "
            f"{_n(data['w_rerank'])} → {_n(data['score'])}")


def _session(data: Mapping[str, Any]) -> str:
    return (f"position {data.get('position')}, neighbour {_n(data.get('neighbour'))}, session best "
            f"{_n(data.get('session_best'))} → {_n(data.get('score'))}")


# The adjustment factors, in the order they multiply; those equal to 1 changed nothing and are left out.
# The experiments (retrieval/experiments.py) record theirs beside them.
_FACTORS = ("priority", "time_decay", "pinned", "project", "source", "time_cue", "time_answer")


def _adjust(data: Mapping[str, Any]) -> str:
    moved = [f"{name} {_n(data[name])}" for name in _FACTORS
             if isinstance(data.get(name), (int, float)) and abs(float(data[name]) - 1.0) > 1e-9]
    product = " × ".join([_n(data.get("base")), *moved]) if moved else f"{_n(data.get('base'))}, no factor"
    text = f"{product} → {_n(data.get('score'))}"
    superseded = data.get("superseded_by")
    if isinstance(superseded, Mapping):
        replaced = ", ".join(map(str, superseded.get("replaced") or []))
        text += (f"; superseded by {_short(superseded.get('id'))} ({replaced}), weight "
                 f"{_n(superseded.get('weight'))}")
    return text


def _confidence(data: Mapping[str, Any]) -> str:
    built = data.get("built_from") or {}
    value = f"{_n(data.get('confidence'))}"
    if not built:
        return value
    terms = " + ".join(f"{t['weight']:g} × {name} {t['value']:.2f}" for name, t in built["terms"].items())
    formula = str(built["formula"]).replace("logistic(intercept + sum of weight * value)",
                                            f"logistic({built['intercept']:g} + {terms})")
    return (f"{value} = {formula}; cosine {data['cosine']:.2f}, lexical {data['lexical']:.2f}, "
            f"relative {data['relative']:.2f}")


def _assembly(data: Mapping[str, Any]) -> str:
    return f"{data.get('tokens')} tokens, phase {data.get('phase')}"


def _dedup(data: Any) -> str:
    absorbed = data if isinstance(data, list) else []
    return f"absorbed {len(absorbed)}: " + ", ".join(
        f"{_short(d.get('document_id'))} (cosine {_n(d.get('cosine'))})" for d in absorbed)


def _summary(data: Mapping[str, Any]) -> str:
    return f"level {data.get('level')}, {data.get('members')} memories, {data.get('method')}"


def _pipeline(data: Mapping[str, Any]) -> str:
    timings = data.get("timings_ms") or {}
    total = sum(v for v in timings.values() if isinstance(v, (int, float)))
    slowest = sorted(timings.items(), key=lambda item: -item[1])[:3]
    return f"{total:.0f} ms; slowest: " + ", ".join(f"{name} {ms:.0f} ms" for name, ms in slowest)


def _plain(data: Any) -> str:
    """A stage this module does not know: its scalar values, nested ones counted."""
    if not isinstance(data, Mapping):
        return _n(data) if not isinstance(data, list) else f"{len(data)} items"
    parts = []
    for key, value in data.items():
        if isinstance(value, (Mapping, list)):
            parts.append(f"{key} ({len(value)})")
        else:
            parts.append(f"{key} {_n(value)}")
    return ", ".join(parts)


# In the order the pipeline applies them.
_STAGES: dict[str, Callable[[Any], str]] = {
    "summary": _summary,
    "fusion": _fusion,
    "rerank": _rerank,
    "session": _session,
    "adjust": _adjust,
    "dedup": _dedup,
    "confidence": _confidence,
    "assembly": _assembly,
    "pipeline": _pipeline,
}
_HIDDEN = {"chunk_index"}  # shown in the result's header line


def compact(explain: Mapping[str, Any]) -> list[Line]:
    """One (factor, text) per stage that left a record, known stages in pipeline order, then the rest."""
    lines: list[Line] = []
    for name, render in _STAGES.items():
        if name in explain:
            try:
                lines.append((name, render(explain[name])))
            except (KeyError, TypeError, ValueError, AttributeError):  # a record of another shape
                lines.append((name, _plain(explain[name])))
    lines += [(name, _plain(value)) for name, value in explain.items() if name not in _STAGES
              and name not in _HIDDEN]
    return [(name, " ".join(text.split())) for name, text in lines]  # one line each, whatever a value held

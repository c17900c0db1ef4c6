"""Plain data carried between the retrieval stages.

Stdlib only: the package must import without numpy so the hooks stay cheap. An embedding may still be a
numpy array at run time; the stages that do maths on it import numpy themselves.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, NamedTuple

ListKind = Literal["vector", "lexical"]
Route = Literal["vector", "hybrid"]
Intent = Literal["troubleshooting", "how-to", "factual", "recall", "preference"]
Complexity = Literal["simple", "moderate", "complex"]

INTENTS: tuple[Intent, ...] = ("troubleshooting", "how-to", "factual", "recall", "preference")
COMPLEXITIES: tuple[Complexity, ...] = ("simple", "moderate", "complex")
ROUTES: tuple[Route, ...] = ("vector", "hybrid")


# eq=False: equality on a numpy embedding is ambiguous, and two candidates are the same only if they are
# the same object flowing through the pipeline.
@dataclass(kw_only=True, eq=False)
class Candidate:
    """One memory (its best chunk) on its way through the pipeline.

    `score` is the working score each stage reads and rewrites; `explain` collects what every stage did
    (one sub-dict per stage: "fusion", "rerank", "dedup", "adjust", "assembly") for `--explain` output.
    """

    document_id: str
    chunk_id: str
    chunk_index: int
    content: str
    category: str
    created_at: datetime
    last_accessed: datetime | None = None
    priority: float = 1.0
    pinned: bool = False
    source: str | None = None
    source_ref: str | None = None
    tags: list[str] = field(default_factory=list)
    title: str | None = None
    embedding: Any = None  # list[float] or a numpy vector of the chunk; None when not fetched
    vector_score: float = 0.0  # cosine similarity of this chunk to the original query, 0..1
    lexical_score: float = 0.0  # normalised lexical score, 0..1
    score: float = 0.0
    confidence: float = 0.0  # how likely it answers the query, 0..1 (retrieval/confidence.py)
    explain: dict[str, Any] = field(default_factory=dict)


class RankedItem(NamedTuple):
    document_id: str
    score: float  # the retriever's raw score; fusion only uses the position


@dataclass(kw_only=True)
class RankedList:
    """One retriever's answer for one query text, best first.

    `weight=None` means "the default for its role": fusion gives original-query lists the original weight
    (2.0) and expansion/HyDE lists the expansion weight (1.0). A weight of 0 removes the list.
    """

    name: str
    kind: ListKind
    items: list[RankedItem]
    is_original: bool = False
    weight: float | None = None
    # Lexical lists: the score of a match of the whole query (see fusion.linear_fuse); None if unknown.
    full_match: float | None = None


@dataclass(kw_only=True)
class QueryAnalysis:
    """What the understanding stage learned about a query, and the route it chose in auto mode."""

    intent: Intent
    complexity: Complexity
    domains: list[str]
    entities: list[str]
    requires_reasoning: bool
    is_temporal: bool
    is_preference: bool
    is_aggregation: bool
    route: Route
    source: Literal["heuristic", "llm"] = "heuristic"

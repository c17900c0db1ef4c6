"""Token-budgeted assembly of the final results (seed 000 stage 9).

The token counter is passed in so this module needs no tokenizer: the orchestrator hands over
`cems_cli.text.tokens.count_tokens` (or a cheap estimate on a hook's tight budget).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from cems_cli import defaults
from cems_cli.retrieval.types import Candidate

TokenCounter = Callable[[str], int]


class Assemblable(Protocol):
    """What the greedy assembly takes: a Candidate or a SearchResult."""

    @property
    def content(self) -> str: ...

    @property
    def explain(self) -> dict[str, Any]: ...


SESSION_TAG_PREFIX = "session:"


@dataclass
class Assembly:
    selected: list[Any] = field(default_factory=list)  # candidates (or search results), in order
    tokens: int = 0


def session_from_tags(cand: Candidate) -> str | None:
    """The `session:<id>` tag of a candidate, if it has one."""
    return next((t for t in cand.tags if t.startswith(SESSION_TAG_PREFIX)), None)


def assemble_greedy(
    candidates: Sequence[Assemblable],
    count_tokens: TokenCounter,
    budget: int = defaults.CONTEXT_BUDGET,
    max_results: int | None = None,
    text: Callable[[Any], str] = lambda cand: cand.content,
) -> Assembly:
    """Take candidates in the given (score) order while they fit; one too big is skipped, not the end.
    `text`: what of each is counted (search results, summaries first, count their snippets)."""
    result = Assembly()
    for cand in candidates:
        if max_results is not None and len(result.selected) >= max_results:
            break
        tokens = count_tokens(text(cand))
        if result.tokens + tokens <= budget:
            result.selected.append(cand)
            result.tokens += tokens
            cand.explain["assembly"] = {"tokens": tokens, "phase": "greedy"}
    return result

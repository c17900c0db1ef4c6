"""Pluggable backends: embedders and rerankers are found through package entry points, the built-in ones
included (pyproject.toml registers them), so a package of your own adds one without editing CEMS:

    [project.entry-points."cems.embedders"]
    mymodel = "my_package.cems_plugin:make_embedder"      # make_embedder(settings) -> Embedder

    [project.entry-points."cems.rerankers"]
    myranker = "my_package.cems_plugin:make_reranker"     # make_reranker(settings, llm) -> Reranker

then `CEMS_EMBEDDING_BACKEND=mymodel` or `CEMS_RERANK_BACKEND=myranker`. An embedder has `model`, `dim` and
`embed(texts) -> float32 array of unit rows` (cems_cli.embedding.base.Embedder); a reranker has
`score(query, items) -> {id: relevance in 0..1}` for `RerankItem`s, or None when it cannot tell.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint

EMBEDDERS = "cems.embedders"
RERANKERS = "cems.rerankers"
DISABLED = "disabled"  # CEMS_RERANK_BACKEND=disabled: no reranking, not a plugin


class PluginError(RuntimeError):
    """A backend that is not installed, or that failed to load; the message is one line for the user."""


class RerankItem(NamedTuple):
    """A candidate as a reranker sees it: its memory id, the passage that best matches the query, and the
    cosine of its stored vector to the query (free: the search computed it)."""

    id: str
    text: str
    cosine: float


class Reranker(Protocol):
    def score(self, query: str, items: Sequence[RerankItem]) -> dict[str, float] | None:
        """Relevance in 0..1 of each item to the query, by id; None when it cannot tell."""
        ...


def available(group: str) -> dict[str, EntryPoint]:
    """The backends installed for a group, by name (importlib.metadata: ~10-50 ms, so only when needed)."""
    from importlib.metadata import entry_points

    return {entry.name: entry for entry in entry_points(group=group)}


@functools.cache  # the warm search server reranks every search: the entry points are looked up once
def load(group: str, name: str) -> Callable[..., Any]:
    """The factory registered as `name` in `group`."""
    found = available(group)
    entry = found.get(name)
    kind = "embedding" if group == EMBEDDERS else "rerank"
    if entry is None:
        names = ", ".join(sorted(found)) or "none (is CEMS installed? `pip install -e .`)"
        raise PluginError(f"unknown {kind} backend {name!r} (installed: {names})")
    try:
        factory = entry.load()
    except Exception as error:  # a third-party package: any import failure is its own
        raise PluginError(f"the {kind} backend {name!r} ({entry.value}) failed to load: {error}") from None
    if not callable(factory):
        raise PluginError(f"the {kind} backend {name!r} ({entry.value}) is not callable")
    return factory

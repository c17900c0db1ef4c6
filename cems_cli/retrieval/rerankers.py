"""The built-in rerank backends, registered as `cems.rerankers` entry points like any plugin's."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cems_cli.config import Settings
    from cems_cli.llm import LLMClient
    from cems_cli.plugins import RerankItem


class _Embedding:
    """The cosine of the query to each candidate's stored vector: no model call at all."""

    def score(self, query: str, items: Sequence[RerankItem]) -> dict[str, float]:
        return {item.id: min(1.0, max(0.0, item.cosine)) for item in items}


class _LLM:
    """A listwise judgement by the configured OpenAI-compatible model (seed 001 phase 4)."""

    def __init__(self, llm: LLMClient | None) -> None:
        self.llm = llm

    def score(self, query: str, items: Sequence[RerankItem]) -> dict[str, float] | None:
        from cems_cli.retrieval import llm_stages

        if self.llm is None:
            return None
        return llm_stages.llm_rerank(self.llm, query, [(item.id, item.text) for item in items])


class _Ollama:
    """A cross-encoder style yes/no reranker served by Ollama (CEMS_OLLAMA_URL, CEMS_RERANKER_MODEL)."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    def score(self, query: str, items: Sequence[RerankItem]) -> dict[str, float] | None:
        from cems_cli.retrieval import llm_stages

        s = self.settings
        return llm_stages.ollama_rerank(
            s.ollama_url, s.reranker_model, query, [(item.id, item.text) for item in items], s.llm_timeout
        )


def embedding_reranker(settings: Settings, llm: LLMClient | None) -> _Embedding:
    return _Embedding()


def llm_reranker(settings: Settings, llm: LLMClient | None) -> _LLM:
    return _LLM(llm)


def ollama_reranker(settings: Settings, llm: LLMClient | None) -> _Ollama:
    return _Ollama(settings)

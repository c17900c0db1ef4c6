"""Embedders: the local ONNX MiniLM (default, offline) and any OpenAI-compatible endpoint."""

from __future__ import annotations

from cems_cli.embedding.base import Embedder, EmbeddingError

__all__ = ["Embedder", "EmbeddingError", "get_embedder"]


def get_embedder(settings) -> Embedder:
    """The embedder the settings ask for (imports its backend only now: both are heavy)."""
    if settings.embedding_backend == "openai":
        from cems_cli.embedding.openai_backend import OpenAIEmbedder

        return OpenAIEmbedder(
            base_url=settings.llm_base_url,
            api_key=settings.llm_api_key,
            model=settings.resolved_embedding_model,
            dim=settings.resolved_embedding_dim,
            batch_size=settings.embedding_batch_size,
            timeout=max(settings.llm_timeout, 10.0),
        )
    from cems_cli.embedding.local import LocalEmbedder

    return LocalEmbedder.shared(batch_size=settings.embedding_batch_size)

"""Embedders: the local ONNX MiniLM (default, offline) and any OpenAI-compatible endpoint."""

from __future__ import annotations

from cems_cli.embedding.base import Embedder, EmbeddingError

__all__ = ["Embedder", "EmbeddingError", "get_embedder"]


def get_embedder(settings) -> Embedder:
    """The embedder the settings ask for, found by name among the `cems.embedders` entry points (the
    built-in `local` and `openai` included: see cems_cli/plugins.py). Its module is imported only now."""
    from cems_cli.plugins import EMBEDDERS, PluginError, load

    try:
        return load(EMBEDDERS, settings.embedding_backend)(settings)
    except PluginError as error:
        raise EmbeddingError(str(error)) from None


def local_embedder(settings) -> Embedder:
    """The built-in `local` backend: MiniLM int8 on ONNX Runtime, shipped in a pip package, offline."""
    from cems_cli.embedding.local import LocalEmbedder

    return LocalEmbedder.shared(batch_size=settings.embedding_batch_size)


def openai_embedder(settings) -> Embedder:
    """The built-in `openai` backend: any OpenAI-compatible /embeddings endpoint (CEMS_LLM_BASE_URL)."""
    from cems_cli.embedding.openai_backend import OpenAIEmbedder

    return OpenAIEmbedder(
        base_url=settings.llm_base_url,
        api_key=settings.llm_api_key,
        model=settings.resolved_embedding_model,
        dim=settings.resolved_embedding_dim,
        batch_size=settings.embedding_batch_size,
        timeout=max(settings.llm_timeout, 10.0),
    )


def hashing_embedder(settings) -> Embedder:
    """The built-in `hashing` backend: words and character trigrams hashed into a vector, no model. Instant
    and deterministic, poor at meaning: for the test suite and for trying CEMS where no model loads."""
    from cems_cli.embedding.hashing import HashingEmbedder

    return HashingEmbedder(model=settings.resolved_embedding_model, dim=settings.resolved_embedding_dim)

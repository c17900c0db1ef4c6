"""Any OpenAI-compatible embeddings endpoint (OpenAI, OpenRouter, Ollama, vLLM…)."""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np

from cems_cli.embedding.base import EmbeddingError

_RETRIES = 3


class OpenAIEmbedder:
    def __init__(
        self,
        *,
        base_url: str | None,
        api_key: str | None,
        model: str,
        dim: int,
        batch_size: int = 64,
        timeout: float = 30.0,
    ) -> None:
        if not base_url and not api_key:
            raise EmbeddingError("CEMS_EMBEDDING_BACKEND=openai needs CEMS_LLM_BASE_URL or CEMS_LLM_API_KEY")
        from openai import OpenAI

        self.model = model
        self.dim = dim
        self.batch_size = batch_size
        # Retries are ours (with backoff) so a timeout is bounded and every failure is reported once.
        self._client = OpenAI(
            base_url=base_url, api_key=api_key or "not-needed", timeout=timeout, max_retries=0
        )

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for start in range(0, len(texts), self.batch_size):
            batch = list(texts[start : start + self.batch_size])
            out[start : start + len(batch)] = self._embed_batch(batch)
        return out

    def _embed_batch(self, batch: list[str]) -> np.ndarray:
        import openai

        last_error: Exception | None = None
        for attempt in range(_RETRIES):
            try:
                response = self._client.embeddings.create(model=self.model, input=batch)
                data = sorted(response.data, key=lambda d: d.index)
                vectors = np.asarray([d.embedding for d in data], dtype=np.float32)
                if vectors.shape != (len(batch), self.dim):
                    raise EmbeddingError(
                        f"embedding endpoint returned shape {vectors.shape}, "
                        f"expected ({len(batch)}, {self.dim}); "
                        "set CEMS_EMBEDDING_DIM to the model's dimension"
                    )
                norms = np.linalg.norm(vectors, axis=1, keepdims=True)
                return vectors / np.clip(norms, 1e-12, None)
            except (
                openai.APITimeoutError,
                openai.APIConnectionError,
                openai.RateLimitError,
                openai.InternalServerError,
            ) as error:
                last_error = error
                time.sleep(0.5 * 2**attempt)
            except openai.APIError as error:
                raise EmbeddingError(f"embedding endpoint error: {error}") from None
        raise EmbeddingError(f"embedding endpoint failed after {_RETRIES} attempts: {last_error}")

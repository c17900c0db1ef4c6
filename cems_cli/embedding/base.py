"""The Embedder protocol every backend implements."""

from __future__ import annotations

from collections.abc import Sequence, Sized
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    import numpy as np


class EmbeddingError(RuntimeError):
    """The embedding backend failed; the message is one line for the user."""


class Embedder(Protocol):
    model: str
    dim: int

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """L2-normalised float32 vectors, one row per text, in input order."""
        ...


def batches_by_length(items: Sequence[Sized], batch_size: int) -> list[list[int]]:
    """Indices grouped into batches of similar length, so padding to the longest wastes little."""
    order = sorted(range(len(items)), key=lambda i: len(items[i]))
    return [order[i : i + batch_size] for i in range(0, len(order), batch_size)]

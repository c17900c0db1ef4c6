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


def batches_by_length(
    items: Sequence[Sized], batch_size: int, max_cells: int | None = None
) -> list[list[int]]:
    """Indices grouped into batches of similar length, so padding to the longest wastes little.

    With `max_cells`, a batch also stops growing once rows × its longest item would exceed it: a CPU model
    runs fastest while a batch's activations stay in cache, so long texts go in smaller batches.
    """
    order = sorted(range(len(items)), key=lambda i: len(items[i]))
    batches: list[list[int]] = []
    current: list[int] = []
    for index in order:
        width = len(items[index])  # the longest so far: the order is ascending
        if current and (
            len(current) >= batch_size or (max_cells is not None and (len(current) + 1) * width > max_cells)
        ):
            batches.append(current)
            current = []
        current.append(index)
    if current:
        batches.append(current)
    return batches

"""A deterministic embedder with no model: words and their character trigrams hashed into the vector.

For the test suite (and for trying CEMS where no model can be loaded): it embeds instantly, gives the same
vector for the same text in every process, and gives texts that share words or word pieces similar vectors,
so storing, deduplicating and searching behave as with a model. It judges meaning poorly: how well CEMS
recalls is measured with the real model (`local`), never with this one.

Hand-written: feature hashing is a few lines of numpy; a library for it (scikit-learn's HashingVectorizer)
would bring scipy and scikit-learn for the same arithmetic.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Sequence

import numpy as np

MODEL_NAME = "hashing"  # CEMS_EMBEDDING_BACKEND=hashing: the backend names its model (cems_cli/config.py)
DIM = 384  # the local model's dimension: a store made for either has the same shape
_WORD = re.compile(r"\w+")
_TRIGRAM_WEIGHT = 0.5  # a shared word counts more than a shared piece of one


class HashingEmbedder:
    def __init__(self, model: str = MODEL_NAME, dim: int = DIM) -> None:
        self.model = model
        self.dim = dim

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for feature, weight in _features(text):
                # crc32, not hash(): Python salts str hashes per process, and vectors are stored.
                code = zlib.crc32(feature.encode("utf-8", "surrogatepass"))
                # The sign from another bit of the hash: collisions cancel out on average.
                out[row, code % self.dim] += weight if code & 0x80000000 else -weight
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.clip(norms, 1e-12, None)


def _features(text: str) -> list[tuple[str, float]]:
    features: list[tuple[str, float]] = []
    for word in _WORD.findall(text.lower()):
        features.append(("w:" + word, 1.0))
        padded = f"<{word}>"
        features.extend(("t:" + padded[i : i + 3], _TRIGRAM_WEIGHT) for i in range(len(padded) - 2))
    # A text with no word (punctuation, emoji) still gets a unit vector: a zero one has no cosine.
    return features or [("s:" + text, 1.0)]

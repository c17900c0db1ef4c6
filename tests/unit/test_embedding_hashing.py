"""The built-in `hashing` embedder: no model, the same vector for the same text in every process, texts that
share words closer than texts that do not; selected by name like the other backends."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from cems_cli import plugins
from cems_cli.config import load_settings
from cems_cli.embedding import get_embedder
from cems_cli.embedding.hashing import HashingEmbedder


def test_vectors_are_unit_rows_of_the_configured_dimension():
    vectors = HashingEmbedder(dim=384).embed(["Run the tests with make test", "", "?!", "ünïcödé wörds"])
    assert vectors.shape == (4, 384) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_shared_words_and_word_pieces_make_texts_similar():
    [query, near, piece, far] = HashingEmbedder().embed(
        [
            "the deploy script needs DOCKER_BUILDKIT=1",
            "set DOCKER_BUILDKIT=1 before the deploy script",
            "deployment scripts",
            "the user prefers tabs over spaces",
        ]
    )
    assert float(query @ near) > float(query @ piece) > float(query @ far)


def test_the_same_text_gets_the_same_vector_in_another_process():
    """Stored vectors are compared with vectors of later processes: no per-process hash salt."""
    text = "Postgres listens on port 5433 in CI"
    code = (
        "from cems_cli.embedding.hashing import HashingEmbedder; import sys; "
        f"sys.stdout.buffer.write(HashingEmbedder().embed([{text!r}]).tobytes())"
    )
    other = subprocess.run([sys.executable, "-c", code], capture_output=True, check=True, timeout=60)
    assert np.array_equal(np.frombuffer(other.stdout, dtype=np.float32), HashingEmbedder().embed([text])[0])


def test_it_is_an_entry_point_chosen_by_name_with_its_own_model_name(monkeypatch: pytest.MonkeyPatch):
    assert "hashing" in plugins.available(plugins.EMBEDDERS)
    monkeypatch.setenv("CEMS_EMBEDDING_BACKEND", "hashing")
    settings = load_settings()
    embedder = get_embedder(settings)
    assert isinstance(embedder, HashingEmbedder)
    # The store records this name and dimension: a store made with it refuses the local model's vectors.
    assert (embedder.model, embedder.dim) == ("hashing", 384)
    assert (settings.resolved_embedding_model, settings.resolved_embedding_dim) == ("hashing", 384)
    monkeypatch.setenv("CEMS_EMBEDDING_DIM", "64")
    assert get_embedder(load_settings()).embed(["a b"]).shape == (1, 64)

"""Backends as plugins: a package that registers `cems.embedders` / `cems.rerankers` entry points is used
by name, with no change to CEMS; the built-in backends are found the same way."""

from __future__ import annotations

import sys
import textwrap

import pytest

import cems
from cems_cli import plugins

PLUGIN = '''
import hashlib

import numpy as np


class HashEmbedder:
    """Deterministic bag-of-words vectors: enough to prove CEMS embeds with the plugin."""

    model = "hash-384"
    dim = 384
    calls = 0

    def embed(self, texts):
        HashEmbedder.calls += 1
        rows = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in text.lower().split():
                rows[row, int(hashlib.sha256(word.encode()).hexdigest(), 16) % self.dim] += 1.0
        norms = np.linalg.norm(rows, axis=1, keepdims=True)
        return rows / np.where(norms == 0, 1, norms)


class BananaReranker:
    """Puts whatever mentions bananas first, whatever the query."""

    def __init__(self, settings, llm):
        self.settings = settings

    def score(self, query, items):
        return {item.id: 1.0 if "banana" in item.text.lower() else 0.0 for item in items}


def make_embedder(settings):
    return HashEmbedder()
'''

ENTRY_POINTS = """
[cems.embedders]
hashy = cems_test_plugin:make_embedder

[cems.rerankers]
bananas = cems_test_plugin:BananaReranker
"""


@pytest.fixture
def installed_plugin(tmp_path, monkeypatch):
    """A package with its distribution metadata on sys.path, as `pip install` would leave it."""
    (tmp_path / "cems_test_plugin.py").write_text(textwrap.dedent(PLUGIN), encoding="utf-8")
    dist = tmp_path / "cems_test_plugin-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: cems-test-plugin\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(ENTRY_POINTS)
    monkeypatch.syspath_prepend(str(tmp_path))
    plugins.load.cache_clear()
    yield
    plugins.load.cache_clear()
    sys.modules.pop("cems_test_plugin", None)


def test_the_built_in_backends_are_entry_points_too():
    assert {"local", "openai"} <= set(plugins.available(plugins.EMBEDDERS))
    assert {"llm", "ollama", "embedding"} <= set(plugins.available(plugins.RERANKERS))


def test_an_installed_embedder_is_used_by_name(installed_plugin, env):
    from cems_cli.config import load_settings
    from cems_cli.embedding import get_embedder

    embedder = get_embedder(load_settings().model_copy(update={"embedding_backend": "hashy"}))
    assert (type(embedder).__name__, embedder.model, embedder.dim) == ("HashEmbedder", "hash-384", 384)
    assert embedder.embed(["a b", "c"]).shape == (2, 384)


def test_an_unknown_backend_is_a_one_line_error_naming_the_installed_ones(installed_plugin, env):
    from cems_cli.config import load_settings
    from cems_cli.embedding import EmbeddingError, get_embedder

    installed = r"\(installed: hashing, hashy, local"
    with pytest.raises(EmbeddingError, match=r"unknown embedding backend 'nope' " + installed):
        get_embedder(load_settings().model_copy(update={"embedding_backend": "nope"}))


def test_a_store_never_mixes_the_vectors_of_two_embedders(cli):
    """The suite's stores embed with `hashing`; one made so refuses the local model, before it loads."""
    assert cli("remember", "The staging database is reset every night.").code == 0
    result = cli("search", "staging database", extra_env={"CEMS_EMBEDDING_BACKEND": "local"})
    assert result.code != 0
    assert "stored embeddings are hashing (384 dims)" in result.stderr
    assert "the configured model is all-MiniLM-L6-v2" in result.stderr
    assert "cems reindex" in result.stderr


def test_an_installed_reranker_reorders_a_search_and_shows_in_explain(installed_plugin, env):
    from cems_cli.config import load_settings

    settings = load_settings().model_copy(update={"rerank_backend": "bananas"})
    with cems.open(settings=settings) as memory:
        memory.remember("Apples keep for weeks in the fruit drawer.")
        memory.remember("Bananas brown fast next to other fruit.")
        [first, *_] = memory.search("how long does fruit keep", explain=True)
        assert first.content.startswith("Bananas")
        assert first.explain["pipeline"]["stages"]["rerank"] == {"backend": "bananas", "scored": 2}


def test_a_broken_reranker_never_fails_the_search(installed_plugin, env):
    from cems_cli.config import load_settings

    settings = load_settings().model_copy(update={"rerank_backend": "missing"})
    with cems.open(settings=settings) as memory:
        memory.remember("Apples keep for weeks in the fruit drawer.")
        [first] = memory.search("fruit drawer", explain=True)
        rerank = first.explain["pipeline"]["stages"]["rerank"]
        assert rerank["backend"] == "missing" and "unknown rerank backend 'missing'" in rerank["error"]

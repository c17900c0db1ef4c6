"""Pytest fixtures for the fake model servers.

Enable everywhere from ``tests/conftest.py``:

    from tests.support.fixtures import fake_ollama, fake_openai  # noqa: F401

Each test gets a fresh server on its own port, stopped afterwards (hanging handlers included).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.fake_ollama import FakeOllama
from tests.support.fake_openai import FakeOpenAI


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        yield server
    assert not server.errors, "the fake OpenAI server crashed:\n" + "\n".join(server.errors)


@pytest.fixture
def fake_ollama() -> Iterator[FakeOllama]:
    with FakeOllama() as server:
        yield server
    assert not server.errors, "the fake Ollama server crashed:\n" + "\n".join(server.errors)

"""LLMClient over real HTTP, through the real openai SDK, against the local fake server."""
# ruff: noqa: F811 - test parameters are named after the fixtures imported below

from __future__ import annotations

import json
import logging
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

# Imported up front so the one-off ~0.7 s import isn't charged to the first timed call below.
import openai  # noqa: F401
import pytest

from cems_cli import llm
from cems_cli.llm import LLMClient, client_from_settings, parse_json_object, run_bounded
from tests.support.fake_openai import FakeOpenAI, Reply
from tests.support.fixtures import fake_openai  # noqa: F401 - pytest fixture

TIMEOUT = 0.3
SLACK = 0.5  # the contract: a dead endpoint costs at most the timeout plus this
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def fresh_degradation_log(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(llm, "_degraded", set())


def make_client(fake: FakeOpenAI, timeout: float = TIMEOUT) -> LLMClient:
    return LLMClient(fake.base_url, "sk-test", "fake-model", timeout)


# --------------------------------------------------------------------------- parsing


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"a": 1}', {"a": 1}),
        ('```json\n{"a": [1, 2]}\n```', {"a": [1, 2]}),
        ('```\n{"a": 1}\n```', {"a": 1}),
        ('Here you go: {"a": {"b": "}"}} — hope that helps {"c": 2}', {"a": {"b": "}"}}),
        ('<think>maybe {"wrong": 1}</think>\n{"right": 2}', {"right": 2}),
        ('```json\n{"a": 1}', {"a": 1}),  # fence never closed (answer cut short)
        ("[1, 2, 3]", None),  # valid JSON, not an object
        ('"just a string"', None),
        ("no braces at all", None),
        ("{not json} {also: not}", None),
        ("", None),
        (None, None),
    ],
)
def test_parse_json_object(text: object, expected: dict | None) -> None:
    assert parse_json_object(text) == expected


# --------------------------------------------------------------------------- happy path


def test_chat_json_sends_prompt_and_parses_answer(fake_openai: FakeOpenAI) -> None:
    fake_openai.queue('```json\n{"intent": "recall", "n": 3}\n```')
    client = make_client(fake_openai)

    answer = client.chat_json("SYSTEM PROMPT json", "user text", max_tokens=123, stage="t")

    assert answer == {"intent": "recall", "n": 3}
    [request] = fake_openai.chat_requests
    assert request.body["model"] == "fake-model"
    assert request.body["messages"] == [
        {"role": "system", "content": "SYSTEM PROMPT json"},
        {"role": "user", "content": "user text"},
    ]
    assert request.body["max_tokens"] == 123
    assert request.body["response_format"] == {"type": "json_object"}
    assert request.body["temperature"] == 0
    assert request.headers["authorization"] == "Bearer sk-test"


def test_keyless_endpoint_gets_placeholder_not_env_key(
    fake_openai: FakeOpenAI,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Settings are the only source of configuration; an ambient OPENAI_API_KEY must not leak out.
    monkeypatch.setenv("OPENAI_API_KEY", "sk-ambient-secret")
    fake_openai.queue('{"ok": true}')
    client = LLMClient(fake_openai.base_url, None, "local-model", TIMEOUT)

    assert client.chat_json("s json", "u") == {"ok": True}
    assert fake_openai.chat_requests[0].headers["authorization"] == f"Bearer {llm.NO_KEY_PLACEHOLDER}"


def test_concurrent_calls_share_one_client(fake_openai: FakeOpenAI) -> None:
    fake_openai.responder = lambda body: json.dumps({"echo": body["messages"][1]["content"]})
    client = make_client(fake_openai, timeout=2.0)
    results: dict[int, dict | None] = {}

    def call(i: int) -> None:
        results[i] = client.chat_json("s json", f"q{i}")

    threads = [threading.Thread(target=call, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    assert results == {i: {"echo": f"q{i}"} for i in range(6)}


# --------------------------------------------------------------------------- failures degrade


def timed(fn, *args, **kwargs):  # type: ignore[no-untyped-def]
    start = time.monotonic()
    result = fn(*args, **kwargs)
    return result, time.monotonic() - start


def test_hang_returns_none_within_timeout(fake_openai: FakeOpenAI) -> None:
    fake_openai.mode = "hang"
    client = make_client(fake_openai)

    answer, elapsed = timed(client.chat_json, "s json", "u", stage="t")

    assert answer is None
    assert elapsed < TIMEOUT + SLACK
    assert elapsed >= TIMEOUT * 0.9  # it did wait for the endpoint rather than failing early
    assert len(fake_openai.chat_requests) == 1  # max_retries=0: a hang costs one timeout, no retry


def test_trickling_answer_is_cut_at_the_deadline(fake_openai: FakeOpenAI) -> None:
    # Bytes keep arriving, so no per-read socket timeout ever fires: only the wall clock stops this.
    fake_openai.mode = "trickle"
    client = make_client(fake_openai)

    answer, elapsed = timed(client.chat_json, "s json", "u", stage="t")

    assert answer is None
    assert elapsed < TIMEOUT + SLACK


def test_unreachable_endpoint_returns_none_quickly() -> None:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    client = LLMClient(f"http://127.0.0.1:{port}/v1", "k", "m", TIMEOUT)

    answer, elapsed = timed(client.chat_json, "s json", "u")

    assert answer is None
    assert elapsed < TIMEOUT + SLACK


@pytest.mark.parametrize("mode", ["error", "invalid_json", "garbage"])
def test_bad_answers_return_none_without_retry(fake_openai: FakeOpenAI, mode: str) -> None:
    fake_openai.mode = mode  # type: ignore[assignment]
    client = make_client(fake_openai)

    answer, elapsed = timed(client.chat_json, "s json", "u", stage="t")

    assert answer is None
    assert elapsed < TIMEOUT + SLACK
    assert len(fake_openai.chat_requests) == 1


def test_answer_that_is_a_json_list_is_rejected(fake_openai: FakeOpenAI) -> None:
    fake_openai.queue("[1, 2]")
    assert make_client(fake_openai).chat_json("s json", "u") is None


def test_unrelated_400_is_not_retried(fake_openai: FakeOpenAI) -> None:
    fake_openai.queue(Reply.error(400, "model 'fake-model' does not exist"))
    assert make_client(fake_openai).chat_json("s json", "u") is None
    assert len(fake_openai.chat_requests) == 1


# --------------------------------------------------------------------------- adapting to the endpoint


def test_rejected_response_format_is_dropped_and_remembered(fake_openai: FakeOpenAI) -> None:
    fake_openai.queue(Reply.error(400, "response_format json_object is not supported by this model"))
    fake_openai.queue('{"first": 1}', '{"second": 2}')
    client = make_client(fake_openai)

    assert client.chat_json("s json", "u") == {"first": 1}
    assert client.chat_json("s json", "u") == {"second": 2}

    bodies = [r.body for r in fake_openai.chat_requests]
    assert len(bodies) == 3
    assert "response_format" in bodies[0]
    assert "response_format" not in bodies[1] and "response_format" not in bodies[2]


def test_rejected_max_tokens_switches_to_max_completion_tokens(fake_openai: FakeOpenAI) -> None:
    fake_openai.queue(
        Reply.error(400, "Unsupported parameter: 'max_tokens'. Use 'max_completion_tokens' instead."),
        '{"ok": 1}',
    )
    client = make_client(fake_openai)

    assert client.chat_json("s json", "u", max_tokens=77) == {"ok": 1}
    retry = fake_openai.chat_requests[1].body
    assert retry["max_completion_tokens"] == 77 and "max_tokens" not in retry


# --------------------------------------------------------------------------- logging


def test_degradation_logged_once_per_stage_at_debug(
    fake_openai: FakeOpenAI,
    caplog: pytest.LogCaptureFixture,
) -> None:
    fake_openai.mode = "error"
    client = make_client(fake_openai)
    caplog.set_level(logging.DEBUG, logger="cems.llm")

    for _ in range(3):
        client.chat_json("s json", "u", stage="synthesis")
    client.chat_json("s json", "u", stage="hyde")

    records = [r for r in caplog.records if r.name == "cems.llm"]
    assert [r.levelno for r in records] == [logging.DEBUG, logging.DEBUG]
    assert "synthesis" in records[0].getMessage() and "500" in records[0].getMessage()
    assert "hyde" in records[1].getMessage()


# --------------------------------------------------------------------------- configuration


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("network used although no LLM is configured")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


def test_unconfigured_means_no_client(no_network: None) -> None:
    assert client_from_settings(None, None, "gpt-4o-mini", 2.0) is None
    assert client_from_settings("", "  ", "gpt-4o-mini", 2.0) is None
    assert client_from_settings("http://localhost:11434/v1", None, "", 2.0) is None  # no model name


def test_unavailable_client_answers_none_without_network(no_network: None) -> None:
    client = LLMClient(None, None, "m")
    assert not client.available
    assert client.chat_json("s json", "u") is None


def test_factory_builds_configured_clients() -> None:
    local = client_from_settings("http://localhost:11434/v1/", None, "qwen3", None)
    assert local is not None and local.available
    assert local.timeout == llm.DEFAULT_TIMEOUT
    keyed = client_from_settings(None, "sk-secret", "gpt-4o-mini", 1.5)
    assert keyed is not None and keyed.available and keyed.timeout == 1.5
    assert "sk-secret" not in repr(keyed)


def test_openai_is_imported_only_when_needed() -> None:
    code = (
        "import sys, cems_cli.llm, cems_cli.retrieval.llm_stages;"
        "c = cems_cli.llm.client_from_settings('http://127.0.0.1:9/v1', 'k', 'm', 1.0);"
        "assert c is not None;"
        "heavy = sorted(m for m in ('openai', 'httpx2', 'httpx') if m in sys.modules);"
        "assert not heavy, heavy;"
        "c._client();"  # building the SDK client is what loads it
        "assert 'openai' in sys.modules"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=30,
        env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"},
    )
    assert result.returncode == 0, result.stderr


# --------------------------------------------------------------------------- run_bounded


def test_run_bounded_collects_values_errors_and_stragglers() -> None:
    release = threading.Event()

    def work(x: int) -> int:
        if x == 0:
            raise ValueError("boom")
        if x == 3:
            release.wait(5)  # a straggler
        return x * 10

    try:
        outcomes, elapsed = timed(run_bounded, work, [0, 1, 2, 3], timeout=0.2, workers=4)
    finally:
        release.set()

    assert elapsed < 0.2 + SLACK
    assert isinstance(outcomes[0].error, ValueError)
    assert [o.value for o in outcomes[1:3]] == [10, 20]
    assert outcomes[3] is None


# --------------------------------------------------------------------------- the fake's embeddings


def test_fake_embeddings_through_the_sdk(fake_openai: FakeOpenAI) -> None:
    sdk = openai.OpenAI(base_url=fake_openai.base_url, api_key="k", max_retries=0, timeout=2.0)
    texts = ["postgres vacuum settings", "postgres vacuum tuning", "banana bread recipe"]

    packed = sdk.embeddings.create(model="text-embedding-3-small", input=texts)  # SDK default: base64
    plain = sdk.embeddings.create(model="e", input=texts[0], encoding_format="float", dimensions=16)

    vectors = [d.embedding for d in packed.data]
    assert [len(v) for v in vectors] == [384, 384, 384]
    assert len(plain.data[0].embedding) == 16
    assert [r.body["encoding_format"] for r in fake_openai.embedding_requests] == ["base64", "float"]

    def cos(a: list[float], b: list[float]) -> float:
        return sum(x * y for x, y in zip(a, b, strict=True))

    assert cos(vectors[0], vectors[0]) == pytest.approx(1.0, abs=1e-5)
    assert cos(vectors[0], vectors[1]) > cos(vectors[0], vectors[2])  # shared words, closer vectors
    again = sdk.embeddings.create(model="e", input=texts[:1]).data[0].embedding
    assert again == vectors[0]  # deterministic


def test_fake_embeddings_failure_modes(fake_openai: FakeOpenAI) -> None:
    sdk = openai.OpenAI(base_url=fake_openai.base_url, api_key="k", max_retries=0, timeout=TIMEOUT)
    fake_openai.mode = "error"
    with pytest.raises(openai.InternalServerError):
        sdk.embeddings.create(model="e", input="x")
    fake_openai.mode = "hang"
    with pytest.raises(openai.APITimeoutError):
        sdk.embeddings.create(model="e", input="x")

"""The LLM stages over real HTTP: what they send, what they keep of the answers, how they degrade."""
# ruff: noqa: F811 - test parameters are named after the fixtures imported below

from __future__ import annotations

import json
import logging
import math
import socket
import time
from collections.abc import Callable
from typing import Any

# Imported up front so the one-off ~0.7 s import isn't charged to the first timed call below.
import openai  # noqa: F401
import pytest

from cems_cli import llm
from cems_cli.llm import LLMClient
from cems_cli.retrieval import llm_stages as st
from tests.support.fake_ollama import FakeOllama, OllamaReply, document_of, query_of
from tests.support.fake_openai import FakeOpenAI, Reply
from tests.support.fixtures import fake_ollama, fake_openai  # noqa: F401 - pytest fixtures

TIMEOUT = 0.3
SLACK = 0.5
RERANKER = "sam860/qwen3-reranker:0.6b-Q8_0"


@pytest.fixture(autouse=True)
def fresh_degradation_log(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(llm, "_degraded", set())


@pytest.fixture
def client(fake_openai: FakeOpenAI) -> LLMClient:
    return LLMClient(fake_openai.base_url, "sk-test", "fake-model", TIMEOUT)


def sent(fake: FakeOpenAI, i: int = -1) -> tuple[str, str]:
    """(system, user) of the i-th chat request."""
    messages = fake.chat_requests[i].body["messages"]
    return messages[0]["content"], messages[1]["content"]


def _degraded_stages(caplog: pytest.LogCaptureFixture) -> set[str]:
    """The stages that logged falling back (each logs it once: llm.note_degraded)."""
    prefix = "LLM stage "
    return {
        r.getMessage().removeprefix(prefix).split(" ", 1)[0].strip("'")
        for r in caplog.records
        if r.name == "cems.llm" and r.getMessage().startswith(prefix)
    }


def timed(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[Any, float]:
    start = time.monotonic()
    result = fn(*args, **kwargs)
    return result, time.monotonic() - start


# --------------------------------------------------------------------------- understand


def test_understand_sends_prompt_and_returns_the_analysis(client: LLMClient, fake_openai: FakeOpenAI) -> None:
    analysis = {
        "intent": "troubleshooting",
        "complexity": "moderate",
        "domains": ["postgres"],
        "entities": ["pgvector"],
        "temporal": False,
        "preference": False,
        "aggregation": False,
        "route": "hybrid",
    }
    fake_openai.queue(json.dumps(analysis))

    assert st.llm_understand(client, "  why does pgvector HNSW build fail?  ") == analysis
    system, user = sent(fake_openai)
    assert system == st.UNDERSTAND_SYSTEM
    assert user == "Query: why does pgvector HNSW build fail?"


def test_understand_clips_huge_queries(client: LLMClient, fake_openai: FakeOpenAI) -> None:
    fake_openai.queue('{"intent": "recall"}')
    st.llm_understand(client, "x" * 50_000)
    _, user = sent(fake_openai)
    assert len(user) == len("Query: ") + st.MAX_QUERY_CHARS


@pytest.mark.parametrize("answer", ["{}", "[1, 2]", Reply.error(500), Reply.garbage()])
def test_understand_degrades_to_none(client: LLMClient, fake_openai: FakeOpenAI, answer: Any) -> None:
    fake_openai.queue(answer)
    assert st.llm_understand(client, "q") is None


# --------------------------------------------------------------------------- synthesis


def test_synthesis_filters_the_answer(client: LLMClient, fake_openai: FakeOpenAI) -> None:
    fake_openai.queue(
        json.dumps(
            {
                "queries": [
                    "Database Schema?",  # the query itself, reworded only by case/punctuation
                    "postgres table columns",
                    "  postgres   TABLE columns ",  # duplicate
                    42,
                    None,
                    "",
                    "x" * 500,  # not a search query
                    "schema migration files",
                    "sql/001_init.sql",
                    "pgvector index definition",
                    "memory_documents table",
                    "one too many",
                ]
            }
        )
    )

    queries = st.synthesize_queries(client, "database schema")

    assert queries == [
        "postgres table columns",
        "schema migration files",
        "sql/001_init.sql",
        "pgvector index definition",
        "memory_documents table",
    ]
    system, user = sent(fake_openai)
    assert system == st.SYNTH_SYSTEM_STANDARD
    assert user == "Query: database schema"


def test_synthesis_tolerates_a_renamed_key(client: LLMClient, fake_openai: FakeOpenAI) -> None:
    fake_openai.queue('{"search_terms": ["first camping trip date", "camping trip timeline"]}')
    assert st.synthesize_queries(client, "which camping trip was first?", kind="temporal") == [
        "first camping trip date",
        "camping trip timeline",
    ]
    assert sent(fake_openai)[0] == st.SYNTH_SYSTEM_TEMPORAL


def test_preference_synthesis_is_grounded_in_the_profile(client: LLMClient, fake_openai: FakeOpenAI) -> None:
    fake_openai.queue('{"queries": ["I use Adobe Premiere Pro", "my favourite video editor"]}')
    profile = [f"I use tool{i}" for i in range(8)] + ["", "I use tool0"]

    queries = st.synthesize_queries(
        client, "recommend video editing resources", kind="preference", profile=profile
    )

    assert queries == ["I use Adobe Premiere Pro", "my favourite video editor"]
    system, user = sent(fake_openai)
    assert system == st.SYNTH_SYSTEM_PREFERENCE
    assert user == (
        "Known statements by the user:\n"
        "- I use tool0\n- I use tool1\n- I use tool2\n- I use tool3\n- I use tool4\n\n"
        "Query: recommend video editing resources"
    )


def test_profile_is_ignored_outside_preference_queries(client: LLMClient, fake_openai: FakeOpenAI) -> None:
    fake_openai.queue('{"queries": ["a b"]}')
    st.synthesize_queries(client, "q", profile=["I use vim"])
    assert sent(fake_openai)[1] == "Query: q"


@pytest.mark.parametrize(
    "answer", ['{"queries": "not a list"}', '{"queries": [1, 2]}', Reply.error(500), Reply.invalid_json()]
)
def test_synthesis_degrades_to_empty(client: LLMClient, fake_openai: FakeOpenAI, answer: Any) -> None:
    fake_openai.queue(answer)
    assert st.synthesize_queries(client, "q") == []


# --------------------------------------------------------------------------- decomposition


def test_decompose_returns_sub_questions(client: LLMClient, fake_openai: FakeOpenAI) -> None:
    fake_openai.queue('{"sub_questions": ["What is our vacation policy?", "What is our sick leave policy?"]}')
    assert st.decompose(client, "How do vacation and sick leave policies differ?") == [
        "What is our vacation policy?",
        "What is our sick leave policy?",
    ]
    system, user = sent(fake_openai)
    assert system == st.DECOMPOSE_SYSTEM
    assert user == "Question: How do vacation and sick leave policies differ?"


@pytest.mark.parametrize(
    "answer", ['{"sub_questions": []}', '{"sub_questions": ["What is X?"]}', "garbage", Reply.error(500)]
)
def test_decompose_single_or_failed_is_empty(client: LLMClient, fake_openai: FakeOpenAI, answer: Any) -> None:
    fake_openai.queue(answer)
    assert st.decompose(client, "What is X?") == []


# --------------------------------------------------------------------------- HyDE


@pytest.mark.parametrize(
    ("kind", "system"),
    [
        ("standard", st.HYDE_SYSTEM_STANDARD),
        ("temporal", st.HYDE_SYSTEM_TEMPORAL),
        ("preference", st.HYDE_SYSTEM_PREFERENCE),
    ],
)
def test_hyde_prompt_per_kind(client: LLMClient, fake_openai: FakeOpenAI, kind: str, system: str) -> None:
    note = "To deploy the app I run scripts/deploy.sh,\n which builds with Docker Compose and rsyncs."
    fake_openai.queue(json.dumps({"memory": note}))

    assert st.hyde(client, "How do I deploy this app?", kind=kind) == " ".join(note.split())  # type: ignore[arg-type]
    assert sent(fake_openai) == (system, "Query: How do I deploy this app?")


def test_preference_hyde_uses_the_profile(client: LLMClient, fake_openai: FakeOpenAI) -> None:
    fake_openai.queue('{"memory": "I really enjoy gin-based cocktails, especially with elderflower."}')
    st.hyde(client, "What cocktails might I enjoy?", kind="preference", profile=["I like botanical drinks"])
    assert sent(fake_openai)[1] == (
        "Known statements by the user:\n- I like botanical drinks\n\nQuery: What cocktails might I enjoy?"
    )


def test_hyde_accepts_another_key_but_not_another_type(client: LLMClient, fake_openai: FakeOpenAI) -> None:
    fake_openai.queue('{"note": "On March 15th 2024 I started using TypeScript for the backend API."}')
    assert st.hyde(client, "When did I start TypeScript?", kind="temporal") == (
        "On March 15th 2024 I started using TypeScript for the backend API."
    )
    fake_openai.queue('{"memory": ["a", "list"]}')
    assert st.hyde(client, "When did I start TypeScript?") is None


@pytest.mark.parametrize("answer", ['{"memory": "ok"}', '{"memory": "deploy this app?"}', Reply.hang()])
def test_hyde_degrades_to_none(client: LLMClient, fake_openai: FakeOpenAI, answer: Any) -> None:
    fake_openai.queue(answer)
    result, elapsed = timed(st.hyde, client, "Deploy this app?")
    assert result is None
    assert elapsed < TIMEOUT + SLACK


# --------------------------------------------------------------------------- LLM rerank

DOCS = [
    ("doc-ssh", "SSH to Hetzner server for deployment"),
    ("doc-datecs", "Fixed printer driver issue by installing\ndatecs SDK"),
    ("doc-rdp", "Windows RDP allows remote printer access via redirection"),
]


def test_rerank_is_one_numbered_call_normalised_to_unit(client: LLMClient, fake_openai: FakeOpenAI) -> None:
    fake_openai.queue('{"scores": {"1": 0, "2": 9, "3": 6}}')

    scores = st.llm_rerank(client, "connect datecs printer to Windows remotely", DOCS)

    assert scores == {"doc-ssh": 0.0, "doc-datecs": 0.9, "doc-rdp": 0.6}
    assert len(fake_openai.chat_requests) == 1
    system, user = sent(fake_openai)
    assert system == st.RERANK_SYSTEM
    assert user == (
        "Query: connect datecs printer to Windows remotely\n\nMemories:\n"
        "[1] SSH to Hetzner server for deployment\n"
        "[2] Fixed printer driver issue by installing datecs SDK\n"
        "[3] Windows RDP allows remote printer access via redirection"
    )


def test_rerank_forgotten_ids_get_zero_and_junk_is_skipped(
    client: LLMClient, fake_openai: FakeOpenAI
) -> None:
    fake_openai.queue('{"scores": {"[2]": "8", "7": 10, "x": 5, "3": true, "1": 14}}')
    assert st.llm_rerank(client, "q", DOCS) == {"doc-ssh": 1.0, "doc-datecs": 0.8, "doc-rdp": 0.0}


def test_rerank_reads_unit_scale_and_list_form(client: LLMClient, fake_openai: FakeOpenAI) -> None:
    fake_openai.queue('{"scores": [{"id": 1, "score": 0.25}, {"id": 3, "score": 0.9}]}')
    assert st.llm_rerank(client, "q", DOCS) == {"doc-ssh": 0.25, "doc-datecs": 0.0, "doc-rdp": 0.9}


@pytest.mark.parametrize(
    "answer", ['{"scores": {}}', '{"scores": "all good"}', '{"ranking": [2, 3]}', Reply.error(500)]
)
def test_rerank_without_usable_scores_is_none(
    client: LLMClient, fake_openai: FakeOpenAI, answer: Any
) -> None:
    fake_openai.queue(answer)
    assert st.llm_rerank(client, "q", DOCS) is None


def test_rerank_of_nothing_sends_nothing(client: LLMClient, fake_openai: FakeOpenAI) -> None:
    assert st.llm_rerank(client, "q", []) is None
    assert fake_openai.chat_requests == []


# --------------------------------------------------------------------------- no client, dead endpoint


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("network used although no LLM is configured")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


@pytest.mark.parametrize("client_value", [None, LLMClient(None, None, "m")])
def test_no_client_skips_every_stage_without_network(
    no_network: None, client_value: LLMClient | None
) -> None:
    assert st.llm_understand(client_value, "q") is None
    assert st.synthesize_queries(client_value, "q") == []
    assert st.decompose(client_value, "q") == []
    assert st.hyde(client_value, "q") is None
    assert st.llm_rerank(client_value, "q", DOCS) is None
    assert st.ollama_rerank(None, RERANKER, "q", DOCS, TIMEOUT) is None
    assert st.ollama_rerank("http://127.0.0.1:9", "", "q", DOCS, TIMEOUT) is None
    assert st.ollama_rerank("file:///etc/hostname", RERANKER, "q", DOCS, TIMEOUT) is None


def test_every_stage_against_a_hung_endpoint_fits_the_budget(
    client: LLMClient, fake_openai: FakeOpenAI, caplog: pytest.LogCaptureFixture
) -> None:
    fake_openai.mode = "hang"
    caplog.set_level(logging.DEBUG, logger="cems.llm")
    stages: list[Callable[[], Any]] = [
        lambda: st.llm_understand(client, "q"),
        lambda: st.synthesize_queries(client, "q"),
        lambda: st.decompose(client, "q"),
        lambda: st.hyde(client, "q"),
        lambda: st.llm_rerank(client, "q", DOCS),
    ]
    start = time.monotonic()
    results = [stage() for stage in stages]
    elapsed = time.monotonic() - start

    assert results == [None, [], [], None, None]
    assert elapsed < TIMEOUT * len(stages) + 1.0  # the contract: LLM_TIMEOUT × stages + 1 s
    assert _degraded_stages(caplog) == {"understand", "synthesis", "decompose", "hyde", "rerank"}


# --------------------------------------------------------------------------- Ollama (Qwen3-Reranker)


def test_ollama_request_uses_the_qwen3_reranker_format(fake_ollama: FakeOllama) -> None:
    fake_ollama.default_reply = "yes"
    st.ollama_rerank(fake_ollama.base_url + "/", RERANKER, "datecs printer", DOCS[1:2], TIMEOUT)

    [request] = fake_ollama.generate_requests
    body = request.body
    assert body["model"] == RERANKER
    assert body["raw"] is True and body["stream"] is False
    assert body["options"]["temperature"] == 0
    assert body["logprobs"] is True
    assert body["prompt"] == (
        "<|im_start|>system\n"
        "Judge whether the Document meets the requirements based on the Query and the Instruct provided. "
        'Note that the answer can only be "yes" or "no".<|im_end|>\n'
        "<|im_start|>user\n"
        f"<Instruct>: {st.QWEN3_RERANK_INSTRUCT}\n"
        "<Query>: datecs printer\n"
        "<Document>: Fixed printer driver issue by installing datecs SDK<|im_end|>\n"
        "<|im_start|>assistant\n<think>\n\n</think>\n\n"
    )
    assert query_of(body) == "datecs printer"


def test_ollama_yes_no_answers_score_one_and_zero(fake_ollama: FakeOllama) -> None:
    fake_ollama.responder = lambda body: " Yes." if "printer" in document_of(body) else "no"

    scores = st.ollama_rerank(fake_ollama.base_url, RERANKER, "printer", DOCS, TIMEOUT)

    assert scores == {"doc-ssh": 0.0, "doc-datecs": 1.0, "doc-rdp": 1.0}
    assert len(fake_ollama.generate_requests) == 3  # one request per document


def test_ollama_logprobs_give_p_yes(fake_ollama: FakeOllama) -> None:
    def reply(body: dict[str, Any]) -> OllamaReply:
        if "datecs" in document_of(body):
            return OllamaReply("yes", {"yes": -0.2, "no": -1.8})
        if "RDP" in document_of(body):
            return OllamaReply("no", {"no": -0.5})  # only the chosen token's logprob
        return OllamaReply("no", {"no": -0.01, "yes": -4.6})

    fake_ollama.responder = reply
    scores = st.ollama_rerank(fake_ollama.base_url, RERANKER, "printer", DOCS, TIMEOUT)

    assert scores is not None
    assert scores["doc-datecs"] == pytest.approx(1 / (1 + math.exp(-1.6)))
    assert scores["doc-rdp"] == pytest.approx(1 - math.exp(-0.5))
    assert scores["doc-ssh"] == pytest.approx(1 / (1 + math.exp(4.59)))


def test_ollama_requests_run_concurrently(fake_ollama: FakeOllama) -> None:
    fake_ollama.latency = 0.1
    fake_ollama.default_reply = "yes"
    docs = [(f"d{i}", f"doc {i}") for i in range(8)]

    scores, elapsed = timed(st.ollama_rerank, fake_ollama.base_url, RERANKER, "q", docs, 2.0, workers=4)

    assert scores == {f"d{i}": 1.0 for i in range(8)}
    assert elapsed < 0.6  # 8 × 0.1 s one after another would be 0.8 s


def test_ollama_straggler_gets_neutral_score_within_timeout(fake_ollama: FakeOllama) -> None:
    fake_ollama.responder = lambda body: Reply.hang() if "RDP" in document_of(body) else "yes"

    scores, elapsed = timed(st.ollama_rerank, fake_ollama.base_url, RERANKER, "q", DOCS, TIMEOUT)

    assert scores == {"doc-ssh": 1.0, "doc-datecs": 1.0, "doc-rdp": st.NEUTRAL_RERANK_SCORE}
    assert elapsed < TIMEOUT + SLACK


@pytest.mark.parametrize("mode", ["hang", "error", "garbage"])
def test_ollama_dead_endpoint_is_none_within_timeout(
    fake_ollama: FakeOllama, mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    fake_ollama.mode = mode  # type: ignore[assignment]
    caplog.set_level(logging.DEBUG, logger="cems.llm")

    scores, elapsed = timed(st.ollama_rerank, fake_ollama.base_url, RERANKER, "q", DOCS, TIMEOUT)

    assert scores is None
    assert elapsed < TIMEOUT + SLACK
    assert "ollama_rerank" in _degraded_stages(caplog)


def test_ollama_unknown_model_or_odd_answers_is_none(fake_ollama: FakeOllama) -> None:
    fake_ollama.models = (RERANKER,)
    assert st.ollama_rerank(fake_ollama.base_url, "not-pulled", "q", DOCS, TIMEOUT) is None
    fake_ollama.default_reply = "maybe"
    assert st.ollama_rerank(fake_ollama.base_url, RERANKER, "q", DOCS, TIMEOUT) is None


def test_ollama_chat_answers_are_read_too() -> None:
    # p_yes also reads /api/chat answers (message.content), for servers set up with the chat template.
    assert st.p_yes({"message": {"role": "assistant", "content": "yes"}}) == 1.0
    assert st.p_yes({"message": {"content": "No"}}) == 0.0
    assert (
        st.p_yes({"response": "\n", "logprobs": [{"token": "\n"}, {"token": "yes", "logprob": 0.0}]}) == 1.0
    )
    assert st.p_yes({"response": "perhaps"}) is None
    assert st.p_yes({"logprobs": [{"token": "yes", "logprob": -1e6}], "response": "yes"}) == 0.0


def test_fake_ollama_chat_endpoint_round_trip(fake_ollama: FakeOllama) -> None:
    fake_ollama.queue(OllamaReply("yes", {"yes": -0.1, "no": -2.3}))
    body = {"model": RERANKER, "messages": [{"role": "user", "content": "<Document>: x"}], "logprobs": True}

    answer = st._post_json(fake_ollama.base_url + "/api/chat", body, TIMEOUT)

    assert answer["message"]["content"] == "yes"
    assert st.p_yes(answer) == pytest.approx(1 / (1 + math.exp(-2.2)))
    assert document_of(fake_ollama.chat_requests[0].body) == "x"

"""A local Ollama-compatible HTTP server for reranker tests: ``/api/generate``, ``/api/chat``, ``/api/tags``.

    with FakeOllama() as fake:
        fake.responder = lambda body: OllamaReply("yes", {"yes": -0.1, "no": -2.4})
        ollama_rerank(fake.base_url, "qwen3-reranker", "query", docs, timeout=0.3)

Requests for different documents arrive concurrently, so a ``responder`` keyed on the document
(``document_of(body)``) is the robust way to script answers; ``queue`` serves in arrival order.
Log-probabilities are returned only when the request asked for them (``"logprobs": true``) and the
reply carries some, like a real server.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tests.support.fake_openai import Reply, ScriptedServer, json_response

_DOCUMENT = re.compile(r"<Document>:\s*(.*?)(?:<\|im_end\|>|$)", re.S)
_QUERY = re.compile(r"<Query>:\s*(.*?)\n", re.S)


@dataclass(frozen=True)
class OllamaReply:
    """A verdict, with optional log-probabilities of candidate first tokens (token → logprob)."""

    text: str
    top_logprobs: dict[str, float] | None = None


OllamaAnswer = str | OllamaReply | Reply


def prompt_of(body: dict[str, Any]) -> str:
    """The prompt text of a generate request, or the joined messages of a chat request."""
    if isinstance(body.get("prompt"), str):
        return body["prompt"]
    messages = body.get("messages") or []
    return "\n".join(str(m.get("content", "")) for m in messages if isinstance(m, dict))


def document_of(body: dict[str, Any]) -> str:
    """The ``<Document>:`` part of a Qwen3-Reranker prompt ('' if absent)."""
    match = _DOCUMENT.search(prompt_of(body))
    return match.group(1).strip() if match else ""


def query_of(body: dict[str, Any]) -> str:
    match = _QUERY.search(prompt_of(body))
    return match.group(1).strip() if match else ""


class FakeOllama(ScriptedServer):
    """``mode``: ``hang`` (never answer), ``error`` (HTTP ``status``), ``garbage`` (HTML body)."""

    def __init__(self, *, models: tuple[str, ...] | None = None) -> None:
        super().__init__()
        # None: every model name is "pulled"; a tuple: others get Ollama's 404 "model not found".
        self.models = models
        self.responder: Callable[[dict[str, Any]], OllamaAnswer] | None = None
        self.default_reply: OllamaAnswer = "no"

    @property
    def base_url(self) -> str:
        """What ``CEMS_OLLAMA_URL`` would hold."""
        return self.root_url

    @property
    def generate_requests(self) -> list[Any]:
        return self.requests_to("/api/generate")

    @property
    def chat_requests(self) -> list[Any]:
        return self.requests_to("/api/chat")

    def reset(self) -> None:
        super().reset()
        self.responder = None

    def route(self, method: str, path: str, body: Any) -> tuple[int, str | bytes, str] | Reply:
        if method == "GET" and path == "/":
            return 200, "Ollama is running", "text/plain"
        if method == "GET" and path == "/api/tags":
            return json_response({"models": [{"name": m, "model": m} for m in self.models or ()]})
        if method == "POST" and path in ("/api/generate", "/api/chat"):
            if not isinstance(body, dict):
                return json_response({"error": "invalid request body"}, status=400)
            if self.models is not None and body.get("model") not in self.models:
                return json_response({"error": f"model '{body.get('model')}' not found"}, status=404)
            return self._generate(path, body)
        return json_response({"error": f"no route {method} {path}"}, status=404)

    def _answer_for(self, body: dict[str, Any]) -> OllamaAnswer:
        forced = self._mode_reply()
        if forced is not None:
            return forced
        scripted = self._next_scripted()
        if scripted is not None:
            return scripted
        if self.responder is not None:
            return self.responder(body)
        return self.default_reply

    def _generate(self, path: str, body: dict[str, Any]) -> tuple[int, str | bytes, str] | Reply:
        answer = self._answer_for(body)
        if isinstance(answer, Reply):
            if answer.kind != "ok":
                return answer
            answer = answer.content
        reply = answer if isinstance(answer, OllamaReply) else OllamaReply(answer)
        payload: dict[str, Any] = {
            "model": body["model"],
            "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "done": True,
            "done_reason": "stop",
            "eval_count": 1,
        }
        if path == "/api/chat":
            payload["message"] = {"role": "assistant", "content": reply.text}
        else:
            payload["response"] = reply.text
        if body.get("logprobs") and reply.top_logprobs:
            chosen = reply.text.strip().split()[0] if reply.text.strip() else reply.text
            top = sorted(reply.top_logprobs.items(), key=lambda kv: kv[1], reverse=True)
            top = top[: int(body.get("top_logprobs") or len(top))]
            payload["logprobs"] = [
                {
                    "token": chosen,
                    "logprob": reply.top_logprobs.get(chosen, top[0][1]),
                    "top_logprobs": [{"token": token, "logprob": lp} for token, lp in top],
                }
            ]
        return json_response(payload)
